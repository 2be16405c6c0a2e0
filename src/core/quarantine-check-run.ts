import { cell, conclusionFor, renderAnnotations, renderCheckRun, renderSummary, SUMMARY_LIMIT, type CheckAnnotation, type CheckRunOutput, type ProbeDetail } from "./check-run-render.js";
import { QUARANTINE_WINDOW, readWithQuarantine, type QuarantinedCheck } from "./quarantine.js";
import type { EvaluationResult, Verdict } from "./result.js";

const VERDICT_TITLE: Record<Verdict, string> = {
  resolved: "Passes official tests and hidden probes",
  "probe-rejected": "Rejected by hidden probes",
  error: "Evaluation error",
  "official-failed": "Official tests failed",
};

/**
 * The check run of a result read with quarantined checks set aside: their failures are warning
 * annotations and a section of the summary says which checks were quarantined and why; the
 * conclusion follows the reading. With no quarantined failure it is exactly `renderCheckRun`.
 */
export function renderCheckRunWithQuarantine(
  result: EvaluationResult,
  quarantined: ReadonlyArray<QuarantinedCheck>,
  detail: ProbeDetail = "full",
): { output: CheckRunOutput; verdict: Verdict } {
  const plain = renderCheckRun(result, detail);
  const reading = readWithQuarantine(result, quarantined);
  if (reading.warnings.length === 0) return { output: plain, verdict: result.verdict };
  const section = [
    `> ⚠️ **${reading.warnings.length} failure${reading.warnings.length === 1 ? "" : "s"} of quarantined checks set aside.** A check that failed known-good submissions more than once in its last ${QUARANTINE_WINDOW} outcomes on this probe set is quarantined: its failures are warnings, not rejections, until the probe set changes.` +
      (reading.changed ? ` probegate reads this result as **${reading.verdict}**; the signed result says ${result.verdict}.` : ""),
    "",
    ...(detail === "full"
      ? [
          "| Quarantined check | Category | Status here | Failed on known-good | What was found |",
          "|---|---|---|---:|---|",
          ...reading.warnings.map((w) => `| \`${w.probe.id}\` | ${w.probe.category} | ${w.probe.status} | ${w.quarantine.failures} of last ${w.quarantine.window} | ${cell(w.probe.message)} |`),
        ]
      : ["| Quarantined category | Failures set aside |", "|---|---:|", ...[...new Set(reading.warnings.map((w) => w.probe.category))].map((c) => `| ${c} | ${reading.warnings.filter((w) => w.probe.category === c).length} |`)]),
    "",
  ].join("\n");
  const setAside = new Set(reading.warnings.map((w) => w.probe));
  const annotations: CheckAnnotation[] = [
    ...renderAnnotations({ ...result, probes: result.probes.filter((p) => !setAside.has(p)) }, detail),
    ...reading.warnings.flatMap(({ probe: p, quarantine: q }) => {
      if (!p.location || detail !== "full") return [];
      const line = p.location.line ?? 1;
      const why = `quarantined: it failed ${q.failures} of its last ${q.window} outcomes on known-good submissions, so this is a warning, not a rejection`;
      return [{
        path: p.location.path,
        start_line: line,
        end_line: line,
        annotation_level: "warning" as const,
        title: `quarantined ${p.category} probe ${p.status}: ${p.id}`.slice(0, 255),
        message: `${p.message || `hidden ${p.category} probe ${p.status}`}`.slice(0, 3800) + `\n\n(${why})`,
      }];
    }),
  ];
  const title = reading.changed ? `${VERDICT_TITLE[reading.verdict]} (${reading.warnings.length} quarantined check${reading.warnings.length === 1 ? "" : "s"} failed)` : plain.title;
  const summary = `${section}\n${renderSummary(result, SUMMARY_LIMIT - section.length - 1, detail)}`;
  return { output: { conclusion: conclusionFor(reading.verdict), title, summary, annotations }, verdict: reading.verdict };
}
