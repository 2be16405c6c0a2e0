import { execFileSync } from "node:child_process";
import { InputError } from "../engine/errors.js";
import { describeSubmission, parseSubmission, type SubmissionSource } from "../engine/submission.js";
import type { LoadedTask } from "../engine/task-load.js";

/** What the Action hands the engine for one task: the submission and, for a repository gate, the PR's base commit. */
export interface GateInputs {
  submission: SubmissionSource;
  /** The engine's `prBase`: set only for a repository gate (`base: { pr: true }`). */
  prBase?: string;
  /** A line for the log saying how the base was taken or why it is ignored; null when there is nothing to say. */
  note: string | null;
}

/** Where the base and head come from: the `base-sha` input, and in standalone mode the `pull_request` event. */
export interface GateSources {
  mode: "runner" | "standalone";
  /** The `base-sha` input (the app's dispatch sends it for every evaluation). */
  baseShaInput: string | undefined;
  /** Standalone mode: the PR from the event payload. */
  pr?: { headSha: string; baseSha: string | null };
}

const WORKFLOW_HINT = "examples/workflows/probegate-evaluator.yml and probegate-standalone.yml check out the PR with `fetch-depth: 0` and fetch the base SHA";

function git(dir: string, args: string[]): string | null {
  try {
    return execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 60_000 }).trim();
  } catch {
    return null;
  }
}

/**
 * A checked-out folder, turned into the `<git dir>@<head>` a repository gate evaluates: the
 * folder must be a git checkout holding the head, the base and the history between them (the
 * engine compares the head with their merge base). Each gap is an error naming the input and
 * the checkout step that fills it.
 */
function checkoutAt(folder: string, head: string | null, base: string, mode: "runner" | "standalone"): SubmissionSource {
  const checkedOut = git(folder, ["rev-parse", "HEAD"]);
  const headSha = head ?? checkedOut;
  if (!checkedOut || !headSha) {
    throw new InputError(`Input 'submission': ${folder} is not a git checkout; a repository gate needs the PR's repository with its head and base commits (${WORKFLOW_HINT}), or repo@sha.`, { field: "submission" });
  }
  const missing = [
    ["head", headSha],
    ["base", base],
  ].filter(([, sha]) => git(folder, ["cat-file", "-e", `${sha}^{commit}`]) === null);
  if (missing.length) {
    const what = missing.map(([name, sha]) => `the PR's ${name} commit ${sha}`).join(" and ");
    const from = mode === "standalone" ? "" : " (input 'base-sha')";
    throw new InputError(`Input 'submission': the checkout ${folder} lacks ${what}${from}: ${WORKFLOW_HINT}.`, { field: "submission" });
  }
  if (git(folder, ["merge-base", base, headSha]) === null) {
    const shallow = git(folder, ["rev-parse", "--is-shallow-repository"]) === "true";
    throw new InputError(
      shallow
        ? `Input 'submission': the checkout ${folder} is shallow, so the history joining the base ${base.slice(0, 12)} and the head ${headSha.slice(0, 12)} is missing: check out with \`fetch-depth: 0\` (${WORKFLOW_HINT}).`
        : `Input 'base-sha': ${base.slice(0, 12)} and the head ${headSha.slice(0, 12)} share no history in ${folder}: is it the PR's base commit, of the same repository?`,
      { field: shallow ? "submission" : "base-sha" },
    );
  }
  return { kind: "git", repo: folder, ref: headSha };
}

/**
 * Decides the submission and base commit of one evaluation. A repository gate needs the PR's
 * base: the `base-sha` input, else (standalone mode) the event's `pull_request.base.sha`; none is
 * an error naming the input. Its submission is the PR's head as `<git dir>@<sha>`: a checked-out
 * folder becomes the checkout at its head (standalone: the PR's head SHA, since a `pull_request`
 * checkout is the merge commit by default). An assignment task has a fixed base: a `base-sha`
 * given is ignored, and the note says so (the app sends it for every task).
 */
export function resolveGateInputs(task: LoadedTask, submissionText: string, src: GateSources): GateInputs {
  const submission = parseSubmission(submissionText);
  if (task.base.kind !== "pr") {
    const note = src.baseShaInput
      ? `base-sha ${src.baseShaInput.slice(0, 12)} is not used: task ${task.spec.id} is an assignment with a fixed base (${task.file}); only a repository gate (base: {pr: true}) compares the head with the PR's base.`
      : null;
    return { submission, note };
  }
  const base = src.baseShaInput ?? src.pr?.baseSha ?? undefined;
  if (!base) {
    throw new InputError(
      `Input 'base-sha' is required: task ${task.spec.id} is a repository gate (base: {pr: true} in ${task.file}) and compares the PR's head with its base commit. Pass the dispatch's input (\`base-sha: \${{ inputs.base-sha }}\`) or, in a pull_request workflow, \`\${{ github.event.pull_request.base.sha }}\`.`,
      { field: "base-sha" },
    );
  }
  const via = src.baseShaInput ? "input 'base-sha'" : "the pull_request event";
  if (submission.kind === "git") return { submission, prBase: base, note: `repository gate ${task.spec.id}: ${describeSubmission(submission)} against base ${base.slice(0, 12)} (${via})` };
  if (submission.kind === "patch") {
    throw new InputError(`Input 'submission': task ${task.spec.id} is a repository gate and evaluates the PR's head commit, not a patch (${submission.path}): give the PR's checkout or repo@sha.`, { field: "submission" });
  }
  const head = src.mode === "standalone" ? (src.pr?.headSha ?? null) : null;
  const atHead = checkoutAt(submission.path, head, base, src.mode);
  return { submission: atHead, prBase: base, note: `repository gate ${task.spec.id}: ${describeSubmission(atHead)} against base ${base.slice(0, 12)} (${via})` };
}
