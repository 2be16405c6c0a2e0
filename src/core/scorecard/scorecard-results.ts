import { z } from "zod";
import { detectAgent } from "../agent-detect.js";
import { normalizeAgent } from "../agent-identity.js";
import { VERDICT_RANK } from "../attempt-summary.js";
import type { EvaluationResult } from "../result.js";
import { categoryMask, type ScorecardFact } from "./scorecard.js";
import type { EvaluationLine } from "./scorecard-drilldown.js";

/** A result file's sidecar: `NAME.context.json` beside `NAME.json`. */
export const CONTEXT_SUFFIX = ".context.json";

/**
 * What a result file does not say by itself: which PR it judged and who wrote it. The standalone
 * Action writes it beside the result; a workflow can write it from `github.event` (README,
 * "Scorecards"). `agent` wins; without it the agent is detected from `author` / `headRef` /
 * `labels` by the built-in rules. Every field is optional.
 */
export const ResultContextSchema = z.strictObject({
  repo: z.string().regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, "expected OWNER/NAME").optional(),
  pr: z.number().int().min(1).optional(),
  headSha: z.string().optional(),
  agent: z.string().min(1).nullable().optional(),
  author: z.string().optional(),
  authorType: z.string().optional(),
  headRef: z.string().optional(),
  labels: z.array(z.string()).optional(),
  runUrl: z.string().optional(),
});
export type ResultContext = z.infer<typeof ResultContextSchema>;

/** One readable result file with its sidecar (if any). */
export interface ResultFile {
  file: string;
  result: EvaluationResult;
  context: ResultContext | null;
}

/** A file left out of a scorecard, and why. */
export interface SkippedFile {
  file: string;
  why: string;
}

/** `owner/name` from a submission's repo field: `owner/name`, or a GitHub-style URL or scp path. */
export function repoOf(text: string | null | undefined): { owner: string; repo: string } | null {
  if (!text) return null;
  const m = /^(?:[a-z+]+:\/\/[^/]+\/|git@[^:]+:)?([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(text.trim());
  return m ? { owner: m[1] as string, repo: m[2] as string } : null;
}

/** The PR number in a ref such as `refs/pull/12/head`, `refs/pull/12/merge` or `pull/12/head`. */
export function prOfRef(ref: string | null | undefined): number | null {
  const m = /(?:^|\/)pull\/(\d+)\/(?:head|merge)$/.exec(ref ?? "");
  return m ? Number(m[1]) : null;
}

/** Who and what one result file is about: the sidecar first, then the result's own fields. */
export function identify(f: ResultFile): { owner: string | null; repo: string | null; pr: number | null; agent: string | null; headSha: string | null } {
  const c = f.context ?? {};
  const where = repoOf(c.repo) ?? repoOf(f.result.submission.repo);
  const signals = c.author ? detectAgent({ author: { login: c.author, type: c.authorType ?? null }, headRef: c.headRef ?? null, labels: c.labels ?? [] }) : null;
  const agent = c.agent !== undefined ? (c.agent === null ? null : normalizeAgent(c.agent)) : (signals?.agent ?? null);
  return {
    owner: where?.owner ?? null,
    repo: where?.repo ?? null,
    pr: c.pr ?? prOfRef(f.result.submission.ref),
    agent,
    headSha: c.headSha ?? f.result.submission.sha ?? null,
  };
}

/**
 * Scorecard facts and drill-down lines from result files, grouped as the store groups them: by
 * (repo, PR, task) where the PR is known, else by evaluation key, else by (commit, task), else the
 * file alone. Within a group attempts are ordered by finish time (then file name); the first is
 * the first attempt, the best the first with the best verdict. The same result twice (same
 * signature, or same task, commit, key and finish time unsigned) counts once; the copy is skipped
 * and said. Pure.
 */
export function factsOfResults(files: readonly ResultFile[]): { facts: ScorecardFact[]; lines: EvaluationLine[]; skipped: SkippedFile[] } {
  const skipped: SkippedFile[] = [];
  const seen = new Map<string, string>();
  const groups = new Map<string, Array<{ f: ResultFile; id: ReturnType<typeof identify>; at: number }>>();
  for (const f of [...files].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))) {
    const r = f.result;
    const at = Date.parse(r.finishedAt);
    if (Number.isNaN(at)) {
      skipped.push({ file: f.file, why: `finishedAt ${JSON.stringify(r.finishedAt)} is not a date` });
      continue;
    }
    const fingerprint = r.signature?.value ?? JSON.stringify([r.task.id, r.submission.sha ?? null, r.evaluationKey ?? null, r.finishedAt, r.verdict]);
    const twin = seen.get(fingerprint);
    if (twin) {
      skipped.push({ file: f.file, why: `the same result as ${twin} (counted once)` });
      continue;
    }
    seen.set(fingerprint, f.file);
    const id = identify(f);
    const group =
      id.pr !== null && id.owner && id.repo
        ? JSON.stringify([id.owner, id.repo, id.pr, r.task.id])
        : r.evaluationKey
          ? `key:${r.evaluationKey}`
          : id.headSha
            ? JSON.stringify([id.headSha, r.task.id])
            : `file:${f.file}`;
    const list = groups.get(group) ?? [];
    list.push({ f, id, at });
    groups.set(group, list);
  }

  const facts: ScorecardFact[] = [];
  const lines: EvaluationLine[] = [];
  for (const list of groups.values()) {
    const ordered = [...list].sort((a, b) => a.at - b.at || (a.f.file < b.f.file ? -1 : 1));
    const best = ordered.reduce((acc, x) => (VERDICT_RANK[x.f.result.verdict] > VERDICT_RANK[acc.f.result.verdict] ? x : acc), ordered[0] as (typeof ordered)[number]);
    const groupFirstAt = (ordered[0] as (typeof ordered)[number]).at;
    ordered.forEach((x, i) => {
      const r = x.f.result;
      const failed = r.probes.filter((p) => p.status === "failed").map((p) => p.category);
      facts.push({
        agent: x.id.agent, owner: x.id.owner, repo: x.id.repo, task: r.task.id, area: r.task.area, verdict: r.verdict,
        finishedAt: x.at, groupFirstAt, first: i === 0, best: x === best, failedMask: categoryMask(failed),
        durationS: r.durations.totalS, gpuSeconds: r.gpuSeconds,
      });
      lines.push({
        agent: x.id.agent, owner: x.id.owner, repo: x.id.repo, pr: x.id.pr, task: r.task.id, verdict: r.verdict, attempt: i + 1,
        finishedAt: new Date(x.at).toISOString(), first: i === 0, best: x === best, failedCategories: [...new Set(failed)],
        durationS: r.durations.totalS, headSha: x.id.headSha, evaluationKey: r.evaluationKey ?? null, runUrl: x.f.context?.runUrl ?? null, file: x.f.file,
      });
    });
  }
  return { facts, lines, skipped };
}
