/** A repository permission as GitHub's collaborator-permission endpoint reports it (permission or role name). */
export type RepoPermission = "admin" | "maintain" | "write" | "triage" | "read" | "none";

const MAY_RERUN: ReadonlySet<RepoPermission> = new Set(["admin", "maintain", "write"]);

/** The rerun window: `perPrPerHour` accepted reruns per PR in any rolling hour. */
export const RERUN_WINDOW_MS = 3600_000;

export interface RerunRequest {
  /** Login of whoever asked (comment author, or the user who pressed the check-run button). */
  commenter: string;
  /** Their permission on the repository, as GitHub answered it (never guessed from the payload). */
  permission: RepoPermission;
  /** Whether the commenter is the agent that wrote the PR (agent detection on the commenter). */
  isAgent: boolean;
  /** Whether the command comes from an edited comment (`issue_comment.edited`). */
  isEdited: boolean;
  /** When the accepted reruns of this PR happened; refused attempts do not count against the limit. */
  recentAttempts: ReadonlyArray<Date>;
  now: Date;
  limit: { perPrPerHour: number; allowAgent?: boolean };
}

export type RerunRefusal = "edited" | "agent" | "permission" | "disabled" | "rate-limited";

export type RerunDecision =
  | { allowed: true }
  | { allowed: false; reason: RerunRefusal; reply: string; retryAt: Date | null };

function refuse(reason: RerunRefusal, reply: string, retryAt: Date | null = null): RerunDecision {
  return { allowed: false, reason, reply, retryAt };
}

/**
 * Whether a rerun may start, and if not, the reply that says why. Checked in this order: an edited
 * comment (editing must not replay a command someone already acted on), the agent asking for its
 * own rerun (it could retry until a flaky probe lets it through), the commenter's permission, then
 * the per-PR rate limit over the last hour.
 */
export function decideRerun(req: RerunRequest): RerunDecision {
  const who = `@${req.commenter}`;
  if (req.isEdited) {
    return refuse("edited", `${who}: commands in edited comments are ignored. Post \`/probegate rerun\` as a new comment.`);
  }
  if (req.isAgent && !req.limit.allowAgent) {
    return refuse("agent", `${who}: the agent that wrote this PR cannot ask for its own rerun; a maintainer can.`);
  }
  if (!MAY_RERUN.has(req.permission)) {
    return refuse("permission", `${who}: reruns need write or admin permission on this repository; you have \`${req.permission}\`.`);
  }
  const limit = req.limit.perPrPerHour;
  if (limit <= 0) {
    return refuse("disabled", `${who}: reruns are turned off for this repository (\`reruns.perPrPerHour: 0\` in .github/probegate.yml).`);
  }
  const since = req.now.getTime() - RERUN_WINDOW_MS;
  const inWindow = req.recentAttempts.map((d) => d.getTime()).filter((t) => t > since && t <= req.now.getTime()).sort((a, b) => a - b);
  if (inWindow.length >= limit) {
    // The window frees up when the oldest attempt that keeps it full falls out of it.
    const retryAt = new Date((inWindow[inWindow.length - limit] ?? req.now.getTime()) + RERUN_WINDOW_MS);
    return refuse(
      "rate-limited",
      `${who}: this PR has had ${inWindow.length} reruns in the last hour (the limit is ${limit}). The next one can run after ${retryAt.toISOString()}.`,
      retryAt,
    );
  }
  return { allowed: true };
}
