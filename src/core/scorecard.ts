import { CATEGORIES, type Category } from "./probe-check.js";
import type { Verdict } from "./result.js";

/** The verdicts in the order a scorecard shows them: best first. */
export const VERDICT_ORDER: readonly Verdict[] = ["resolved", "probe-rejected", "official-failed", "error"];

/** Which attempts a scorecard counts (the store picks them; see `countedAttempts`). */
export type ScorecardBasis = "first-attempt" | "best-of-n" | "all";

/** Which attempts of which repositories a scorecard counts. */
export interface ScorecardFilter {
  basis: ScorecardBasis;
  owner?: string;
  repo?: string;
  /** Only (repo, PR, task) groups whose first attempt finished at or after this. */
  since?: Date;
}

const BASES: readonly ScorecardBasis[] = ["first-attempt", "best-of-n", "all"];

/**
 * A scorecard filter from text (CLI flags, a dashboard URL's query). On bad input, the field
 * (`basis`, `repo`, `since`) and what was wrong with its value. Pure.
 */
export function parseScorecardFilter(input: { basis?: string | null; repo?: string | null; since?: string | null }):
  | { ok: true; filter: ScorecardFilter }
  | { ok: false; field: "basis" | "repo" | "since"; message: string } {
  const basis = input.basis ?? "first-attempt";
  if (!BASES.includes(basis as ScorecardBasis)) return { ok: false, field: "basis", message: `'${basis}': expected ${BASES.slice(0, -1).join(", ")} or ${BASES.at(-1)}` };
  const filter: ScorecardFilter = { basis: basis as ScorecardBasis };
  if (input.repo) {
    const m = /^([A-Za-z0-9_.-]+)(?:\/([A-Za-z0-9_.-]+))?$/.exec(input.repo);
    if (!m) return { ok: false, field: "repo", message: `'${input.repo}': expected OWNER or OWNER/NAME` };
    filter.owner = m[1];
    if (m[2]) filter.repo = m[2];
  }
  if (input.since) {
    const d = /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/.test(input.since) ? new Date(input.since) : new Date(NaN);
    if (Number.isNaN(d.getTime())) return { ok: false, field: "since", message: `'${input.since}': expected a date like 2026-11-01 or 2026-11-01T12:00:00Z` };
    filter.since = d;
  }
  return { ok: true, filter };
}

/** One attempt a scorecard counts: who wrote it, which task, what it got, which probe categories failed. */
export interface CountedAttempt {
  /** The normalised agent name; null for PRs no agent was detected on. */
  agent: string | null;
  task: string;
  verdict: Verdict;
  /** Categories with at least one failed probe check in this attempt (errors excluded). */
  failedCategories: readonly Category[];
}

export type VerdictCounts = Record<Verdict, number>;

/** How one agent (or everyone) did. */
export interface AgentScore {
  agent: string;
  /** Attempts counted. */
  submissions: number;
  verdicts: VerdictCounts;
  /** resolved / judged submissions (errors judged nothing and are left out); null when none was judged. */
  resolvedRate: number | null;
  /** Submissions that passed every official test (resolved + probe-rejected). */
  passedOfficial: number;
  /**
   * Of the submissions that passed every official test, the share the hidden probes rejected:
   * what the visible tests let through. Null when none passed the official tests.
   */
  caughtRate: number | null;
  /** Per category: counted attempts with a failed probe check of that category. */
  failedCategories: Record<Category, number>;
  /** Per task: verdict counts. */
  tasks: Record<string, VerdictCounts>;
}

export interface Scorecard {
  basis: ScorecardBasis;
  /** Agents sorted by resolved rate (best first), then by name; PRs without an agent last. */
  agents: AgentScore[];
  /** Everyone together. */
  total: AgentScore;
  /** Every task seen, sorted. */
  tasks: string[];
}

/** How a scorecard names the attempts no agent was detected on. */
export const NO_AGENT = "(no agent detected)";

const zeroVerdicts = (): VerdictCounts => ({ resolved: 0, "probe-rejected": 0, "official-failed": 0, error: 0 });
const zeroCategories = (): Record<Category, number> => Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;

function score(agent: string, attempts: readonly CountedAttempt[]): AgentScore {
  const verdicts = zeroVerdicts();
  const failedCategories = zeroCategories();
  const tasks: Record<string, VerdictCounts> = {};
  for (const a of attempts) {
    verdicts[a.verdict] += 1;
    (tasks[a.task] ??= zeroVerdicts())[a.verdict] += 1;
    for (const c of new Set(a.failedCategories)) failedCategories[c] += 1;
  }
  const judged = attempts.length - verdicts.error;
  const passedOfficial = verdicts.resolved + verdicts["probe-rejected"];
  return {
    agent,
    submissions: attempts.length,
    verdicts,
    resolvedRate: judged > 0 ? verdicts.resolved / judged : null,
    passedOfficial,
    caughtRate: passedOfficial > 0 ? verdicts["probe-rejected"] / passedOfficial : null,
    failedCategories,
    tasks,
  };
}

/** Aggregates counted attempts into one scorecard: per agent, and everyone together. Pure. */
export function buildScorecard(attempts: readonly CountedAttempt[], basis: ScorecardBasis): Scorecard {
  const byAgent = new Map<string, CountedAttempt[]>();
  for (const a of attempts) {
    const name = a.agent ?? NO_AGENT;
    const list = byAgent.get(name) ?? [];
    list.push(a);
    byAgent.set(name, list);
  }
  const agents = [...byAgent].map(([name, list]) => score(name, list));
  agents.sort(
    (a, b) =>
      Number(a.agent === NO_AGENT) - Number(b.agent === NO_AGENT) ||
      (b.resolvedRate ?? -1) - (a.resolvedRate ?? -1) ||
      b.submissions - a.submissions ||
      a.agent.localeCompare(b.agent),
  );
  return { basis, agents, total: score("all agents", attempts), tasks: [...new Set(attempts.map((a) => a.task))].sort() };
}

/** A rate as a whole percentage ("–" when there is nothing to divide). */
export function percent(rate: number | null): string {
  return rate === null ? "–" : `${Math.round(rate * 100)}%`;
}

const BASIS_WORDS: Record<ScorecardBasis, string> = {
  "first-attempt": "first attempt per PR and task (what the agent delivered unaided)",
  "best-of-n": "best attempt per PR and task (after reruns and pushes)",
  all: "every finished attempt",
};

/** What a scorecard counted, in words. */
export function describeBasis(basis: ScorecardBasis): string {
  return BASIS_WORDS[basis];
}

/** The scorecard as a markdown table, one row per agent and a total row. */
export function renderScorecardMarkdown(card: Scorecard): string {
  const head = ["agent", "submissions", "resolved", "caught by probes", "official failed", "error", "resolved rate", "caught rate", "failed categories"];
  const row = (s: AgentScore, bold = false) => {
    const cats = CATEGORIES.filter((c) => s.failedCategories[c] > 0)
      .map((c) => `${c} ${s.failedCategories[c]}`)
      .join(", ");
    const cells = [s.agent, s.submissions, s.verdicts.resolved, s.verdicts["probe-rejected"], s.verdicts["official-failed"], s.verdicts.error, percent(s.resolvedRate), percent(s.caughtRate), cats || "–"].map(String);
    return `| ${(bold ? cells.map((c) => `**${c.replace(/\|/g, "\\|")}**`) : cells.map((c) => c.replace(/\|/g, "\\|"))).join(" | ")} |`;
  };
  return [
    `Counted: ${describeBasis(card.basis)}. "Caught rate": of the submissions that passed every official test, the share the hidden probes rejected.`,
    "",
    `| ${head.join(" | ")} |`,
    `|---|${head.slice(1).map(() => "---:").join("|")}|`,
    ...card.agents.map((a) => row(a)),
    row(card.total, true),
  ].join("\n");
}
