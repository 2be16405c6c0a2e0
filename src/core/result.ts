import { z } from "zod";
import { CategorySchema, CheckStatusSchema, LocationSchema, MeasuredSchema } from "./probe-check.js";
import { DrawnParamsSchema } from "./probe-params.js";

export const RESULT_SCHEMA_VERSION = 1;

export const VerdictSchema = z.enum(["resolved", "official-failed", "probe-rejected", "error"]);
export type Verdict = z.infer<typeof VerdictSchema>;

/** A limit the submission ran into; it fails the submission (it is not a harness error). */
export const LimitSchema = z.enum(["wall-clock", "memory", "gpu-memory", "output", "pids", "disk"]);

export const FailingTestSchema = z.strictObject({
  name: z.string(),
  classname: z.string().default(""),
  file: z.string().nullish(),
  line: z.number().int().nullish(),
  kind: z.enum(["failure", "error"]),
  message: z.string().default(""),
});
export type FailingTest = z.infer<typeof FailingTestSchema>;

export const OfficialSchema = z.strictObject({
  passed: z.boolean(),
  /** Why the run did not pass, when it did not: the cross-check of exit code and report. */
  reason: z.string().nullish(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullish(),
  limit: LimitSchema.nullish(),
  reportFound: z.boolean(),
  counts: z.strictObject({
    total: z.number().int().min(0),
    passed: z.number().int().min(0),
    failed: z.number().int().min(0),
    errors: z.number().int().min(0),
    skipped: z.number().int().min(0),
  }),
  failing: z.array(FailingTestSchema),
  durationS: z.number().min(0),
  /** Peak memory of the test run, measured outside it: the run's cgroup, else sampled group RSS. */
  peakMemoryBytes: z.number().int().min(0).nullish(),
  memorySource: z.enum(["cgroup", "sampled"]).nullish(),
  /** A repository gate: failing tests that fail at the base too (reported, not the PR's; left out of `failing`). */
  failingAtBase: z.array(FailingTestSchema).nullish(),
  /** A repository gate: the run of the base's tests on the base's tree it was judged against. */
  base: z
    .strictObject({
      counts: z.strictObject({ total: z.number().int().min(0), passed: z.number().int().min(0), failed: z.number().int().min(0), errors: z.number().int().min(0), skipped: z.number().int().min(0) }),
      durationS: z.number().min(0),
      /** Taken from the runner's cache of base outcomes (another PR on the same base ran it). */
      cached: z.boolean(),
    })
    .nullish(),
});
export type OfficialResult = z.infer<typeof OfficialSchema>;

export const ProbeResultSchema = z.strictObject({
  id: z.string(),
  category: CategorySchema,
  status: CheckStatusSchema,
  message: z.string(),
  location: LocationSchema.nullish(),
  measured: MeasuredSchema.nullish(),
  /** Requirement ids of the task this check covers, as the probe named them. */
  requirements: z.array(z.string()).nullish(),
  /** The probe process (file stem) that emitted the check; never its source. */
  probe: z.string(),
  /** How many runs of the probe process this check had (time checks are measured up to 3 times). */
  attempts: z.number().int().min(1),
  durationS: z.number().min(0),
});
export type ProbeResult = z.infer<typeof ProbeResultSchema>;

/** One phase's GPU memory of record (bytes): Σ over the job's GPUs, above the phase's starting point. */
export const GpuPhasePeakSchema = z.strictObject({
  baselineBytes: z.number().int().min(0),
  peakBytes: z.number().int().min(0),
  samples: z.number().int().min(0),
});

/** One job of the evaluation on its slice of the runner (seconds from the evaluation's start). */
export const JobRecordSchema = z.strictObject({
  /** "official", or the probe process (file stem). */
  id: z.string(),
  kind: z.enum(["official", "probe"]),
  gpus: z.array(z.number().int().min(0)),
  /** Cores it was pinned to; empty where cores were not partitioned. */
  cores: z.array(z.number().int().min(0)),
  /** Its rendezvous port (MASTER_PORT). */
  port: z.number().int().min(1).max(65535),
  timing: z.boolean(),
  exclusive: z.boolean(),
  startS: z.number().min(0),
  endS: z.number().min(0),
  /** Seconds it queued for its slice. */
  waitedS: z.number().min(0),
});
export type JobRecord = z.infer<typeof JobRecordSchema>;

export const EnvironmentSchema = z.strictObject({
  platform: z.string(),
  node: z.string(),
  python: z.string().nullish(),
  torch: z.string().nullish(),
  cuda: z.string().nullish(),
  backend: z.enum(["gloo", "nccl"]),
  worldSize: z.number().int().min(1),
  gpus: z.array(z.strictObject({ index: z.number().int(), model: z.string(), memoryMiB: z.number(), driver: z.string() })),
  /** Whether submission code ran in the sandbox (false only with --unsandboxed). */
  sandboxed: z.boolean(),
  /** The cgroup version that limited and metered each run; null where none was usable. */
  cgroup: z.enum(["v1", "v2"]).nullish(),
  /**
   * The task's own Python environment (task.yml `environment:`) the jobs ran in: the sha256 of its
   * lock, its Python version and the system interpreter it is built on. Absent or null: the runner's
   * interpreter (no environment declared, or --python named one).
   */
  pythonEnv: z
    .strictObject({
      lockHash: z.string().regex(/^[0-9a-f]{64}$/),
      python: z.string(),
      interpreter: z.string(),
    })
    .nullish(),
});
export type Environment = z.infer<typeof EnvironmentSchema>;

export const SignatureSchema = z.strictObject({
  algorithm: z.literal("hmac-sha256"),
  keyId: z.string(),
  value: z.string().regex(/^[0-9a-f]{64}$/),
});

/** The result document of one evaluation (schema/result.schema.json is generated from this). */
export const EvaluationResultSchema = z.strictObject({
  schemaVersion: z.literal(RESULT_SCHEMA_VERSION),
  task: z.strictObject({
    id: z.string(),
    title: z.string(),
    area: z.string(),
    /** Content hash of the probe folder, so a result names the probe set it was judged by. */
    probeSet: z.string(),
  }),
  submission: z.strictObject({
    kind: z.enum(["folder", "git", "patch"]),
    source: z.string(),
    repo: z.string().nullish(),
    ref: z.string().nullish(),
    sha: z.string().nullish(),
    /** Repository gates: the PR base asked for, and the merge base the head was compared with. */
    prBase: z.strictObject({ asked: z.string(), mergeBase: z.string() }).nullish(),
  }),
  /**
   * Where the probe set came from, as checked out on the runner (the Action fills it before
   * signing): the evaluator repository's commit (tasks and workflow) and the probes repository's
   * commit. Null where a folder was not a git checkout. Scorecards split by these.
   */
  probeSetVersion: z.strictObject({ evaluatorCommit: z.string().nullable(), probesCommit: z.string().nullable() }).nullish(),
  /** The app's evaluation key (runner mode), so a signed result cannot be replayed for another evaluation. */
  evaluationKey: z.string().nullish(),
  verdict: VerdictSchema,
  /** One sentence for people: why this verdict. */
  reason: z.string(),
  official: OfficialSchema.nullable(),
  probes: z.array(ProbeResultSchema),
  /** Paths the engine restored or removed before running the official tests. */
  workspaceResets: z.array(z.strictObject({ path: z.string(), action: z.enum(["restored", "removed"]), why: z.string() })),
  durations: z.strictObject({
    workspaceS: z.number().min(0),
    officialS: z.number().min(0),
    probesS: z.number().min(0),
    totalS: z.number().min(0),
  }),
  gpuSeconds: z.number().min(0),
  /** The probe parameters drawn for this evaluation and their seed (`probegate eval --seed` reproduces them). */
  params: DrawnParamsSchema.nullish(),
  /**
   * GPU memory of record, measured outside the sandbox by the driver (nvidia-smi) on the GPUs given
   * to the job: per phase, the most they held at once above what they held when it began. Null on
   * a job without GPUs (or where the driver could not be read); a phase that did not run is null.
   */
  gpuMemory: z
    .strictObject({
      source: z.literal("nvidia-smi"),
      gpus: z.array(z.number().int().min(0)),
      official: GpuPhasePeakSchema.nullable(),
      probes: GpuPhasePeakSchema.nullable(),
    })
    .nullish(),
  environment: EnvironmentSchema,
  /** Each job (official tests, each probe process) with its GPUs, cores, port, start and end. */
  jobs: z.array(JobRecordSchema).nullish(),
  startedAt: z.string(),
  finishedAt: z.string(),
  error: z.strictObject({ phase: z.string(), message: z.string() }).nullish(),
  signature: SignatureSchema.nullish(),
});
export type EvaluationResult = z.infer<typeof EvaluationResultSchema>;

/**
 * A copy of `schema` that drops the object keys it does not know instead of refusing them, at
 * every depth. Only for reading results: writers stay strict.
 */
function lenient(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject) {
    return z.object(Object.fromEntries(Object.entries(schema.shape as Record<string, z.ZodType>).map(([k, v]) => [k, lenient(v)])));
  }
  if (schema instanceof z.ZodArray) return z.array(lenient(schema.element as z.ZodType));
  if (schema instanceof z.ZodNullable) return lenient(schema.unwrap() as z.ZodType).nullable();
  if (schema instanceof z.ZodOptional) return lenient(schema.unwrap() as z.ZodType).optional();
  return schema;
}

const ResultReadSchema = lenient(EvaluationResultSchema) as z.ZodType<EvaluationResult>;

/**
 * Reads a result written by this probegate or a newer one of the same schema version. A newer
 * writer may add fields; they are dropped here, after the caller has checked the signature over
 * the document as it came. A newer schema version is refused with a message that says so.
 */
export function readResult(json: unknown): { ok: true; result: EvaluationResult } | { ok: false; problem: string } {
  const version = (json as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (typeof version === "number" && version > RESULT_SCHEMA_VERSION) {
    return { ok: false, problem: `the result has schema version ${version}, newer than this probegate reads (${RESULT_SCHEMA_VERSION}); upgrade probegate here to the Action's version` };
  }
  const parsed = ResultReadSchema.safeParse(json);
  if (parsed.success) return { ok: true, result: parsed.data };
  const issues = parsed.error.issues.slice(0, 5).map((i) => `\`${i.path.join(".") || "(document)"}\`: ${i.message}`);
  return { ok: false, problem: `the result does not match the result schema: ${issues.join("; ")}` };
}

