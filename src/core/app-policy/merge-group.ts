import type { CheckRunOutput } from "../check-run-render.js";

/** One commit of a merge group (base..head), with the tree it holds. */
export interface GroupCommit {
  sha: string;
  tree: string;
}

/** A PR head whose gate passed, with its tree. */
export interface PassedGate {
  pr: number;
  headSha: string;
  tree: string;
}

/**
 * Whether a merge group needs no evaluation of its own. A merge queue builds one commit per PR on
 * top of the last (base → PR A → PR B → head). When every one of those commits holds exactly the
 * tree of a PR head whose gate passed, the group merges nothing that was not judged as it is;
 * otherwise (a PR that was behind its base, so the queue's merge made new code) the head is
 * evaluated.
 */
export type MergeGroupDecision =
  | { kind: "pass"; matched: Array<{ commit: string; gate: PassedGate }> }
  | { kind: "evaluate"; unmatched: string[] };

/** Matches each group commit's tree to a passed gate. */
export function decideMergeGroup(commits: ReadonlyArray<GroupCommit>, passed: ReadonlyArray<PassedGate>): MergeGroupDecision {
  if (commits.length === 0) return { kind: "evaluate", unmatched: [] };
  const byTree = new Map(passed.map((g) => [g.tree, g]));
  const matched: Array<{ commit: string; gate: PassedGate }> = [];
  const unmatched: string[] = [];
  for (const c of commits) {
    const gate = byTree.get(c.tree);
    if (gate) matched.push({ commit: c.sha, gate });
    else unmatched.push(c.sha);
  }
  return unmatched.length === 0 ? { kind: "pass", matched } : { kind: "evaluate", unmatched };
}

/** The gate of a merge group that passes on its PRs' gates. */
export function mergeGroupPassedOutput(matched: ReadonlyArray<{ commit: string; gate: PassedGate }>): CheckRunOutput {
  return {
    conclusion: "success",
    title: `Every PR of the merge group passed its gate at the same tree`,
    summary: [
      "Each commit of this merge group holds exactly the tree of a pull-request head whose `probegate / gate` passed, so nothing new is merged:",
      "",
      "| merge-group commit | PR | gated head | tree |",
      "|---|---|---|---|",
      ...matched.map((m) => `| \`${m.commit.slice(0, 7)}\` | #${m.gate.pr} | \`${m.gate.headSha.slice(0, 7)}\` | \`${m.gate.tree.slice(0, 7)}\` |`),
    ].join("\n"),
    annotations: [],
  };
}

/** The PR number a merge queue's branch names: `gh-readonly-queue/<base>/pr-<number>-<sha>`. */
export function mergeQueuePr(headRef: string): number | null {
  const m = /\/pr-(\d+)-[0-9a-f]{7,40}$/.exec(headRef);
  return m ? Number(m[1]) : null;
}
