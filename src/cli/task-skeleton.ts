import { randomBytes } from "node:crypto";
import { stringify } from "yaml";
import type { TaskSpecInput } from "../core/task-spec.js";
import type { PrImport } from "../engine/pr-import.js";

/** Marks text `task import` wrote for the author to finish; `probegate validate` refuses a task that still holds it. */
export const SKELETON_MARK = "PROBEGATE-SKELETON";

/** task.yml of an imported task, with the change's provenance as a comment on top. */
export function taskYaml(spec: TaskSpecInput, imp: PrImport, repo: string): string {
  const head = [
    `# Imported by probegate task import from ${repo}`,
    `#   base ${imp.baseSha}  head ${imp.headSha}  "${imp.subject}"`,
    `#   ${imp.classification.failToPass.length} fail-to-pass and ${imp.classification.passToPass.length} pass-to-pass tests (import.yml lists them)`,
  ];
  return `${head.join("\n")}\n${stringify(spec, { lineWidth: 0 })}`;
}

/** import.yml: where the task came from and which test is which, for the author and for re-imports. */
export function importRecord(imp: PrImport, repo: string, snapshot: boolean): string {
  return stringify(
    {
      repo,
      base: imp.baseSha,
      head: imp.headSha,
      subject: imp.subject,
      sources: imp.sources,
      tests: imp.tests,
      base_as: snapshot ? `pruned snapshot of ${imp.snapshot.length} files` : "git ref, with the PR's test files as overlay",
      fail_to_pass: imp.classification.failToPass,
      pass_to_pass: imp.classification.passToPass,
      left_out: imp.classification.leftOut,
    },
    { lineWidth: 0 },
  );
}

/** A prompt to finish: the PR's own words, the files it changes, and what the author must add. */
export function promptSkeleton(imp: PrImport): string {
  return `<!-- ${SKELETON_MARK}: written by probegate task import. Rewrite it as the request an agent gets, then delete this line. -->
# ${imp.subject}

${imp.message.trim() || "(the commit message has no body)"}

## What to change

The change touches ${imp.sources.map((s) => `\`${s}\``).join(", ")}.

State here, in the words of the requirement and without the solution, what the change must do,
including what the official tests do not check, and every name the hidden probes call (list those
names in task.yml \`interfaces:\`; \`probegate validate\` checks each appears here).

## Tests

The official tests are ${imp.tests.map((t) => `\`${t}\``).join(", ")}: ${imp.classification.failToPass.length} fail before the change and must pass,
${imp.classification.passToPass.length} pass before and must keep passing.
`;
}

/** A probe that reports `error` until written: an unfinished task never resolves a submission. */
export function probeSkeleton(id: string): string {
  const canary = `PROBEGATE-CANARY-${randomBytes(4).toString("hex")}`;
  return `"""Hidden probe of ${id}. ${SKELETON_MARK}: written by probegate task import; replace it.

A probe checks what the requirement states and the official tests leave unchecked (docs/task-format.md):
import the submission from $PROBEGATE_WORKSPACE, measure, and emit one check per finding.
"""
# ${canary}
from probegate_probe import emit

emit("not-written", "functional", "error", "this task's hidden probe is still the skeleton probegate task import wrote")
`;
}

/** expected.yml of the two examples every import has: the merged change and no change at all. */
export function expectedYaml(): string {
  return stringify([
    { submission: "reference.patch", verdict: "resolved", why: "the change as merged" },
    { submission: "base.patch", verdict: "official-failed", why: "no change: the fail-to-pass tests fail" },
  ]);
}
