import type { ProbeCheck } from "../../core/probe-outcome.js";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { dropMissing, selectTests, type SelectedTests } from "../../core/test-selection.js";
import { HarnessError } from "../errors.js";
import type { EvaluationContext } from "../evaluation-context.js";
import { weakenedTestChecks } from "../guard/weakened-tests.js";
import { changedPaths } from "../workspace.js";

/** What a repository gate adds to the official phase: the tests it selected and the guard's checks. */
export interface GateOfficial {
  changed: string[];
  selected: SelectedTests | null;
  guard: ProbeCheck[];
}

/**
 * For a repository gate: the paths the PR changes (head against the merge base), the repository
 * tests they select for `{tests}` (less those the head no longer has, named), and the weakened-test
 * guard's findings on the selected test files. Null for an assignment. A selection that comes out
 * empty is a harness error naming the task's fields: running no test would be a pass nobody earned.
 */
export async function gateOfficial(ev: EvaluationContext, python: string): Promise<GateOfficial | null> {
  const { ws, spec } = ev;
  if (!ws.prBase) return null;
  const changed = await changedPaths(ws.dir);
  let selected: SelectedTests | null = null;
  if (spec.official.select) {
    selected = dropMissing(selectTests(spec.official.select, changed), (p) => existsSync(join(ws.dir, p)));
    if (selected.tests.length === 0) {
      const gone = selected.gone.length ? ` (selected but gone from the head: ${selected.gone.join(", ")})` : "";
      throw new HarnessError(
        `no repository test is selected for this PR's ${changed.length} changed paths (${changed.slice(0, 3).join(", ")}${changed.length > 3 ? ", …" : ""})${gone}: add official.select.tests, or a fromPaths entry whose paths match, in ${ev.opts.task.file}`,
        "official",
      );
    }
  }
  const guard = await weakenedTestChecks({ baseDir: ws.prBase.dir, headDir: ws.dir, tests: spec.official.files, allow: spec.official.allowChanged, python });
  return { changed, selected, guard };
}
