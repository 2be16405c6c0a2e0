/**
 * The per-PR evaluation budget. Each evaluation tells the PR's author which hidden checks failed,
 * so an agent that pushes again and again can learn the probes by trial: at most `perPrPerHour`
 * heads of one PR are evaluated in any rolling hour. A head beyond it is not dropped: it waits,
 * queued, and is evaluated when the window frees up (a newer push replaces it meanwhile).
 */
export const BUDGET_WINDOW_MS = 3600_000;

export type BudgetDecision = { allowed: true } | { allowed: false; nextAt: Date; used: number };

/** Whether a new head may be evaluated now, given when the PR's evaluated heads were started. */
export function decideBudget(started: ReadonlyArray<Date>, now: Date, perPrPerHour: number): BudgetDecision {
  const since = now.getTime() - BUDGET_WINDOW_MS;
  const inWindow = started
    .map((d) => d.getTime())
    .filter((t) => t > since && t <= now.getTime())
    .sort((a, b) => a - b);
  if (inWindow.length < perPrPerHour) return { allowed: true };
  // The window frees up when the oldest start that keeps it full falls out of it.
  const oldest = inWindow[inWindow.length - perPrPerHour] ?? now.getTime();
  return { allowed: false, nextAt: new Date(oldest + BUDGET_WINDOW_MS), used: inWindow.length };
}

/** The title and summary of a check run whose evaluation waits for the budget. */
export function deferredOutput(d: { nextAt: Date; used: number; limit: number }): { title: string; summary: string } {
  const at = d.nextAt.toISOString().replace(/\.\d{3}Z$/, "Z");
  return {
    title: `Waiting: next evaluation at ${at}`.slice(0, 255),
    summary: [
      `This pull request had ${d.used} head${d.used === 1 ? "" : "s"} evaluated in the last hour; the limit is ${d.limit} (\`budget.perPrPerHour\` in .github/probegate.yml).`,
      "",
      `This commit will be evaluated at **${at}**, unless a newer push replaces it first (then that one is evaluated instead). Nothing needs to be done.`,
    ].join("\n"),
  };
}
