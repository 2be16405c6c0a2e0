import { resolve } from "node:path";
import { execa } from "execa";
import { GuardReportSchema, guardChecks } from "../../core/guard/weakened-tests.js";
import type { ProbeCheck } from "../../core/probe-outcome.js";
import { HarnessError } from "../errors.js";
import { PACKAGE_ROOT } from "../package-paths.js";

/** Where the guard's Python package lives (python/probegate_guard), in the source tree and beside dist/ alike. */
export const GUARD_PATH = resolve(PACKAGE_ROOT, "python");

export interface GuardOptions {
  /** The PR's base tree and head tree (read only: the guard parses, it never imports or runs them). */
  baseDir: string;
  headDir: string;
  /** Globs of the selected test files, relative to both trees. */
  tests: readonly string[];
  /** Test ids, file globs or `kind:test-id` the task allows to change; reported as allowed. */
  allow?: readonly string[];
  /** Any Python 3.9+ (the guard needs only the standard library). */
  python: string;
  timeoutS?: number;
}

/**
 * Compares the head's tests with the base's (deleted, skipped, deselected, narrowed, weakened) and
 * returns the findings as `structure` checks. The guard only parses files, but the head's are
 * hostile: it runs with a time limit and bounded output, and its own failure is a harness error,
 * never a pass.
 */
export async function weakenedTestChecks(opts: GuardOptions): Promise<ProbeCheck[]> {
  const t0 = performance.now();
  // -I: no user site, no PYTHON* variables, no cwd on sys.path; the package's folder is put there by hand.
  const boot = `import sys; sys.path.insert(0, ${JSON.stringify(GUARD_PATH)}); from probegate_guard.__main__ import main; sys.exit(main())`;
  const args = ["-I", "-c", boot, "--base", opts.baseDir, "--head", opts.headDir, "--tests", ...opts.tests];
  if (opts.allow?.length) args.push("--allow", ...opts.allow);
  const r = await execa(opts.python, args, { reject: false, timeout: (opts.timeoutS ?? 120) * 1000, maxBuffer: 64 * 1024 * 1024, env: { PYTHONDONTWRITEBYTECODE: "1" }, extendEnv: false });
  if (r.exitCode !== 0) {
    const why = r.timedOut ? `timed out after ${opts.timeoutS ?? 120} s` : `exit ${r.exitCode}: ${String(r.stderr).trim().split("\n").slice(-2).join(" ")}`;
    throw new HarnessError(`the weakened-test guard failed (${why})`, "official");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(r.stdout));
  } catch (e) {
    throw new HarnessError(`the weakened-test guard printed something that is not JSON: ${(e as Error).message}`, "official");
  }
  const report = GuardReportSchema.safeParse(parsed);
  if (!report.success) throw new HarnessError(`the weakened-test guard's report breaks its schema: ${report.error.issues[0]?.message ?? "?"}`, "official");
  return guardChecks(report.data, (performance.now() - t0) / 1000);
}
