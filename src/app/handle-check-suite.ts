import type { Context } from "probot";
import { evaluationsOfPr, prsEvaluatedAtHead } from "../store/dispatch-context.js";
import type { AppDeps } from "./deps.js";
import { rerunFromChecks } from "./rerun-request.js";

/**
 * `check_suite` rerequested: "Re-run all checks" on the app's suite of a commit. Every PR of this
 * repository at that commit whose evaluations the store has is rerun for all its tasks, through the
 * same policy as the check run's button (permission, agent, rate limit; every request recorded).
 * The PRs are the payload's `pull_requests` that belong to this repository; GitHub lists none for a
 * PR from a fork, and then (or when every listed PR is another repository's) the store's
 * evaluations of this repository at that head name them.
 *
 * A suite is for one commit and `rerun()` works on the PR's current head, so the suite's head SHA
 * goes with the request: if the PR has moved on, the rerun is refused with a reply (reason
 * `stale-head`) rather than evaluating a commit other than the one whose checks were re-run. A
 * suite of which the store knows no evaluation (nothing probegate evaluated, e.g. only the config
 * check) is ignored with a log line: there is nothing of ours to rerun.
 */
export async function onCheckSuiteRerun(context: Context<"check_suite">, deps: AppDeps): Promise<void> {
  const { payload } = context;
  const repo = { owner: payload.repository.owner.login, repo: payload.repository.name };
  const headSha = payload.check_suite.head_sha;
  const listed = payload.check_suite.pull_requests.filter((p) => p.base.repo.id === payload.repository.id).map((p) => p.number);
  const candidates = listed.length > 0 ? listed : prsEvaluatedAtHead(deps.db, { ...repo, headSha });
  const prs = [...new Set(candidates)]
    .sort((a, b) => a - b)
    .filter((pr) => evaluationsOfPr(deps.db, { ...repo, pr }).some((e) => e.headSha === headSha));
  if (prs.length === 0) {
    context.log.info(`check suite ${payload.check_suite.id} of ${repo.owner}/${repo.repo}@${headSha.slice(0, 7)} rerequested: no evaluation of that head in the store; ignored`);
    return;
  }
  for (const pr of prs) await rerunFromChecks(context, deps, { repo, pr, task: null, headSha });
}
