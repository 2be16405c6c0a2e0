import Table from "cli-table3";
import { runChecks, type CheckResult } from "../engine/doctor/checks.js";
import { gatherDoctorFacts, type DoctorFacts } from "../engine/doctor/facts.js";
import { InputError } from "../engine/errors.js";
import type { Io } from "./main.js";

const MARK = { ok: "ok", warn: "WARN", fail: "FAIL" } as const;

/** The checks as a table: status, what was checked, what was found, and the fix. */
export function renderDoctorTable(checks: readonly CheckResult[], sandboxable: boolean): string {
  const t = new Table({ head: ["", "check", "found", "fix"], colWidths: [6, 24, 60, 60], wordWrap: true, style: { head: [], border: [] } });
  for (const c of checks) t.push([MARK[c.status], c.title, c.found, c.fix ?? ""]);
  const verdict = sandboxable
    ? `This runner can sandbox an evaluation${checks.some((c) => c.status === "warn") ? " (with the warnings above)" : ""}.`
    : `This runner cannot sandbox an evaluation: fix the ${checks.filter((c) => c.status === "fail").length} FAIL row(s) above.`;
  return `${t.toString()}\n${verdict}\n`;
}

/**
 * `probegate doctor`: gathers this runner's facts, judges them, prints a table (or JSON with
 * `--json`), and returns 0 only when an evaluation can be sandboxed here (no check failed), else 1.
 */
export async function doctorCommand(flags: { python?: string; gpus?: string; disk?: string; format?: string; json?: boolean }, io: Io, gather: (o: Parameters<typeof gatherDoctorFacts>[0]) => Promise<DoctorFacts> = gatherDoctorFacts): Promise<number> {
  let expectGpus: number | null = null;
  if (flags.gpus !== undefined) {
    if (!/^\d+$/.test(flags.gpus)) throw new InputError(`doctor: --gpus must be a number of GPUs this runner must have, like 8; got '${flags.gpus}'.`, { field: "--gpus" });
    expectGpus = Number(flags.gpus);
  }
  const facts = await gather({ python: flags.python, expectGpus, diskPath: flags.disk });
  const { checks, sandboxable } = runChecks(facts);
  if (flags.json || flags.format === "json") io.stdout(`${JSON.stringify({ sandboxable, checks, facts }, null, 2)}\n`);
  else io.stdout(renderDoctorTable(checks, sandboxable));
  return sandboxable ? 0 : 1;
}
