/**
 * Standalone mode runs in the PR's own `pull_request` workflow, and that job holds the probes'
 * read token and the signing key. GitHub runs the workflow file *from the PR* for `pull_request`,
 * so an agent that edits the file could read both. The Action therefore refuses to read probes or
 * sign unless the workflow that runs it is the trusted one: a central workflow that an org
 * ruleset requires (it runs from the central repository's ref, which the PR cannot change). The
 * runner tells which file runs, and from which commit, in GITHUB_WORKFLOW_REF / GITHUB_WORKFLOW_SHA.
 */

/** A workflow file at a ref: `owner/repo/.github/workflows/file.yml@ref`. */
export interface WorkflowRef {
  repo: string;
  path: string;
  ref: string;
}

const WORKFLOW_REF = /^([A-Za-z0-9-]+\/[A-Za-z0-9._-]+)\/(\.github\/workflows\/[^@\s]+\.ya?ml)@(\S+)$/;

/** Parses `owner/repo/.github/workflows/file.yml@ref`; null when it is not one. */
export function parseWorkflowRef(text: string): WorkflowRef | null {
  const m = WORKFLOW_REF.exec(text.trim());
  return m ? { repo: m[1] as string, path: m[2] as string, ref: m[3] as string } : null;
}

/** The workflow the runner says is running, and the PR being evaluated. */
export interface RunningWorkflow {
  /** GITHUB_WORKFLOW_REF. */
  workflowRef: string | undefined;
  /** GITHUB_WORKFLOW_SHA: the commit the workflow file was read from. */
  workflowSha: string | undefined;
  /** GITHUB_SHA: for `pull_request`, the PR's merge commit. */
  sha: string | undefined;
  /** The PR's head commit. */
  prHeadSha: string | undefined;
}

const SHA = /^[0-9a-f]{40}$/i;

function refMatches(trusted: string, actual: string): boolean {
  if (trusted === actual) return true;
  // A bare name means the branch or the tag of that name.
  return !trusted.startsWith("refs/") && (actual === `refs/heads/${trusted}` || actual === `refs/tags/${trusted}`);
}

/**
 * Whether the running workflow is `trusted` (the `trusted-workflow` input): the same repository
 * (case-insensitive) and file, at the same ref — or, when `trusted` pins a commit SHA, read from
 * that commit. Also refused, whatever the input says, is a workflow read from the PR's own head or
 * merge commit. The reason names both workflows, so the fix is plain.
 */
export function checkTrustedWorkflow(trustedText: string, running: RunningWorkflow): { ok: true } | { ok: false; why: string } {
  const trusted = parseWorkflowRef(trustedText);
  if (!trusted) return { ok: false, why: `Input 'trusted-workflow' is '${trustedText}', not owner/repo/.github/workflows/file.yml@ref` };
  if (!running.workflowRef) return { ok: false, why: "GITHUB_WORKFLOW_REF is not set, so the workflow running this step cannot be checked against 'trusted-workflow' (a runner older than 2.300?)" };
  const actual = parseWorkflowRef(running.workflowRef);
  const named = `this step runs in ${running.workflowRef}${running.workflowSha ? ` (workflow commit ${running.workflowSha})` : ""}, but trusted-workflow is ${trustedText}`;
  const advice =
    "The probes and the signing key are only handed to the trusted workflow: a pull_request workflow runs the workflow file from the PR, which its author can edit. Require the central workflow with an org ruleset (README, 'Standalone mode: trust only a central workflow').";
  if (!actual) return { ok: false, why: `${named}; GITHUB_WORKFLOW_REF is not owner/repo/.github/workflows/file.yml@ref. ${advice}` };
  const fromPr = running.workflowSha !== undefined && (running.workflowSha === running.prHeadSha || running.workflowSha === running.sha);
  if (fromPr || actual.ref.startsWith("refs/pull/")) return { ok: false, why: `Refused: the workflow file came from the pull request: ${named}. ${advice}` };
  const sameFile = actual.repo.toLowerCase() === trusted.repo.toLowerCase() && actual.path === trusted.path;
  const sameRef = SHA.test(trusted.ref) ? running.workflowSha?.toLowerCase() === trusted.ref.toLowerCase() : refMatches(trusted.ref, actual.ref);
  if (!sameFile || !sameRef) return { ok: false, why: `Refused: ${named}. ${advice}` };
  return { ok: true };
}
