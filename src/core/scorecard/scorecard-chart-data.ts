import { CATEGORIES } from "../probe-check.js";
import type { Rate } from "../wilson.js";
import { VERDICT_ORDER, type AgentScore, type Scorecard } from "./scorecard.js";

/** Colours per verdict and per probe category, shared by the charts and the tables' swatches. */
export const VERDICT_COLOUR: Record<string, string> = { resolved: "#2da44e", "probe-rejected": "#d4a72c", "official-failed": "#cf222e", error: "#8c959f" };
export const CATEGORY_COLOUR: Record<string, string> = {
  structure: "#8250df",
  state: "#bf3989",
  functional: "#0969da",
  memory: "#1a7f37",
  time: "#bc4c00",
  traffic: "#57606a",
};
const AGENT_COLOURS = ["#0969da", "#cf222e", "#2da44e", "#8250df", "#bc4c00", "#bf3989", "#1b7c83", "#57606a", "#d4a72c", "#6639ba"];

/** Weekly charts show the most recent weeks only; the tables keep them all. */
export const TREND_WEEKS = 26;

const pct = (x: number | null) => (x === null ? null : Number((100 * x).toFixed(1)));

/** An interval chart's series: agents with at least MIN_RATED trials (fewer are not drawn as rates). */
function intervals(agents: readonly AgentScore[], pick: (a: AgentScore) => Rate) {
  const shown = agents.filter((a) => !pick(a).fewerThanMin);
  return {
    labels: shown.map((a) => a.agent),
    ranges: shown.map((a) => [pct(pick(a).low), pct(pick(a).high)] as [number, number]),
    points: shown.map((a) => pct(pick(a).rate)),
    counts: shown.map((a) => [pick(a).k, pick(a).n] as [number, number]),
    omitted: agents.filter((a) => pick(a).fewerThanMin && pick(a).n > 0).map((a) => `${a.agent} (${pick(a).k}/${pick(a).n})`),
  };
}

/**
 * What the page's script draws, as plain data (no code): the resolved-rate ranking and the
 * probe-rejection rate with their 95% intervals, failed probe categories stacked per agent, and
 * weekly trends (resolved rate where a week has at least 5 judged, evaluations per week).
 */
export function chartData(card: Scorecard) {
  const weeks = card.keys.week.slice(-TREND_WEEKS);
  const agents = card.agents;
  return {
    ranking: intervals(agents, (a) => a.figures.resolved),
    probeRejection: intervals(agents, (a) => a.figures.probeRejection),
    categories: {
      labels: agents.map((a) => a.agent),
      datasets: CATEGORIES.map((c) => ({ label: c, backgroundColor: CATEGORY_COLOUR[c], data: agents.map((a) => a.figures.failedCategories[c]) })),
    },
    verdicts: {
      labels: agents.map((a) => a.agent),
      datasets: VERDICT_ORDER.map((v) => ({ label: v, backgroundColor: VERDICT_COLOUR[v], data: agents.map((a) => a.figures.verdicts[v]) })),
    },
    weekly: {
      labels: weeks,
      resolved: agents.map((a, i) => {
        const byWeek = new Map(a.by.week.map((s) => [s.key, s.figures.resolved]));
        return {
          label: a.agent,
          borderColor: AGENT_COLOURS[i % AGENT_COLOURS.length],
          backgroundColor: AGENT_COLOURS[i % AGENT_COLOURS.length],
          data: weeks.map((w) => {
            const r = byWeek.get(w);
            return r && !r.fewerThanMin ? pct(r.rate) : null;
          }),
        };
      }),
      evaluations: agents.map((a, i) => {
        const byWeek = new Map(a.by.week.map((s) => [s.key, s.figures.evaluations]));
        return { label: a.agent, backgroundColor: AGENT_COLOURS[i % AGENT_COLOURS.length], data: weeks.map((w) => byWeek.get(w) ?? 0) };
      }),
    },
  };
}
export type ChartData = ReturnType<typeof chartData>;
