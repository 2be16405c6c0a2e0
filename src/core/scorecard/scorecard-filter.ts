/** Which attempts of which repositories a scorecard counts, from flags or a URL's query, and in words. */

/** Which attempts a scorecard counts: each (repo, PR, task) group's first, its best, or every attempt. */
export type ScorecardBasis = "first-attempt" | "best-of-n" | "all";

/** Which attempts of which repositories a scorecard counts. */
export interface ScorecardFilter {
  basis: ScorecardBasis;
  owner?: string;
  repo?: string;
  /** Only (repo, PR, task) groups whose first attempt finished at or after this. */
  since?: Date;
  /**
   * Only attempts judged by this probe set: a prefix of the evaluator commit (the app's probe-set
   * version), of the probes repository's commit, or of the probe folder's hash.
   */
  probeSet?: string;
}

const BASES: readonly ScorecardBasis[] = ["first-attempt", "best-of-n", "all"];

/**
 * A scorecard filter from text (CLI flags, a dashboard URL's query). On bad input, the field
 * (`basis`, `repo`, `since`) and what was wrong with its value. Pure.
 */
export function parseScorecardFilter(input: { basis?: string | null; repo?: string | null; since?: string | null; probeSet?: string | null }):
  | { ok: true; filter: ScorecardFilter }
  | { ok: false; field: "basis" | "repo" | "since" | "probe-set"; message: string } {
  const basis = input.basis ?? "first-attempt";
  if (!BASES.includes(basis as ScorecardBasis)) return { ok: false, field: "basis", message: `'${basis}': expected ${BASES.slice(0, -1).join(", ")} or ${BASES.at(-1)}` };
  const filter: ScorecardFilter = { basis: basis as ScorecardBasis };
  if (input.repo) {
    const m = /^([A-Za-z0-9_.-]+)(?:\/([A-Za-z0-9_.-]+))?$/.exec(input.repo);
    if (!m) return { ok: false, field: "repo", message: `'${input.repo}': expected OWNER or OWNER/NAME` };
    filter.owner = m[1];
    if (m[2]) filter.repo = m[2];
  }
  if (input.since) {
    const d = /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$/.test(input.since) ? new Date(input.since) : new Date(NaN);
    if (Number.isNaN(d.getTime())) return { ok: false, field: "since", message: `'${input.since}': expected a date like 2026-11-01 or 2026-11-01T12:00:00Z` };
    filter.since = d;
  }
  if (input.probeSet) {
    const v = input.probeSet.trim().replace(/^sha256:/, "");
    if (!/^[0-9a-f]{7,64}$/i.test(v)) return { ok: false, field: "probe-set", message: `'${input.probeSet}': expected a commit or probe-set hash (at least 7 hex digits)` };
    filter.probeSet = v.toLowerCase();
  }
  return { ok: true, filter };
}

/** Whether a result was judged by the probe set a filter names (a prefix of either commit or of the folder's hash). */
export function judgedByProbeSet(result: { task: { probeSet: string }; probeSetVersion?: { evaluatorCommit: string | null; probesCommit: string | null } | null }, probeSet: string): boolean {
  const v = result.probeSetVersion;
  return [result.task.probeSet.replace(/^sha256:/, ""), v?.evaluatorCommit, v?.probesCommit].some((x) => typeof x === "string" && x.toLowerCase().startsWith(probeSet));
}

/** Words for what a filter covers: "all repositories", "octo", "octo/gpu-lib". */
export function scopeOf(filter: ScorecardFilter): string {
  const where = filter.owner ? `${filter.owner}${filter.repo ? `/${filter.repo}` : ""}` : "all repositories";
  return filter.probeSet ? `${where}, probe set ${filter.probeSet}` : where;
}

const BASIS_WORDS: Record<ScorecardBasis, string> = {
  "first-attempt": "first attempt per PR and task (what the agent delivered unaided)",
  "best-of-n": "best attempt per PR and task (after reruns and pushes)",
  all: "every finished attempt",
};

/** What a scorecard counted, in words. */
export function describeBasis(basis: ScorecardBasis): string {
  return BASIS_WORDS[basis];
}

