import { ID_PATTERN } from "./task-spec.js";

/** Characters a `/probegate accept` pattern must have before its `*`. */
export const MIN_PATTERN_STEM = 6;

/** Whether an accepted check id (or `prefix*` pattern) names the check `id`. */
export function acceptMatches(accepted: string, id: string): boolean {
  return accepted.endsWith("*") ? id.startsWith(accepted.slice(0, -1)) : id === accepted;
}

/** A command given in a PR comment. `task: null` reruns every task the PR maps to. */
export type CommentCommand =
  | { kind: "rerun"; task: string | null }
  | { kind: "explain" }
  /** Accept one measured difference (a failed check) for the PR's current head; `task` null: the one task whose result has that check. */
  | { kind: "accept"; task: string | null; checkId: string; reason: string };

/** The usage lines the app replies with when a command is not understood. */
export const COMMAND_HELP = [
  "`/probegate rerun` re-evaluates the PR's current head against every task it maps to.",
  "`/probegate rerun <task>` re-evaluates it against one task.",
  "`/probegate explain` lists the categories of the failed probes and what they check.",
  "`/probegate accept <check-id> <reason>` accepts a measured difference the change means to make (write permission; this head only); a `<check-id>` ending in `*` accepts every failed check whose id starts so (`weakened-tests.expectation-changed-*`).",
].join("\n");

/** A `/probegate` line that is not a valid command; `reply` is the comment the app answers with. */
export class CommandError extends Error {
  override readonly name = "CommandError";
  constructor(
    readonly code: "missing-subcommand" | "unknown-subcommand" | "bad-argument",
    message: string,
    readonly line: string,
  ) {
    super(message);
  }

  /** The reply for the PR thread: what was wrong, then how to write it. */
  get reply(): string {
    return `${this.message}\n\n${COMMAND_HELP}`;
  }
}

const COMMAND_LINE = /^\s*\/probegate(?=\s|$)(.*)$/i;

/**
 * The command in a comment body: the first line that starts with `/probegate` (any case, leading
 * spaces allowed), outside fenced code blocks; quoted lines (`> /probegate ...`) do not start with
 * it and so never re-trigger. Returns null when there is no such line; throws CommandError when
 * the line is not a valid command.
 */
export function parseCommentCommand(body: string): CommentCommand | null {
  let fenced = false;
  for (const raw of body.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(raw)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const m = COMMAND_LINE.exec(raw);
    if (!m) continue;
    const line = raw.trim();
    const [sub, ...args] = (m[1] ?? "").trim().split(/\s+/).filter(Boolean);
    if (sub === undefined) throw new CommandError("missing-subcommand", "`/probegate` needs a command.", line);
    switch (sub.toLowerCase()) {
      case "rerun":
      case "re-run": {
        if (args.length > 1) {
          throw new CommandError("bad-argument", `\`/probegate rerun\` takes at most one task id; got ${args.length} words: \`${args.join(" ")}\`.`, line);
        }
        const task = args[0]?.toLowerCase() ?? null;
        if (task !== null && !ID_PATTERN.test(task)) {
          throw new CommandError("bad-argument", `\`${args[0]}\` is not a task id (lower-case letters, digits, '.', '_' and '-').`, line);
        }
        return { kind: "rerun", task };
      }
      case "accept": {
        const [target, ...why] = args;
        if (target === undefined) throw new CommandError("bad-argument", "`/probegate accept` needs the id of the failed check and a reason, e.g. `/probegate accept grad-sync-bytes the new overlap adds one all-gather per bucket`.", line);
        const [task, checkId] = target.includes("/") ? (target.split("/", 2) as [string, string]) : [null, target];
        // A trailing `*` accepts every failed check whose id starts with what precedes it (the guard's
        // `weakened-tests.expectation-changed-*` of a release that shifts every expected block id);
        // the prefix must name a family, not everything.
        const stem = checkId.endsWith("*") ? checkId.slice(0, -1) : checkId;
        if (checkId.endsWith("*") && stem.length < MIN_PATTERN_STEM) {
          throw new CommandError("bad-argument", `\`${target}\`: a check-id pattern needs at least ${MIN_PATTERN_STEM} characters before its \`*\` (e.g. \`weakened-tests.expectation-changed-*\`).`, line);
        }
        for (const id of [task, stem]) {
          if (id !== null && !ID_PATTERN.test(id.toLowerCase())) throw new CommandError("bad-argument", `\`${target}\` is not a check id (or task/check-id, or a check-id ending in \`*\`).`, line);
        }
        const reason = why.join(" ").trim();
        if (reason.length < 8) throw new CommandError("bad-argument", "`/probegate accept` needs a reason that says why the difference is meant (at least a few words); it is recorded with your name.", line);
        return { kind: "accept", task: task?.toLowerCase() ?? null, checkId: checkId.toLowerCase(), reason };
      }
      case "explain":
        if (args.length > 0) throw new CommandError("bad-argument", `\`/probegate explain\` takes no arguments; got \`${args.join(" ")}\`.`, line);
        return { kind: "explain" };
      default:
        throw new CommandError("unknown-subcommand", `\`/probegate ${sub}\` is not a probegate command.`, line);
    }
  }
  return null;
}
