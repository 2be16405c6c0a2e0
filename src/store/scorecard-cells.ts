import { EXACT_LIMIT } from "../core/median-sketch.js";
import { NO_AGENT, ScorecardBuilder, UNKNOWN_AREA, UNKNOWN_REPOSITORY, type Dimension, type Scorecard, type ScorecardBasis } from "../core/scorecard/scorecard.js";
import type { ScorecardCell, Tally } from "../core/scorecard/scorecard-tally.js";
import { CATEGORIES } from "../core/probe-check.js";
import type { StoreDb } from "./db.js";

/** Histogram dimension numbers of scorecard_durations (migration 7). */
const DIM_OF: Record<number, Dimension> = { 1: "repository", 2: "task", 3: "area", 4: "week" };
const WEEK_MS = 7 * 86_400_000;
/**
 * Reading a slice's exact durations costs a fraction of what folding a row in the full scan does
 * (one value, one sketch add, against ten tallies): past this many exact durations per attempt in
 * the store, the scan is cheaper.
 */
const SCAN_SHARE = 3;

/** The flags (scorecard_rows.counted) whose attempts a basis counts, as SQL; null for every attempt. */
function countedFlags(basis: ScorecardBasis): string | null {
  return basis === "all" ? null : basis === "first-attempt" ? "(1, 3)" : "(2, 3)";
}

/**
 * The scorecard of every attempt in the store (no repository or `since` filter) from the cells
 * migration 7's triggers keep: a few thousand rows of counts instead of one per attempt, so it
 * costs about the same at a million evaluations as at ten thousand. Figures are those of the full
 * scan (scorecardScan): counts and rates exactly; GPU minutes up to float rounding (summed in
 * another order); medians the same as the scan's MedianSketch: exact for slices of at most
 * EXACT_LIMIT timed attempts (their durations read through an index), from the same 1%-wide
 * buckets above that. With `unlessScanIsCheaper`, null when the small slices' exact durations
 * would read more rows than the full scan (a small store: most slices under EXACT_LIMIT).
 */
export function scorecardFromCells(db: StoreDb, basis: ScorecardBasis, opts: { unlessScanIsCheaper?: boolean } = {}): Scorecard | null {
  const builder = new ScorecardBuilder(basis);
  const flags = countedFlags(basis);
  const cats = CATEGORIES.map((_, i) => `cat${i}`).join(", ");
  const rows = db
    .prepare(
      `SELECT json_extract(agent_j, '$'), owner, repo, task, json_extract(area_j, '$'), wk, flags, n, resolved, rejected, official_failed, errors, ${cats}, timed, gpu
       FROM scorecard_cells WHERE n <> 0 ${flags ? "AND flags <> 0" : ""}`,
    )
    .raw(true);
  const cell: ScorecardCell = { agent: null, owner: null, repo: null, task: "", area: null, week: 0, first: false, best: false, n: 0, verdicts: [0, 0, 0, 0], categories: CATEGORIES.map(() => 0), timed: 0, gpuSeconds: 0 };
  const verdicts = cell.verdicts as number[];
  const categories = cell.categories as number[];
  /** Each agent name's stored agent values (NO_AGENT stands for NULL and for anyone named so). */
  const rawAgents = new Map<string, Set<string | null>>();
  let attempts = 0;
  for (const r of rows.iterate() as IterableIterator<unknown[]>) {
    cell.agent = r[0] as string | null;
    cell.owner = r[1] as string;
    cell.repo = r[2] as string;
    cell.task = r[3] as string;
    cell.area = r[4] as string | null;
    cell.week = r[5] as number;
    cell.first = ((r[6] as number) & 1) !== 0;
    cell.best = ((r[6] as number) & 2) !== 0;
    cell.n = r[7] as number;
    for (let i = 0; i < 4; i++) verdicts[i] = r[8 + i] as number;
    for (let i = 0; i < categories.length; i++) categories[i] = r[12 + i] as number;
    cell.timed = r[12 + categories.length] as number;
    cell.gpuSeconds = r[13 + categories.length] as number;
    builder.addCell(cell);
    attempts += cell.n;
    const name = cell.agent ?? NO_AGENT;
    let raw = rawAgents.get(name);
    if (!raw) rawAgents.set(name, (raw = new Set()));
    raw.add(cell.agent);
  }
  let exactRows = 0;
  builder.forEachSlice((_agent, _dim, _key, t) => {
    if (t.timedPending > 0 && t.timedPending <= EXACT_LIMIT) exactRows += t.timedPending;
  });
  if (opts.unlessScanIsCheaper && exactRows > SCAN_SHARE * attempts) return null;
  bucketedDurations(db, builder, flags);
  const everyone = [...new Set([...rawAgents.values()].flatMap((s) => [...s]))];
  const exact = exactDurations(db, basis);
  builder.forEachSlice((agent, dim, key, tally) => {
    if (tally.timedPending === 0 || tally.timedPending > EXACT_LIMIT) return;
    for (const raw of agent === null ? everyone : [...(rawAgents.get(agent) ?? [])]) for (const d of exact(raw, dim, key)) tally.durations.add(d);
  });
  return builder.build();
}

/** Gives each slice past EXACT_LIMIT timed attempts its histogram from scorecard_durations. */
function bucketedDurations(db: StoreDb, builder: ScorecardBuilder, flags: string | null): void {
  const big = (t: Tally | undefined) => (t && t.timedPending > EXACT_LIMIT ? t : undefined);
  const labels = new Map<string, string>();
  const label = (dim: Dimension, keyJson: string): string => {
    const memo = `${dim}\u0000${keyJson}`;
    let l = labels.get(memo);
    if (l !== undefined) return l;
    const k = JSON.parse(keyJson) as string | number | null;
    if (dim === "repository") l = k === null ? UNKNOWN_REPOSITORY : String(k);
    else if (dim === "area") l = k === null ? UNKNOWN_AREA : String(k);
    else if (dim === "week") l = builder.week(k as number);
    else l = String(k);
    labels.set(memo, l);
    return l;
  };
  const names = new Map<string, string>();
  const stmt = db
    .prepare(
      `SELECT dim, agent_j, key_j, bucket, SUM(n) FROM scorecard_durations ${flags ? `WHERE flags IN ${flags}` : ""}
       GROUP BY dim, agent_j, key_j, bucket HAVING SUM(n) <> 0`,
    )
    .raw(true);
  let slice = "";
  let targets: Tally[] = [];
  for (const r of stmt.iterate() as IterableIterator<[number, string, string, number, number]>) {
    const [dimNo, agentJson, keyJson, bucket, n] = r;
    const at = `${dimNo}\u0000${agentJson}\u0000${keyJson}`;
    if (at !== slice) {
      slice = at;
      const dim = DIM_OF[dimNo] as Dimension;
      let name = names.get(agentJson);
      if (name === undefined) names.set(agentJson, (name = (JSON.parse(agentJson) as string | null) ?? NO_AGENT));
      const key = label(dim, keyJson);
      const found = [big(builder.slice(name, dim, key)), big(builder.slice(null, dim, key))];
      if (dim === "repository") found.push(big(builder.slice(name, null, "")), big(builder.slice(null, null, "")));
      targets = found.filter((t): t is Tally => t !== undefined);
    }
    for (const t of targets) t.durations.addToBucket(bucket, n);
  }
}

/**
 * A reader of one slice's exact durations for one stored agent value, from scorecard_rows through
 * migration 7's (agent, …) indexes: for slices small enough that MedianSketch keeps them exactly.
 */
function exactDurations(db: StoreDb, basis: ScorecardBasis): (agent: string | null, dim: Dimension | null, key: string) => number[] {
  const counted = basis === "all" ? "" : `AND (counted & ${basis === "first-attempt" ? 1 : 2}) <> 0`;
  const by = (cond: string) => db.prepare(`SELECT duration_s FROM scorecard_rows WHERE agent IS ? AND ${cond} AND duration_s IS NOT NULL ${counted}`).pluck();
  const stmts = {
    all: by("1"),
    repository: by("owner = ? AND repo = ?"),
    unknownRepository: by("(owner = '' OR repo = '')"),
    task: by("task = ?"),
    area: by("area = ?"),
    noArea: by("area IS NULL"),
    week: by("finished_at >= ? AND finished_at < ?"),
  };
  return (agent, dim, key) => {
    if (dim === null) return stmts.all.all(agent) as number[];
    if (dim === "repository") {
      if (key === UNKNOWN_REPOSITORY) return stmts.unknownRepository.all(agent) as number[];
      const cut = key.indexOf("/");
      return stmts.repository.all(agent, key.slice(0, cut), key.slice(cut + 1)) as number[];
    }
    if (dim === "task") return stmts.task.all(agent, key) as number[];
    // Two lookups rather than an OR, which SQLite would not answer from the (agent, area) index.
    if (dim === "area") return [...(key === UNKNOWN_AREA ? (stmts.noArea.all(agent) as number[]) : []), ...(stmts.area.all(agent, key) as number[])];
    const start = Date.parse(`${key}T00:00:00Z`);
    return stmts.week.all(agent, start, start + WEEK_MS) as number[];
  };
}
