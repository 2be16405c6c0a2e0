import { rmSync } from "node:fs";
import * as core from "@actions/core";
import { renderSummary } from "../core/check-run-render.js";
import { stepFails } from "../core/gate.js";
import { evaluateForAction, type ActionOutcome } from "./evaluate-for-action.js";
import { readSettings, type ActionSettings } from "./settings.js";

function writeOutputs({ result, resultPath }: ActionOutcome): void {
  core.setOutput("verdict", result.verdict);
  core.setOutput("result-path", resultPath);
  core.setOutput("probes-failed", result.probes.filter((p) => p.status === "failed").length);
  core.setOutput("probes-total", result.probes.length);
}

/**
 * The Action: inputs → one use case (`evaluateForAction`) → outputs, job summary and the step's
 * exit. Every failure ends in `setFailed` with a message naming what to fix.
 */
export async function run(): Promise<void> {
  let settings: ActionSettings | undefined;
  try {
    settings = readSettings((name) => core.getInput(name));
    const s = settings;
    const outcome = await evaluateForAction(s, {
      env: process.env,
      info: (t) => core.info(t),
      warning: (t) => core.warning(t),
      group: (name, fn) => core.group(name, fn),
      checkRunCreated: (id) => core.setOutput("check-run-id", id),
    });
    const { result } = outcome;
    writeOutputs(outcome);
    await core.summary.addRaw(renderSummary(result), true).write();
    core.info(`verdict: ${result.verdict} — ${result.reason}`);
    if (stepFails(result.verdict, s["fail-on"])) core.setFailed(`probegate: ${result.verdict} — ${result.reason} (fail-on: ${s["fail-on"]})`);
  } catch (e) {
    core.setFailed((e as Error).message);
  } finally {
    if (settings?.probes && settings["remove-probes"]) rmSync(settings.probes, { recursive: true, force: true });
  }
}
