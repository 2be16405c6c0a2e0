import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import * as core from "@actions/core";
import { getOctokit } from "@actions/github";
import { renderCheckRun, renderSummary } from "../core/check-run-render.js";
import { evaluationKey } from "../core/evaluation-key.js";
import { stepFails } from "../core/gate.js";
import type { EvaluationResult } from "../core/result.js";
import { evaluate } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { probeSetVersion } from "../engine/probe-set.js";
import { signResult } from "../engine/sign.js";
import { parseSubmission } from "../engine/submission.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { KIT_DIR } from "../engine/package-paths.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient } from "../github/client.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { contextPath, pullRequestContext, readPullRequestEvent, type PullRequestTarget } from "./pull-request-event.js";
import { readSettings, type ActionSettings } from "./settings.js";


function loadTaskFromInputs(s: ActionSettings): LoadedTask {
  if (s.probes && !(existsSync(s.probes) && statSync(s.probes).isDirectory())) {
    throw new InputError(`Input 'probes': folder ${resolve(s.probes)} does not exist on this runner`);
  }
  try {
    return loadTask(s.task, s.probes);
  } catch (e) {
    if (e instanceof InputError) throw new InputError(`Input 'task': ${e.message}`);
    throw e;
  }
}

/** `owner/repo@sha` means a repository on this GitHub; anything else is a path, patch or git URL. */
function submissionFrom(s: ActionSettings): string {
  const text = s.submission ?? process.env.GITHUB_WORKSPACE ?? ".";
  const short = /^([\w.-]+\/[\w.-]+)@([\w./-]+)$/.exec(text);
  if (short && !existsSync(short[1] ?? "")) return `${process.env.GITHUB_SERVER_URL ?? "https://github.com"}/${short[1]}.git@${short[2]}`;
  return text;
}

function writeOutputs(result: EvaluationResult, resultPath: string): void {
  core.setOutput("verdict", result.verdict);
  core.setOutput("result-path", resultPath);
  core.setOutput("probes-failed", result.probes.filter((p) => p.status === "failed").length);
  core.setOutput("probes-total", result.probes.length);
}

/**
 * The Action: inputs → engine → result file, outputs, job summary, and (standalone) a check run.
 * Every failure ends in `setFailed` with a message naming what to fix; a check run it created is
 * never left in progress.
 */
export async function run(): Promise<void> {
  let settings: ActionSettings | undefined;
  let gh: GitHubClient | undefined;
  let pr: PullRequestTarget | undefined;
  let checkRunId: number | undefined;
  try {
    settings = readSettings((name) => core.getInput(name));
    const s = settings;
    const task = loadTaskFromInputs(s);
    const submission = parseSubmission(submissionFrom(s));
    if (s.mode === "standalone") {
      pr = readPullRequestEvent(process.env.GITHUB_EVENT_NAME, process.env.GITHUB_EVENT_PATH);
      gh = getOctokit(s["github-token"] ?? "", { request: { fetch: globalThis.fetch } });
      const externalId = evaluationKey({ ...pr, task: task.spec.id, probeSet: probeSetVersion(task.probesDir) });
      const run = await ensureCheckRun(gh, { ...pr, name: s["check-name"], externalId }, {
        status: "in_progress",
        title: "Running official tests and hidden probes",
        summary: `Evaluating \`${task.spec.id}\` on ${process.env.RUNNER_NAME ?? "this runner"}.`,
      });
      checkRunId = run.id;
      core.setOutput("check-run-id", run.id);
    }
    core.startGroup(`probegate: ${task.spec.id}`);
    const result = await evaluate({
      task,
      submission,
      kitDir: KIT_DIR,
      python: s.python,
      evaluationKey: s["evaluation-key"],
      worldSize: s["world-size"],
      gpus: s.gpus === "all" ? undefined : s.gpus === "none" ? [] : s.gpus.split(",").map(Number),
      unsandboxed: s.unsandboxed,
      // What probes print never reaches the log; the official tests are public and their output helps the author.
      onEvent: progressPrinter((t) => process.stdout.write(t), { verbose: false }),
    });
    core.endGroup();
    const signed = s["signing-key"] ? signResult(result, s["signing-key"]) : result;
    const resultPath = resolve(s["result-path"] ?? join(process.env.RUNNER_TEMP ?? tmpdir(), "probegate-result.json"));
    mkdirSync(dirname(resultPath), { recursive: true });
    writeFileSync(resultPath, `${JSON.stringify(signed, null, 2)}\n`);
    if (pr && process.env.GITHUB_EVENT_PATH) {
      const runUrl = process.env.GITHUB_RUN_ID ? `${process.env.GITHUB_SERVER_URL ?? "https://github.com"}/${process.env.GITHUB_REPOSITORY}/actions/runs/${process.env.GITHUB_RUN_ID}` : null;
      writeFileSync(contextPath(resultPath), `${JSON.stringify(pullRequestContext(pr, process.env.GITHUB_EVENT_PATH, runUrl), null, 2)}\n`);
    }
    writeOutputs(signed, resultPath);
    await core.summary.addRaw(renderSummary(signed), true).write();
    if (gh && pr && checkRunId !== undefined) {
      const requests = await completeCheckRun(gh, { owner: pr.owner, repo: pr.repo, checkRunId }, renderCheckRun(signed));
      core.info(`check run ${checkRunId} completed in ${requests} request(s)`);
      checkRunId = undefined;
    }
    core.info(`verdict: ${signed.verdict} — ${signed.reason}`);
    if (stepFails(signed.verdict, s["fail-on"])) core.setFailed(`probegate: ${signed.verdict} — ${signed.reason} (fail-on: ${s["fail-on"]})`);
  } catch (e) {
    const message = (e as Error).message;
    if (gh && pr && checkRunId !== undefined) {
      await completeCheckRun(gh, { owner: pr.owner, repo: pr.repo, checkRunId }, {
        conclusion: "neutral",
        title: "Evaluation error",
        summary: `probegate could not evaluate this pull request: ${message}`,
        annotations: [],
      }).catch((err: Error) => core.warning(`could not complete check run ${checkRunId}: ${err.message}`));
    }
    core.setFailed(message);
  } finally {
    if (settings?.probes && settings["remove-probes"]) rmSync(settings.probes, { recursive: true, force: true });
  }
}
