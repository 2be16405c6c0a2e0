import picomatch from "picomatch";
import { z } from "zod";
import { ID_PATTERN } from "./task-spec.js";

const id = z.string().regex(ID_PATTERN, "lower-case letters, digits, '.', '_' and '-'");
const agentName = z.string().trim().min(1, "an agent name, e.g. codex");
const nameMap = (what: string) =>
  z.record(z.string().trim().min(1), agentName).default({}).describe(`${what} → agent name`);

export const AgentsConfigSchema = z.strictObject({
  defaults: z.boolean().default(true).describe("whether the built-in agent logins, co-authors and branch prefixes apply"),
  authors: nameMap("PR author login (e.g. my-agent[bot])"),
  coAuthors: nameMap("Co-authored-by e-mail address (or name, for trailers without one)"),
  branchPrefixes: nameMap("head-branch prefix (e.g. aider/)"),
  labels: nameMap("PR label"),
});

export const RouteSchema = z
  .strictObject({
    task: id.optional().describe("the task this route evaluates"),
    suite: id.optional().describe("the probe suite this route evaluates"),
    labels: z.array(z.string().min(1)).default([]).describe("any of these labels on the PR selects the route"),
    paths: z.array(z.string().min(1)).default([]).describe("globs (picomatch) of changed files; a file matching any glob and no !-glob selects the route"),
    marker: z
      .boolean()
      .default(false)
      .describe("whether a PR-body line `probegate-task: <task>` (or `probegate-suite: <suite>`) selects the route"),
    gpus: z
      .number()
      .int()
      .min(0)
      .max(64)
      .optional()
      .describe("GPUs the target needs, for choosing a runner from `runners`; default: the `gpus` of tasks/<task>/task.yml in the evaluator repository"),
  })
  .superRefine((r, ctx) => {
    if ((r.task === undefined) === (r.suite === undefined)) {
      ctx.addIssue({ code: "custom", message: "a route names exactly one of 'task' or 'suite'", path: r.task === undefined ? [] : ["suite"] });
    }
    if (r.labels.length === 0 && r.paths.length === 0 && !r.marker) {
      ctx.addIssue({ code: "custom", message: "a route needs 'labels', 'paths' or 'marker: true', or it never matches", path: [] });
    }
  });
export type Route = z.infer<typeof RouteSchema>;

export const EvaluatorSchema = z.strictObject({
  repository: z.string().regex(/^[A-Za-z0-9-]+\/[A-Za-z0-9._-]+$/, "owner/name of the repository holding the evaluator workflow"),
  workflow: z.string().min(1).describe("workflow file name (e.g. evaluate.yml) or id"),
  ref: z.string().min(1).default("main").describe("branch or tag to dispatch the workflow on"),
  timeoutMinutes: z.number().positive().max(24 * 60).default(120).describe("an evaluation not finished after this long is timed out"),
  tasksPath: z.string().min(1).default("tasks").describe("folder of the evaluator repository holding <task>/task.yml, read for a task's GPU count when `runners` is set"),
});

const RERUN_DEFAULTS = { perPrPerHour: 3, allowAgent: false };
export const RerunsSchema = z.strictObject({
  perPrPerHour: z.number().int().min(0).max(100).default(RERUN_DEFAULTS.perPrPerHour).describe("accepted reruns per PR in any hour; 0 turns reruns off"),
  allowAgent: z.boolean().default(RERUN_DEFAULTS.allowAgent).describe("whether the agent that wrote the PR may ask for reruns of it"),
});

const BUDGET_DEFAULTS = { perPrPerHour: 4 };
export const BudgetSchema = z.strictObject({
  perPrPerHour: z
    .number()
    .int()
    .min(1, "must be at least 1 (a PR must be evaluated at some point)")
    .max(1000)
    .default(BUDGET_DEFAULTS.perPrPerHour)
    .describe("PR heads evaluated per PR in any rolling hour; a push beyond it is evaluated when the window frees up (repeated pushes are an oracle on the hidden probes)"),
});

export const AGENT_DETAIL = ["categories", "full"] as const;
export type AgentDetail = (typeof AGENT_DETAIL)[number];
const FEEDBACK_DEFAULTS = { agentDetail: "categories" as AgentDetail };
export const FeedbackSchema = z.strictObject({
  agentDetail: z
    .enum(AGENT_DETAIL)
    .default(FEEDBACK_DEFAULTS.agentDetail)
    .describe("what the check run of an agent-authored PR shows of the hidden probes: `categories` (counts per category, no probe ids, messages or locations) or `full`; maintainers always see the full messages in the evaluator run and the store"),
});

export const AllowUnsandboxedSchema = z.strictObject({
  reason: z
    .string()
    .trim()
    .min(10, "say why this repository accepts results made without the sandbox (at least 10 characters); it is shown at the top of every such check run"),
});

/** `runners:` keys are GPU counts; YAML reads `2:` as the number 2, which an object keeps as the key "2". */
export const RunnersSchema = z
  .record(z.string().regex(/^\d+$/, "a GPU count (a whole number), e.g. 2"), z.string().trim().min(1, "a runner label or ARC scale-set name"))
  .refine((m) => Object.keys(m).length > 0, "name at least one runner, e.g. `{1: arc-gpu-1, 2: arc-gpu-2, 8: arc-gpu-8}`");

/** `.github/probegate.yml` in the watched repository, read from its default branch. */
export const AppConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(true),
    agents: AgentsConfigSchema.default({ defaults: true, authors: {}, coAuthors: {}, branchPrefixes: {}, labels: {} }),
    routes: z.array(RouteSchema).default([]).describe("which task or probe suite a PR is evaluated against"),
    evaluator: EvaluatorSchema.optional().describe("where evaluations run; without it the app's default evaluator is used"),
    reruns: RerunsSchema.default(RERUN_DEFAULTS),
    gate: z
      .boolean()
      .default(false)
      .describe("post one 'probegate / gate' check run on every PR head (passing when no evaluation is needed or all resolved), to make required in branch protection"),
    budget: BudgetSchema.default(BUDGET_DEFAULTS),
    feedback: FeedbackSchema.default(FEEDBACK_DEFAULTS),
    allowUnsandboxed: AllowUnsandboxedSchema.optional().describe(
      "accept results whose submission ran without the sandbox (it ran as the user holding the signing key, so it could have forged its result); without this, such a result is refused",
    ),
    runners: RunnersSchema.optional().describe(
      "GPU count → runner label or ARC scale-set name, e.g. `{1: arc-gpu-1, 2: arc-gpu-2, 8: arc-gpu-8}`; each evaluation is dispatched with the smallest that fits (the evaluator workflow's `runner` input)",
    ),
  })
  .describe("probegate app config (.github/probegate.yml)");

export type AppConfig = z.infer<typeof AppConfigSchema>;
export type AppConfigInput = z.input<typeof AppConfigSchema>;

/** What routing looks at in a PR. */
export interface RoutablePr {
  labels: ReadonlyArray<string>;
  body: string | null;
  /** Paths of the files the PR changes, relative to the repository root. */
  changedPaths: ReadonlyArray<string>;
}

export type RouteTargetKind = "task" | "suite";

/** One task or probe suite the PR is evaluated against, with every reason it was chosen. */
export interface RoutedTarget {
  kind: RouteTargetKind;
  id: string;
  why: string[];
  /** The GPUs a route that chose it declared (`gpus:`); the largest, when several did. */
  gpus?: number;
}

/** The routing decision: the targets, and PR-body markers that chose nothing (to tell the author). */
export interface RouteDecision {
  targets: RoutedTarget[];
  ignoredMarkers: Array<{ marker: string; reason: string }>;
}

const MARKER = /^\s*(?:<!--\s*)?probegate-(task|suite)\s*:\s*([^\s>]+?)\s*(?:-->)?\s*$/i;

/** The `probegate-task: <id>` / `probegate-suite: <id>` lines of a PR body (also inside `<!-- -->`), each once. */
export function bodyMarkers(body: string | null): Array<{ kind: RouteTargetKind; id: string; text: string }> {
  const out: Array<{ kind: RouteTargetKind; id: string; text: string }> = [];
  for (const line of (body ?? "").split(/\r?\n/)) {
    const m = MARKER.exec(line);
    if (m?.[1] && m[2] && !out.some((o) => o.kind === m[1]?.toLowerCase() && o.id === m[2])) out.push({ kind: m[1].toLowerCase() as RouteTargetKind, id: m[2], text: `probegate-${m[1].toLowerCase()}: ${m[2]}` });
  }
  return out;
}

/**
 * A test of one changed path against a route's globs: it matches when any plain glob matches and
 * no `!`-glob does (picomatch alone would treat `!docs/**` as "anything outside docs").
 */
export function pathMatcher(globs: ReadonlyArray<string>): (path: string) => boolean {
  const positive = globs.filter((g) => !g.startsWith("!"));
  const negative = globs.filter((g) => g.startsWith("!")).map((g) => g.slice(1));
  const yes = positive.length ? picomatch(positive, { dot: true }) : () => false;
  const no = negative.length ? picomatch(negative, { dot: true }) : () => false;
  return (path) => yes(path) && !no(path);
}

/**
 * Which tasks or probe suites this PR maps to, and why. Only routes in the config can be chosen:
 * a PR-body marker selects a route that allows markers and never names a task on its own, so the
 * PR cannot pick what it is judged by. Targets come out in config order, each once, with the
 * reasons of every route that chose it.
 */
export function routeTasks(pr: RoutablePr, config: Pick<AppConfig, "routes">): RouteDecision {
  const targets = new Map<string, RoutedTarget>();
  const markers = bodyMarkers(pr.body);
  const usedMarkers = new Set<string>();
  const labels = new Set(pr.labels.map((l) => l.trim().toLowerCase()));
  for (const route of config.routes) {
    const kind: RouteTargetKind = route.task !== undefined ? "task" : "suite";
    const targetId = route.task ?? route.suite ?? "";
    const why: string[] = [];
    for (const label of route.labels) if (labels.has(label.trim().toLowerCase())) why.push(`label "${label}"`);
    if (route.paths.length > 0) {
      const isMatch = pathMatcher(route.paths);
      const hit = pr.changedPaths.find((p) => isMatch(p));
      if (hit !== undefined) why.push(`changed file "${hit}" matches ${route.paths.map((g) => `"${g}"`).join(", ")}`);
    }
    if (route.marker) {
      for (const m of markers) {
        if (m.kind === kind && m.id === targetId) {
          why.push(`"${m.text}" in the PR body`);
          usedMarkers.add(m.text);
        }
      }
    }
    if (why.length === 0) continue;
    const key = `${kind}:${targetId}`;
    const seen = targets.get(key);
    if (seen) {
      seen.why.push(...why.filter((w) => !seen.why.includes(w)));
      if (route.gpus !== undefined) seen.gpus = Math.max(seen.gpus ?? 0, route.gpus);
    } else targets.set(key, { kind, id: targetId, why, ...(route.gpus !== undefined ? { gpus: route.gpus } : {}) });
  }
  const ignoredMarkers = markers
    .filter((m) => !usedMarkers.has(m.text))
    .map((m) => {
      const known = config.routes.some((r) => (m.kind === "task" ? r.task : r.suite) === m.id);
      return {
        marker: m.text,
        reason: known
          ? `no route for ${m.kind} "${m.id}" has 'marker: true' in .github/probegate.yml`
          : `no route in .github/probegate.yml names ${m.kind} "${m.id}"`,
      };
    });
  return { targets: [...targets.values()], ignoredMarkers };
}
