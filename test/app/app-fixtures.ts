import { generateKeyPairSync } from "node:crypto";
import { zipSync } from "fflate";
import type { EvaluationResult } from "../../src/core/result.js";
import { signResult } from "../../src/engine/sign.js";
import { webhookExample } from "../github/webhook-examples.js";
import { sampleResult } from "../helpers.js";

/** The app tests' fixed world (an installation, a repository, an evaluator, a task) and the payloads GitHub sends in it. */

export const API = "https://api.github.com";
export const SIGNING_KEY = "app-test-signing-key-0123456789";
export const INSTALLATION = 1;
export const OWNER = "Codertocat";
export const REPO = "Hello-World";
export const EVALUATOR_REPO = "octo-org/probegate-evaluator";
export const PROBE_SET = "9f2c1d0e8b7a6f5e4d3c2b1a09f8e7d6c5b4a392";
export const TASK = "sharded-optimizer";
export const CHECK_NAME = `probegate / ${TASK}`;
export const T0 = new Date("2026-12-02T10:00:00Z");

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
export const PRIVATE_KEY = privateKey;

export const CONFIG_YAML = `routes:
  - task: ${TASK}
    labels: [bug]
evaluator:
  repository: ${EVALUATOR_REPO}
  workflow: evaluate.yml
  ref: main
  timeoutMinutes: 30
reruns:
  perPrPerHour: 2
`;

/** The config with the hidden probes' full messages on agent PRs' check runs (the default shows categories only). */
export const FULL_DETAIL_YAML = `${CONFIG_YAML}feedback:
  agentDetail: full
`;

/** The tree of a commit, as the gate asks for it when it passes (so a merge group can pass on it). */

/** A real `pull_request` payload (installation 1, Codertocat/Hello-World, label "bug") by an agent unless `author` says otherwise. */
export function pullRequestPayload(action = "opened", over: { sha?: string; author?: string; authorType?: string; draft?: boolean } = {}): Record<string, any> {
  const p = webhookExample("pull_request", (x) => x.action === "opened" && x.installation);
  p.action = action;
  p.pull_request.user.login = over.author ?? "copilot-swe-agent[bot]";
  p.pull_request.user.type = over.authorType ?? (over.author ? "User" : "Bot");
  if (over.sha) p.pull_request.head.sha = over.sha;
  if (over.draft !== undefined) p.pull_request.draft = over.draft;
  return p;
}

export const HEAD = pullRequestPayload().pull_request.head.sha as string;
/** The example PR's base commit (`pull_request.base.sha`), which every dispatch carries. */
export const BASE = pullRequestPayload().pull_request.base.sha as string;
export const PR_NUMBER = pullRequestPayload().pull_request.number as number;

/** The evaluation key the app uses for the example PR at `sha`. */
export function keyFor(sha = HEAD): string {
  return `${OWNER}/${REPO}@${sha}:${TASK}:${PROBE_SET.slice(0, 16)}`;
}

/** A zip holding one result file, as actions/upload-artifact makes it. */
export function resultZip(result: unknown, name = "probegate-result.json"): Uint8Array {
  return zipSync({ [name]: Buffer.from(typeof result === "string" ? result : JSON.stringify(result)) });
}

/** A result of the evaluation of the example PR, signed with the app's key unless told otherwise. */
export function signedResult(over: Partial<EvaluationResult> = {}, key: string | null = SIGNING_KEY): EvaluationResult {
  const base = sampleResult();
  const r = sampleResult({
    evaluationKey: keyFor(),
    // A runner that sandboxes: the app refuses unsandboxed results unless a repository opts in.
    environment: { ...base.environment, sandboxed: true },
    submission: { kind: "git", source: `${OWNER}/${REPO}@${HEAD}`, repo: `${OWNER}/${REPO}`, ref: "changes", sha: HEAD },
    ...over,
  });
  return key ? signResult(r, key) : r;
}

/** A real `workflow_run` payload for run `runId`, from the evaluator repository's installation. */
export function workflowRunPayload(runId: number, action = "completed", conclusion = "success"): Record<string, any> {
  const p = webhookExample("workflow_run", (x) => x.action === "completed");
  p.action = action;
  p.installation = { id: INSTALLATION };
  p.workflow_run.id = runId;
  p.workflow_run.conclusion = action === "completed" ? conclusion : null;
  p.workflow_run.status = action === "completed" ? "completed" : "in_progress";
  return p;
}

/** A real `issue_comment` payload on the example PR (an issue unless `onPr`), by `user`. */
export function commentPayload(body: string, opts: { user?: string; action?: string; onPr?: boolean; commentId?: number } = {}): Record<string, any> {
  const p = webhookExample("issue_comment", (x) => x.action === "created" && x.installation);
  p.action = opts.action ?? "created";
  p.comment.body = body;
  p.comment.id = opts.commentId ?? 9001;
  p.comment.user.login = opts.user ?? "maintainer";
  p.comment.user.type = "User";
  p.issue.number = PR_NUMBER;
  p.repository.owner.login = OWNER;
  p.repository.name = REPO;
  if (opts.onPr ?? true) p.issue.pull_request = { url: `${API}/repos/${OWNER}/${REPO}/pulls/${PR_NUMBER}`, html_url: `https://github.com/${OWNER}/${REPO}/pull/${PR_NUMBER}` };
  else delete p.issue.pull_request;
  if (p.action === "edited") p.changes = { body: { from: "/probegate explain" } };
  return p;
}
