import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { getOctokit } from "@actions/github";
import { renderCheckRun } from "../core/check-run-render.js";
import { evaluationKey } from "../core/evaluation-key.js";
import type { EvaluationResult } from "../core/result.js";
import { evaluate } from "../engine/evaluate.js";
import { InputError } from "../engine/errors.js";
import { probeSetVersion } from "../engine/probe-set.js";
import { signResult } from "../engine/sign.js";
import { loadTask, type LoadedTask } from "../engine/task-load.js";
import { KIT_DIR } from "../engine/package-paths.js";
import { completeCheckRun, ensureCheckRun } from "../github/check-runs.js";
import type { GitHubClient } from "../github/client.js";
import { progressPrinter } from "../engine/progress-lines.js";
import { contextPath, pullRequestContext, readPullRequestEvent, type PullRequestTarget } from "./pull-request-event.js";
import type { ActionSettings } from "./settings.js";
import { checkTrustedWorkflow } from "./trusted-workflow.js";
import { probeSetSource } from "./probe-set-source.js";
import { resolveGateInputs } from "./pr-base.js";

/** The workflow running the Action is not the trusted one: nothing was read or signed. */
export class UntrustedWorkflowError extends Error {
  override readonly name = "UntrustedWorkflowError";
}

/** What the runner gives the Action besides its inputs: the workflow's environment and its log. */
export interface ActionHost {
  env: NodeJS.ProcessEnv;
  info(text: string): void;
  warning(text: string): void;
  group<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Called as soon as the check run exists, so the output is set even if the evaluation fails. */
  checkRunCreated(id: number): void;
}

/** The use case's result: the (signed) result document, where it was written, and the check run. */
export interface ActionOutcome {
  result: EvaluationResult;
  resultPath: string;
  checkRunId: number | null;
}

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
function submissionFrom(s: ActionSettings, env: NodeJS.ProcessEnv): string {
  const text = s.submission ?? env.GITHUB_WORKSPACE ?? ".";
  const short = /^([\w.-]+\/[\w.-]+)@([\w./-]+)$/.exec(text);
  if (short && !existsSync(short[1] ?? "")) return `${env.GITHUB_SERVER_URL ?? "https://github.com"}/${short[1]}.git@${short[2]}`;
  return text;
}

/**
 * One evaluation as the Action runs it: first the running workflow checked against
 * `trusted-workflow` (required in standalone mode), then the task and submission from the inputs, in standalone
 * mode a check run (in progress, then completed with the result — or `neutral` with the error, so
 * it is never left in progress), the engine, the signature, and the result file.
 */
export async function evaluateForAction(s: ActionSettings, host: ActionHost): Promise<ActionOutcome> {
  // Before anything reads the probes or could sign: is this the workflow the probes are for?
  if (s["trusted-workflow"]) {
    const prHeadSha = s.mode === "standalone" ? readPullRequestEvent(host.env.GITHUB_EVENT_NAME, host.env.GITHUB_EVENT_PATH).headSha : undefined;
    // For pull_request, GITHUB_SHA is the PR's merge commit; for a dispatch it is the workflow's own commit.
    const sha = s.mode === "standalone" ? host.env.GITHUB_SHA : undefined;
    const trusted = checkTrustedWorkflow(s["trusted-workflow"], { workflowRef: host.env.GITHUB_WORKFLOW_REF, workflowSha: host.env.GITHUB_WORKFLOW_SHA, sha, prHeadSha });
    if (!trusted.ok) throw new UntrustedWorkflowError(trusted.why);
  }
  const task = loadTaskFromInputs(s);
  const pr: PullRequestTarget | undefined = s.mode === "standalone" ? readPullRequestEvent(host.env.GITHUB_EVENT_NAME, host.env.GITHUB_EVENT_PATH) : undefined;
  const { submission, prBase, note } = resolveGateInputs(task, submissionFrom(s, host.env), { mode: s.mode, baseShaInput: s["base-sha"], ...(pr ? { pr } : {}) });
  if (note) host.info(note);
  let gh: GitHubClient | undefined;
  let checkRunId: number | null = null;
  if (pr) {
    gh = getOctokit(s["github-token"] ?? "", { request: { fetch: globalThis.fetch } });
    const externalId = evaluationKey({ ...pr, task: task.spec.id, probeSet: probeSetVersion(task.probesDir) });
    const created = await ensureCheckRun(gh, { ...pr, name: s["check-name"], externalId }, {
      status: "in_progress",
      title: "Running official tests and hidden probes",
      summary: `Evaluating \`${task.spec.id}\` on ${host.env.RUNNER_NAME ?? "this runner"}.`,
    });
    checkRunId = created.id;
    host.checkRunCreated(created.id);
  }
  // Read before the run: the probes folder is removed when the step ends.
  const source = probeSetSource(task.dir, task.probesDir, host.env, s.mode);
  try {
    const evaluated = await host.group(`probegate: ${task.spec.id}`, () =>
      evaluate({
        task,
        submission,
        ...(prBase ? { prBase } : {}),
        kitDir: KIT_DIR,
        python: s.python,
        evaluationKey: s["evaluation-key"],
        worldSize: s["world-size"],
        gpus: s.gpus === "all" ? undefined : s.gpus === "none" ? [] : s.gpus.split(",").map(Number),
        unsandboxed: s.unsandboxed,
        // What probes print never reaches the log; the official tests are public and their output helps the author.
        onEvent: progressPrinter((t) => process.stdout.write(t), { verbose: false }),
      }),
    );
    const result = { ...evaluated, probeSetVersion: source };
    const signed = s["signing-key"] ? signResult(result, s["signing-key"]) : result;
    const resultPath = resolve(s["result-path"] ?? join(host.env.RUNNER_TEMP ?? tmpdir(), "probegate-result.json"));
    mkdirSync(dirname(resultPath), { recursive: true });
    writeFileSync(resultPath, `${JSON.stringify(signed, null, 2)}\n`);
    if (pr && host.env.GITHUB_EVENT_PATH) {
      // The PR and its author beside the result, for scorecards built from result files alone.
      const runUrl = host.env.GITHUB_RUN_ID ? `${host.env.GITHUB_SERVER_URL ?? "https://github.com"}/${host.env.GITHUB_REPOSITORY}/actions/runs/${host.env.GITHUB_RUN_ID}` : null;
      writeFileSync(contextPath(resultPath), `${JSON.stringify(pullRequestContext(pr, host.env.GITHUB_EVENT_PATH, runUrl), null, 2)}\n`);
    }
    if (gh && pr && checkRunId !== null) {
      const requests = await completeCheckRun(gh, { owner: pr.owner, repo: pr.repo, checkRunId }, renderCheckRun(signed));
      host.info(`check run ${checkRunId} completed in ${requests} request(s)`);
    }
    return { result: signed, resultPath, checkRunId };
  } catch (e) {
    if (gh && pr && checkRunId !== null) {
      const id = checkRunId;
      await completeCheckRun(gh, { owner: pr.owner, repo: pr.repo, checkRunId: id }, {
        conclusion: "neutral",
        title: "Evaluation error",
        summary: `probegate could not evaluate this pull request: ${(e as Error).message}`,
        annotations: [],
      }).catch((err: Error) => host.warning(`could not complete check run ${id}: ${err.message}`));
    }
    throw e;
  }
}
