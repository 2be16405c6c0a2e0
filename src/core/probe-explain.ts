import { CATEGORIES, type Category } from "./probe-check.js";

/** What each probe category checks, in words for the PR author (the probes themselves stay hidden). */
export const CATEGORY_PURPOSE: Readonly<Record<Category, string>> = {
  structure: "the shape of the code the task asks for: modules, classes, functions and their signatures",
  state: "what the code keeps between steps: sharded or per-rank state, and save → load → step matching step → step bit for bit",
  functional: "behaviour on inputs and settings the official tests do not cover",
  memory: "peak memory (GPU allocator or process RSS) against what the task's design should need",
  time: "speed against a reference implementation, timed interleaved from outside the submission",
  traffic: "bytes moved by collectives (all_reduce, all_gather, send/recv…) against the algorithm's expected amount",
};

/** A failed check as `/probegate explain` may show it: its id, category and the message it reported. */
export interface ExplainedFailure {
  probeId: string;
  category: Category;
  status: "failed" | "error";
  message: string;
}

/** One evaluation to explain: the task, its verdict (null while running) and its failed checks. */
export interface ExplainInput {
  task: string;
  headSha: string;
  state: string;
  verdict: string | null;
  failures: ReadonlyArray<ExplainedFailure>;
  /** `categories`: the reply shows the categories and counts, not the checks' ids or messages (agent PRs read this thread). */
  detail?: "full" | "categories";
}

const MESSAGE_LIMIT = 300;

/**
 * The reply to `/probegate explain`: per evaluation of the PR's head, the categories of the checks
 * that failed, what each category checks, and each failed check's id and message — the same facts
 * the check run shows, never a probe's source.
 */
export function renderExplain(evaluations: ReadonlyArray<ExplainInput>): string {
  if (evaluations.length === 0) return "probegate has not evaluated this pull request's current head, so there is nothing to explain yet.";
  const parts: string[] = [];
  for (const e of evaluations) {
    const head = `**${e.task}** at \`${e.headSha.slice(0, 7)}\``;
    if (e.verdict === null) {
      parts.push(`${head}: no result yet (the evaluation is ${e.state}).`);
      continue;
    }
    if (e.failures.length === 0) {
      parts.push(`${head}: ${e.verdict}; no hidden probe failed.`);
      continue;
    }
    const lines = [`${head}: ${e.verdict}. Hidden probes that did not pass, by category:`];
    for (const category of CATEGORIES) {
      const of = e.failures.filter((f) => f.category === category);
      if (of.length === 0) continue;
      lines.push(`- **${category}** (${of.length}) — checks ${CATEGORY_PURPOSE[category]}.`);
      if (e.detail === "categories") continue;
      for (const f of of) {
        const message = f.message.replace(/\s+/g, " ").trim();
        const short = message.length > MESSAGE_LIMIT ? `${message.slice(0, MESSAGE_LIMIT - 1)}…` : message;
        lines.push(`  - \`${f.probeId}\` ${f.status}${short ? `: ${short}` : ""}`);
      }
    }
    if (e.detail === "categories") lines.push("", "_The checks' messages are withheld on this thread (`feedback.agentDetail: categories`); maintainers read them in the evaluator run linked from the check run._");
    parts.push(lines.join("\n"));
  }
  return parts.join("\n\n");
}
