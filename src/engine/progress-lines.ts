import type { EvaluationEvent } from "./evaluate.js";
import { formatSeconds } from "../core/sizes.js";

const LABEL: Record<string, string> = {
  workspace: "workspace",
  official: "official tests",
  probes: "hidden probes",
  verdict: "verdict",
};

/**
 * Phase lines on stderr, so stdout stays clean for `--format json`. Runner logs (what the tests
 * and probes printed) are shown only with --verbose, and never in any report.
 */
export function progressPrinter(write: (s: string) => void, opts: { verbose?: boolean; prefix?: string } = {}): (e: EvaluationEvent) => void {
  const p = opts.prefix ?? "";
  return (e) => {
    switch (e.type) {
      case "phase-start":
        if (e.phase !== "verdict") write(`${p}▸ ${LABEL[e.phase]}${e.detail ? ` (${e.detail})` : ""}…\n`);
        break;
      case "phase-end":
        if (e.phase !== "verdict") write(`${p}  ✓ ${LABEL[e.phase]} done in ${formatSeconds(e.durationS)}${e.detail ? `: ${e.detail}` : ""}\n`);
        break;
      case "probe-start":
        write(`${p}    · ${e.probe}${e.attempt > 1 ? ` (time re-measure ${e.attempt}/3)` : ""}${e.slice ? ` on ${e.slice}` : ""}\n`);
        break;
      case "probe-end": {
        const bad = e.checks.filter((c) => c.status !== "passed" && c.status !== "skipped");
        const tally = bad.length ? bad.map((c) => `${c.id} ${c.status}`).join(", ") : "all passed";
        // Probes run side by side: each end line names its probe.
        write(`${p}      ${e.probe}: ${e.checks.length} checks: ${tally}\n`);
        break;
      }
      case "log":
        // The task's environment being built: phase lines a person waits on, not a runner's output.
        if (e.source === "environment") write(`${p}  · environment: ${e.text}\n`);
        else if (opts.verbose && e.text.trim()) write(`${p}--- ${e.source} output ---\n${e.text.trimEnd()}\n${p}--- end ---\n`);
        break;
    }
  };
}
