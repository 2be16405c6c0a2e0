import { z } from "zod";
import type { ProbeCheck } from "../probe-outcome.js";

/** The kinds of change to a base test that the guard reports (python/probegate_guard). */
export const WEAKENING_KINDS = ["deleted", "skipped", "deselected", "narrowed", "assertion-removed", "expectation-changed", "tolerance-loosened", "exception-widened", "unparsable"] as const;

const FindingSchema = z.strictObject({
  kind: z.enum(WEAKENING_KINDS),
  test: z.string().min(1),
  file: z.string().min(1),
  line: z.number().int().min(1),
  message: z.string(),
});
export type WeakeningFinding = z.infer<typeof FindingSchema>;

/** What `python -m probegate_guard` prints. */
export const GuardReportSchema = z.strictObject({
  findings: z.array(FindingSchema),
  allowed: z.array(FindingSchema),
  files: z.strictObject({ base: z.number().int(), head: z.number().int() }),
  tests: z.strictObject({ base: z.number().int(), head: z.number().int() }),
});
export type GuardReport = z.infer<typeof GuardReportSchema>;

const safePath = (p: string): string | undefined => (p.startsWith("/") || p.split("/").includes("..") ? undefined : p);

/**
 * The guard's report as checks of category `structure`: one failed check per finding (the test,
 * the file and the line where it is), one passed check per change the task allows (said, never
 * waived silently), and one passed check with the counts when nothing was weakened. Pure.
 */
export function guardChecks(report: GuardReport, durationS: number): ProbeCheck[] {
  const base = { probe: "weakened-tests", category: "structure" as const, attempts: 1, durationS };
  const measured = { baseTests: report.tests.base, headTests: report.tests.head, baseFiles: report.files.base };
  const checks: ProbeCheck[] = report.findings.map((f, i) => {
    const path = safePath(f.file);
    return {
      ...base,
      id: `weakened-tests.${f.kind}-${i + 1}`,
      status: "failed",
      message: `${f.test}: ${f.message}`,
      location: path ? { path, line: f.line } : null,
      measured: { kind: f.kind },
    };
  });
  report.allowed.forEach((f, i) => {
    const path = safePath(f.file);
    checks.push({ ...base, id: `weakened-tests.allowed-${i + 1}`, status: "passed", message: `allowed by the task: ${f.test}: ${f.message}`, location: path ? { path, line: f.line } : null, measured: { kind: f.kind } });
  });
  if (report.findings.length === 0) {
    checks.push({ ...base, id: "weakened-tests", status: "passed", message: `the head keeps all ${report.tests.base} tests of the base's ${report.files.base} selected test files, unweakened`, measured });
  }
  return checks;
}
