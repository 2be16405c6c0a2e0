import { z } from "zod";
import { parseByteSize } from "./sizes.js";
import { ProbeParamsSchema } from "./probe-params.js";
import { PythonEnvironmentSchema, RequiresSchema, SetupSchema } from "./task-environment.js";

/** Task ids and probe ids share one shape so they are safe in paths, check-run names and SQL keys. */
export const ID_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

const byteSize = z
  .union([z.string(), z.number()])
  .transform((v, ctx) => {
    const n = parseByteSize(v);
    if (n === undefined) {
      ctx.addIssue({ code: "custom", message: `not a size: ${JSON.stringify(v)} (write e.g. 8GiB, 512MiB, 1048576)` });
      return z.NEVER;
    }
    return n;
  });

const command = z
  .array(z.string().min(1))
  .min(1, "a command is a non-empty list of arguments, e.g. [\"{python}\", \"-m\", \"pytest\"]");

const seconds = z.number().positive().max(24 * 3600);

/**
 * One requirement the prompt states (an argument and its allowed values, an error path and the
 * state it must leave, a bound, a resource claim). Probe checks name the ids they cover, so
 * `probegate validate` can say which stated requirement nothing checks.
 */
export const RequirementSchema = z.strictObject({
  id: z.string().regex(ID_PATTERN, "lower-case letters, digits, '.', '_' and '-'"),
  text: z.string().min(1).describe("the requirement as the prompt states it"),
});
export type Requirement = z.infer<typeof RequirementSchema>;

export const BaseSchema = z.union([
  z.strictObject({ path: z.string().min(1).describe("folder with the base code, relative to the task folder") }),
  z.strictObject({
    git: z.strictObject({
      repo: z.string().min(1).describe("git URL or path of the repository"),
      ref: z.string().min(1).describe("branch, tag or commit"),
    }),
    overlay: z.string().min(1).optional().describe("folder copied over the exported tree, relative to the task folder (the change's test files, as `task import` keeps them)"),
  }),
  z.strictObject({
    pr: z.literal(true).describe("a repository gate: the workspace is the PR's head (--submission repo@head), its base commit (--pr-base) sits beside it read-only"),
  }),
]);

/**
 * Which of the repository's own tests a repository gate runs: a fixed list, tests mapped from the
 * paths the PR changes, or both. They replace `{tests}` in `official.command`.
 */
export const TestSelectionSchema = z.strictObject({
  tests: z.array(z.string().min(1)).default([]).describe("test files, folders or ids that always run"),
  fromPaths: z
    .array(
      z.strictObject({
        paths: z.array(z.string().min(1)).min(1).describe("globs of changed paths (a leading '!' excludes)"),
        tests: z.array(z.string().min(1)).min(1).describe("tests to run when a changed path matches"),
      }),
    )
    .default([])
    .describe("tests mapped from the paths the PR changes"),
});
export type TestSelection = z.infer<typeof TestSelectionSchema>;

/** How one probe process is packed onto the runner (docs/task-format.md, "Packing"). */
export const ProbeJobSchema = z.strictObject({
  gpus: z.number().int().min(0).max(64).optional().describe("GPUs (ranks) this probe needs; default: the task's world size. On a GPU runner with fewer, the evaluation fails before anything runs"),
  timing: z.boolean().optional().describe("it measures time: it gets GPUs and cores of its own (default: true for a file named for the time category, e.g. probe_time.py)"),
  cores: z
    .number()
    .int()
    .min(1)
    .max(1024)
    .optional()
    .describe("CPU cores it is pinned to on a runner without GPUs (default: one per rank): a probe whose code starts processes of its own, such as a repository's tests that spawn their ranks, asks for them here; a runner with fewer gives it all it has"),
  exclusive: z.boolean().default(false).describe("nothing else runs on the runner while it does"),
});

export const TaskSpecSchema = z
  .strictObject({
    id: z.string().regex(ID_PATTERN, "lower-case letters, digits, '.', '_' and '-'"),
    title: z.string().min(1),
    area: z.enum(["training", "inference", "rl", "other"]),
    prompt: z.string().min(1).default("prompt.md").describe("the prompt file, relative to the task folder"),
    base: BaseSchema,
    gpus: z.number().int().min(0).max(64).default(1).describe("GPUs (ranks) the task wants on a GPU runner"),
    minRanks: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(1)
      .describe("the fewest ranks the task's code and probes mean anything on (e.g. 2 for a trainer and a rollout group); a smaller --world-size is refused"),
    official: z.strictObject({
      command,
      timeout: seconds.default(600),
      files: z.array(z.string().min(1)).min(1).default(["tests/**"]).describe("globs of official test files: restored from the base (assignments); compared with the base by the weakened-test guard (repository gates)"),
      select: TestSelectionSchema.optional().describe("repository gates: which of the repository's tests replace {tests} in the command"),
      allowChanged: z.array(z.string().min(1)).default([]).describe("repository gates: test ids or file globs the PR may change, delete or weaken; the guard reports such changes as allowed, never silently"),
    }),
    probes: z.strictObject({
      path: z.string().min(1).describe("folder of the hidden probes, relative to the task folder"),
      pattern: z.string().min(1).default("probe_*.py"),
      command: command.default(["{python}", "{probe}"]),
      timeout: seconds.default(300),
      gpus: z.number().int().min(0).max(64).optional(),
      jobs: z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/, "a probe file's name without its extension, e.g. probe_time"), ProbeJobSchema).default({}).describe("per probe process (file stem): the GPUs it needs and whether it times anything; the engine packs probe processes onto the runner by it"),
    }),
    limits: z
      .strictObject({
        wallClock: seconds.default(3600),
        memory: byteSize.default(8 * 2 ** 30),
        outputBytes: byteSize.default(16 * 2 ** 20),
        gpuMemory: byteSize
          .optional()
          .describe("GPU memory the job may hold at once, summed over its GPUs, above what they held when the phase began (read by nvidia-smi outside the sandbox); none: measured, not limited"),
      })
      .default({ wallClock: 3600, memory: 8 * 2 ** 30, outputBytes: 16 * 2 ** 20 }),
    interfaces: z.array(z.string().min(1)).default([]).describe("names the probes call; each must appear in the prompt"),
    requirements: z.array(RequirementSchema).default([]).describe("what the prompt states, with ids the probes' checks name (emit(..., requirements=[...]))"),
    params: ProbeParamsSchema.default({}).describe("parameters the probes draw fresh per evaluation (PROBEGATE_PARAMS), from a seed recorded in the result"),
    setup: SetupSchema.optional().describe("judge-owned files beside the workspace (pytest plugin, compatibility shim)"),
    environment: PythonEnvironmentSchema.optional().describe("the task's pinned Python environment (a hash-checked lock, or for a repository gate what its merge base declares), built once per runner; without it, {python} is the runner's interpreter"),
    requires: RequiresSchema.describe("what the runner must have (torch range, GPUs, CUDA); unmet: verdict error naming it"),
  })
  .superRefine((t, ctx) => {
    const seen = new Set<string>();
    t.requirements.forEach((r, i) => {
      if (seen.has(r.id)) ctx.addIssue({ code: "custom", path: ["requirements", i, "id"], message: `'${r.id}' is listed twice` });
      seen.add(r.id);
    });
    const gate = "pr" in t.base;
    const usesTests = t.official.command.some((a) => a.includes("{tests}"));
    if (t.official.select && !usesTests) {
      ctx.addIssue({ code: "custom", path: ["official", "select"], message: "selects tests, but official.command has no {tests} to put them in" });
    }
    if (gate && usesTests && !t.official.select) {
      ctx.addIssue({ code: "custom", path: ["official", "select"], message: "is required: official.command has {tests} and a repository gate (base: {pr: true}) chooses them from select.tests and select.fromPaths" });
    }
    if (!gate && (t.official.select || t.official.allowChanged.length)) {
      ctx.addIssue({ code: "custom", path: ["official", t.official.select ? "select" : "allowChanged"], message: "is for repository gates (base: {pr: true}); an assignment runs its own official command on its fixed base" });
    }
    if (t.environment?.fromTree && !gate) {
      ctx.addIssue({ code: "custom", path: ["environment", "fromTree"], message: "is for repository gates (base: {pr: true}), whose base moves with each PR; a fixed base has a fixed lock (environment.lock)" });
    }
    if (t.gpus > 0 && t.minRanks > t.gpus) {
      ctx.addIssue({ code: "custom", path: ["minRanks"], message: `is ${t.minRanks}, more than gpus (${t.gpus}), the ranks the task runs on by default` });
    }
  })
  .describe("probegate task spec (tasks/<id>/task.yml)");

export type TaskSpec = z.infer<typeof TaskSpecSchema>;
export type TaskSpecInput = z.input<typeof TaskSpecSchema>;
