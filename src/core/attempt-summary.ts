import type { Verdict } from "./result.js";

/** How good a verdict is for the submission: resolved beats passing the official tests only, which beats failing them; an error judged nothing. */
export const VERDICT_RANK: Readonly<Record<Verdict, number>> = {
  resolved: 3,
  "probe-rejected": 2,
  "official-failed": 1,
  error: 0,
};

/** One finished attempt of a (repo, PR, task): which evaluation, which attempt of it, what it got. */
export interface AttemptResult {
  evaluationKey: string;
  attempt: number;
  headSha: string;
  verdict: Verdict;
  finishedAt: Date;
}

/** First-attempt and best-of-N of the attempts at one (repo, PR, task). */
export interface AttemptSummary {
  attempts: number;
  first: AttemptResult;
  best: AttemptResult;
}

/**
 * Both numbers the scorecards need, since they say different things: the first attempt is what the
 * agent delivered unaided; best-of-N is what reruns (and pushes) reached. Ties for best go to the
 * earliest. Null when nothing has finished.
 */
export function summarizeAttempts(results: ReadonlyArray<AttemptResult>): AttemptSummary | null {
  const ordered = [...results].sort(
    (a, b) => a.finishedAt.getTime() - b.finishedAt.getTime() || a.attempt - b.attempt || a.evaluationKey.localeCompare(b.evaluationKey),
  );
  const first = ordered[0];
  if (!first) return null;
  const best = ordered.reduce((acc, r) => (VERDICT_RANK[r.verdict] > VERDICT_RANK[acc.verdict] ? r : acc), first);
  return { attempts: ordered.length, first, best };
}
