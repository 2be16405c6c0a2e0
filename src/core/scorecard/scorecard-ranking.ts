import type { AgentScore } from "./scorecard.js";

/**
 * Orders agents for a scorecard and ranks them so that no two agents whose resolved-rate intervals
 * overlap are ranked apart. Overlap is not transitive (A overlaps B, B overlaps C, A clear of C),
 * so a tier is a connected run of overlapping intervals: A, B and C share one. Only agents with at
 * least MIN_RATED (wilson.ts) judged submissions are ranked; the rest follow unranked (most evaluations first),
 * and `noAgent` (PRs without an agent) comes last. Within a tier: higher rate, then more
 * evaluations, then name. Pure; returns new objects.
 */
export function rankByInterval(agents: readonly AgentScore[], noAgent: string): AgentScore[] {
  const ranked = agents.filter((a) => a.agent !== noAgent && !a.figures.resolved.fewerThanMin);
  const unranked = agents.filter((a) => a.agent !== noAgent && a.figures.resolved.fewerThanMin);
  const none = agents.filter((a) => a.agent === noAgent);

  // Sweep by upper end, highest first: an interval joins the current tier while it reaches the
  // lowest lower end seen in that tier (the tier's union is one interval).
  const byHigh = [...ranked].sort((a, b) => (b.figures.resolved.high as number) - (a.figures.resolved.high as number));
  const tierOf = new Map<string, number>();
  let tier = 0;
  let tierLow = Infinity;
  for (const a of byHigh) {
    const r = a.figures.resolved;
    if (tier === 0 || (r.high as number) < tierLow) {
      tier += 1;
      tierLow = r.low as number;
    } else tierLow = Math.min(tierLow, r.low as number);
    tierOf.set(a.agent, tier);
  }
  const members = new Map<number, string[]>();
  for (const [name, t] of tierOf) members.set(t, [...(members.get(t) ?? []), name]);

  const within = (a: AgentScore, b: AgentScore) =>
    (b.figures.resolved.rate ?? -1) - (a.figures.resolved.rate ?? -1) || b.figures.evaluations - a.figures.evaluations || a.agent.localeCompare(b.agent);
  const rankedOut = ranked
    .map((a) => {
      const t = tierOf.get(a.agent) as number;
      return { ...a, rank: t, tiedWith: (members.get(t) ?? []).filter((n) => n !== a.agent).sort() };
    })
    .sort((a, b) => (a.rank as number) - (b.rank as number) || within(a, b));
  const rest = [...unranked].sort((a, b) => b.figures.evaluations - a.figures.evaluations || a.agent.localeCompare(b.agent)).map((a) => ({ ...a, rank: null, tiedWith: [] }));
  return [...rankedOut, ...rest, ...none.map((a) => ({ ...a, rank: null, tiedWith: [] }))];
}

