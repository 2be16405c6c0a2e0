import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { classifyMutant } from "../../core/mutants/mutant-outcome.js";
import type { MutantRecord } from "../../core/mutants/mutants-score.js";
import type { EvaluationResult } from "../../core/result.js";
import { InputError } from "../errors.js";
import { evaluate } from "../evaluate.js";
import type { JobPool } from "../jobs/job-pool.js";
import { KIT_DIR } from "../package-paths.js";
import { probeSetVersion } from "../probe-set.js";
import type { LoadedTask } from "../task-load.js";
import { cacheKey, specHash, type CachedOutcome, type MutantCache } from "./mutant-cache.js";
import type { Upstream } from "../../core/mutants/mutants-file.js";
import { generateMutants, type Generation } from "./generate-mutants.js";
import { generateGateMutants, type GateGeneration } from "./gate-mutants.js";

/** What one task's mutant run needs. */
export interface MutantRunOptions {
  task: LoadedTask;
  /** An assignment's reference change, whose added lines are mutated; */
  referencePatch?: string;
  /** or a repository gate's upstream files at a pinned commit (the repository to clone them from). */
  gate?: { upstream: Upstream; repo: string };
  mutationPython: string;
  pool: JobPool;
  /** Evaluations in progress at once. */
  jobs: number;
  cache: MutantCache;
  /** Start no evaluation once this instant (ms since the epoch) has passed. */
  deadline: number;
  /** Wall clock of each mutant's test and probe runs; default: from the reference's own durations. */
  mutantTimeoutS?: number;
  python?: string;
  unsandboxed?: boolean;
  signal?: AbortSignal;
  log: (line: string) => void;
}

/** The evaluated mutants of one task and how the run went. */
export interface MutantRun {
  records: MutantRecord[];
  generation: Generation;
  probeSet: string;
  evaluated: number;
  cached: number;
  notEvaluated: number;
  timeoutS: number;
  wallS: number;
}

/** Stands for the probe set in the key of a mutant the official tests killed (the probes never ran). */
const OFFICIAL_PHASE = "official-phase";

/** The reference's own phases bound a mutant's: 3× the slower phase and 10 s to spare, at least 15 s. */
export function mutantTimeout(reference: { officialS: number; probesS: number }): number {
  return Math.max(15, Math.ceil(3 * Math.max(reference.officialS, reference.probesS)) + 10);
}

/** The task as the mutants see it: its test and probe runs stopped after `timeoutS` (never later than the task says). */
function tightened(task: LoadedTask, timeoutS: number): LoadedTask {
  const s = task.spec;
  return { ...task, spec: { ...s, official: { ...s.official, timeout: Math.min(s.official.timeout, timeoutS) }, probes: { ...s.probes, timeout: Math.min(s.probes.timeout, timeoutS) } } };
}

function outcomeOf(result: EvaluationResult): CachedOutcome {
  const c = classifyMutant(result);
  return { outcome: c.outcome, passedOfficial: c.passedOfficial, detail: c.detail, durationS: result.durations.totalS, officialS: result.durations.officialS, probesS: result.durations.probesS };
}

/**
 * Makes the mutants of a task's reference change and evaluates each as a submission on the
 * shared job pool (official tests first; the engine runs the probes only for those that pass
 * them), `jobs` at a time. The reference is evaluated first (it must resolve: mutants of a change
 * the gate rejects measure nothing) and its durations set the mutants' wall clock. Outcomes are
 * cached by mutant content, probe-set version, task spec hash and wall clock (a kill by the official
 * tests without the probe set and the wall clock: the probes never ran); errors are not.
 */
export async function runMutants(o: MutantRunOptions): Promise<MutantRun> {
  const started = Date.now();
  if (!o.gate === !o.referencePatch) throw new Error("runMutants: give either a reference change or a gate's upstream");
  const gate: GateGeneration | null = o.gate ? await generateGateMutants(o.task, o.gate.upstream, o.gate.repo, o.mutationPython) : null;
  const generation = gate ?? (await generateMutants(o.task, o.referencePatch as string, o.mutationPython));
  const probeSet = probeSetVersion(o.task.probesDir);
  const spec = specHash(o.task.file);
  const scratch = mkdtempSync(join(tmpdir(), `probegate-mutants-${o.task.spec.id}-`));
  let evaluated = 0;
  let cached = 0;
  let notEvaluated = 0;
  const common = { kitDir: KIT_DIR, python: o.python, unsandboxed: o.unsandboxed, pool: o.pool };
  // A gate's mutant is a commit on top of the pinned one, evaluated as a PR against it; an assignment's a patch of its base.
  const evaluateOne = async (task: LoadedTask, patch: string, sha?: string): Promise<EvaluationResult> =>
    gate ? evaluate({ task, submission: { kind: "git", repo: gate.repo, ref: sha as string }, prBase: gate.commit, ...common }) : evaluate({ task, submission: { kind: "patch", path: patch }, ...common });
  const referenceLabel = gate ? `the pinned commit ${gate.commit.slice(0, 12)} (one comment line added to each mutated file)` : (o.referencePatch as string);
  try {
    const refKey = cacheKey({ diff: gate ? gate.reference.diff : readFileSync(o.referencePatch as string, "utf8"), probeSet, specHash: spec, timeoutS: null });
    let reference = o.cache.get(refKey);
    if (!reference && (Date.now() > o.deadline || o.signal?.aborted)) {
      // The budget ran out on an earlier task: the reference would start past it (minutes of
      // official tests and probes) only to evaluate no mutant. Nothing of this task is evaluated.
      o.log(`  ${o.task.spec.id}: --budget reached before its reference was evaluated; none of its ${generation.mutants.length} mutants evaluated`);
      return { records: [], generation, probeSet, evaluated: 0, cached: 0, notEvaluated: generation.mutants.length, timeoutS: o.mutantTimeoutS ?? 0, wallS: (Date.now() - started) / 1000 };
    }
    if (!reference) {
      o.log(`  reference ${referenceLabel} …`);
      const result = await evaluateOne(o.task, o.referencePatch ?? "", gate?.reference.sha);
      if (result.verdict !== "resolved") {
        const what = gate ? `the gate does not resolve ${referenceLabel}, a change of no behaviour` : `the reference change ${o.referencePatch} is not resolved`;
        throw new InputError(`${o.task.spec.id}: ${what} (${result.verdict}: ${result.reason}); its mutants would measure nothing — fix the ${gate ? "gate" : "task or the reference"} first`, { file: o.referencePatch ?? join(o.task.dir, "mutants.yml") });
      }
      reference = outcomeOf(result);
      o.cache.put(refKey, reference);
    }
    const timeoutS = o.mutantTimeoutS ?? mutantTimeout(reference);
    const task = tightened(o.task, timeoutS);
    o.log(`probegate validate --mutants ${o.task.spec.id}: ${generation.mutants.length} mutants of ${generation.files.map((f) => `${f.path} (${f.lines.length} lines)`).join(", ")}; ${o.jobs} at a time, ${timeoutS} s wall clock each`);
    const records: Array<MutantRecord | null> = generation.mutants.map(() => null);
    // Evaluated in an order fixed by a hash of each id, not operator by operator: a run cut short by
    // --budget then covers a spread of operators and lines, and the next run picks up the rest.
    const order = generation.mutants.map((m, i) => ({ i, h: createHash("sha256").update(m.id).digest("hex") })).sort((a, b) => (a.h < b.h ? -1 : 1)).map((x) => x.i);
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < order.length) {
        const i = order[next++] as number;
        const m = generation.mutants[i] as (typeof generation.mutants)[number];
        const key = cacheKey({ diff: m.diff, probeSet, specHash: spec, timeoutS });
        // A failing official test decides a mutant without the probes: that outcome is kept under a
        // key without the probe set and the wall clock (which follows the reference's probe time), so
        // a changed probe re-runs only the mutants that reached it. It holds for any wall clock the
        // tests finished within.
        const officialKey = cacheKey({ diff: m.diff, probeSet: OFFICIAL_PHASE, specHash: spec, timeoutS: null });
        const decided = o.cache.get(officialKey);
        let out = o.cache.get(key) ?? (decided && decided.officialS <= timeoutS ? decided : undefined);
        const fromCache = out !== undefined;
        if (!out) {
          if (Date.now() > o.deadline || o.signal?.aborted) {
            notEvaluated++;
            continue;
          }
          const file = join(scratch, `mutant-${i}.patch`);
          writeFileSync(file, m.diff);
          out = outcomeOf(await evaluateOne(task, file, (m as { sha?: string }).sha));
          if (out.outcome !== "error") o.cache.put(out.outcome === "killedByOfficial" ? officialKey : key, out);
          evaluated++;
        } else {
          cached++;
          // A cache written before kills were kept apart: keep this one apart now.
          if (out.outcome === "killedByOfficial" && !decided) o.cache.put(officialKey, out);
        }
        done++;
        records[i] = { ...m, outcome: out.outcome, passedOfficial: out.passedOfficial, detail: out.detail, durationS: out.durationS, cached: fromCache };
        o.log(`  [${done}/${generation.mutants.length}] ${m.id} → ${out.outcome}${fromCache ? " (cached)" : ""} ${out.detail ? `(${out.detail.slice(0, 100)})` : ""}`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.jobs, generation.mutants.length)) }, worker));
    return { records: records.filter((r): r is MutantRecord => r !== null), generation, probeSet, evaluated, cached, notEvaluated, timeoutS, wallS: (Date.now() - started) / 1000 };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    gate?.dispose();
  }
}
