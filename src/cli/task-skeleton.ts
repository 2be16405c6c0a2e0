import { randomBytes } from "node:crypto";
import { stringify } from "yaml";
import type { TaskSpecInput } from "../core/task-spec.js";
import { cleanPrDescription } from "../engine/import/pr-description.js";
import type { PrImport } from "../engine/import/pr-import.js";
import type { RecordedRepo } from "../engine/import/repo-url.js";

/** Marks text `task import` wrote for the author to finish; `probegate validate` refuses a task that still holds it. */
export const SKELETON_MARK = "PROBEGATE-SKELETON";

/** Says that a task's official tests are pass-to-pass only; `probegate validate` reads it from import.yml. */
export const PASS_TO_PASS_ONLY = "pass-to-pass only: no test fails before the change; the official tests check that nothing breaks, and the hidden probes carry the requirement";

/** task.yml of an imported task, with the change's provenance as a comment on top. */
export function taskYaml(spec: TaskSpecInput, imp: PrImport, repo: RecordedRepo): string {
  const c = imp.classification;
  const head = [
    `# Imported by probegate task import from ${repo.url ?? "a local clone with no known URL (see import.yml)"}`,
    `#   base ${imp.baseSha}  head ${imp.headSha}  "${imp.subject}"`,
    `#   ${c.failToPass.length} fail-to-pass and ${c.passToPass.length} pass-to-pass tests (import.yml lists them)`,
    ...(c.failToPass.length ? [] : [`#   official tests: ${PASS_TO_PASS_ONLY}`]),
  ];
  return `${head.join("\n")}\n${stringify(spec, { lineWidth: 0 })}`;
}

/** import.yml: where the task came from and which test is which, for the author and for re-imports. */
export function importRecord(imp: PrImport, repo: RecordedRepo, snapshot: boolean): string {
  return stringify(
    {
      repo: repo.url,
      repo_from: repo.source,
      ...(repo.warning ? { repo_warning: repo.warning } : {}),
      base: imp.baseSha,
      head: imp.headSha,
      subject: imp.subject,
      sources: imp.sources,
      tests: imp.tests,
      base_as: snapshot ? `pruned snapshot of ${imp.snapshot.length} of ${imp.baseFileCount} files (a submission patch may edit only these; --base-as git gates real PRs)` : "git ref, with the PR's test files as overlay",
      official: imp.classification.failToPass.length ? "fail-to-pass and pass-to-pass" : PASS_TO_PASS_ONLY,
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

${cleanPrDescription(imp.message, imp.prTemplate) || "(the commit message has no body)"}

## What to change

The change touches ${imp.sources.map((s) => `\`${s}\``).join(", ")}.

State here, in the words of the requirement and without the solution, what the change must do,
including what the official tests do not check, and every name the hidden probes call (list those
names in task.yml \`interfaces:\`; \`probegate validate\` checks each appears here).

## Tests

${testsParagraph(imp)}
`;
}

function testsParagraph(imp: PrImport): string {
  const c = imp.classification;
  const files = imp.tests.length > 8 ? `${imp.tests.length} test files (import.yml lists them)` : imp.tests.map((t) => `\`${t}\``).join(", ");
  if (c.failToPass.length === 0) {
    return `The official tests are ${files}: ${c.passToPass.length} ${c.passToPass.length === 1 ? "passes" : "pass"} before the change and must keep passing. None fails before it
(imported with --pass-to-pass-only): state the requirement here so that the hidden probes can check it.`;
  }
  return `The official tests are ${files}: ${c.failToPass.length} fail before the change and must pass,
${c.passToPass.length} pass before and must keep passing.`;
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

/**
 * expected.yml of the two examples every import has: the merged change and no change at all. With
 * no fail-to-pass test, no change passes the official tests: the probes must reject it.
 */
export function expectedYaml(passToPassOnly = false): string {
  return stringify([
    { submission: "reference.patch", verdict: "resolved", why: "the change as merged" },
    passToPassOnly
      ? { submission: "base.patch", verdict: "probe-rejected", why: "no change: the official tests are pass-to-pass only, so the hidden probes must reject it" }
      : { submission: "base.patch", verdict: "official-failed", why: "no change: the fail-to-pass tests fail" },
  ]);
}
