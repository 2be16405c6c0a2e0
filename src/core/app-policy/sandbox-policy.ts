import type { CheckRunOutput } from "../check-run-render.js";
import type { EvaluationResult } from "../result.js";

/**
 * What the app does with a result whose submission ran without the sandbox. Unsandboxed, the
 * submission runs as the user that holds the signing key, so it can sign any result it likes: a
 * valid signature proves nothing. Such a result is refused (a neutral check run, and no gate
 * passes it) unless the repository's config opts in by name (`allowUnsandboxed: { reason }`).
 */
export type SandboxJudgement =
  | { kind: "sandboxed" }
  | { kind: "refused"; title: string; problems: string[] }
  | { kind: "allowed"; banner: string };

/** Decides how a verified result may be reported, from its `environment.sandboxed` and the repository's opt-in. */
export function judgeSandbox(result: EvaluationResult, allowUnsandboxedReason: string | null): SandboxJudgement {
  if (result.environment.sandboxed) return { kind: "sandboxed" };
  if (allowUnsandboxedReason === null) {
    return {
      kind: "refused",
      title: "Result refused: the submission ran without the sandbox",
      problems: [
        `the result says \`sandboxed: false\` (its verdict was ${result.verdict}): the submission's code ran as the user that holds the signing key, so it could have written and signed this result itself`,
        "run the evaluator on a runner that can sandbox (bubblewrap, user namespaces; `probegate doctor` lists what is missing), or, if this repository accepts that risk, add `allowUnsandboxed: { reason: \"…\" }` to .github/probegate.yml",
      ],
    };
  }
  return {
    kind: "allowed",
    banner: `> ⚠️ **Unsandboxed result, accepted by this repository's config.** The submission ran without the sandbox, as the user that holds the signing key, so it could have forged this result. \`.github/probegate.yml\` allows it: "${allowUnsandboxedReason.replace(/\s+/g, " ")}".`,
  };
}

/** The output with the banner at the top of its summary (kept within GitHub's summary limit). */
export function withBanner(out: CheckRunOutput, banner: string, limit = 65535): CheckRunOutput {
  const summary = `${banner}\n\n${out.summary}`;
  return { ...out, title: `[unsandboxed] ${out.title}`.slice(0, 255), summary: summary.length > limit ? `${summary.slice(0, limit - 1)}…` : summary };
}
