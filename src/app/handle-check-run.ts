import type { Context } from "probot";
import { getEvaluation } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { rerunFromChecks } from "./rerun-request.js";

/** `check_run` rerequested, or its "Re-run probes" button (requested_action `rerun`). */
export async function onCheckRunRerun(context: Context<"check_run">, deps: AppDeps): Promise<void> {
  const { payload } = context;
  if (payload.action === "requested_action" && payload.requested_action?.identifier !== "rerun") return;
  const key = payload.check_run.external_id;
  const e = key ? getEvaluation(deps.db, key) : null;
  if (!e || e.pr === null) return;
  // The button sits on one commit's check run: if the PR has moved on, that is not what would run.
  await rerunFromChecks(context, deps, { repo: { owner: e.owner, repo: e.repo }, pr: e.pr, task: e.task, headSha: e.headSha });
}
