import { join } from "node:path";
import { z } from "zod";
import type { Evaluator } from "../github/evaluator.js";

/** The app's environment is unusable; the message lists every variable to fix. */
export class AppSettingsError extends Error {
  override readonly name = "AppSettingsError";
}

/** GitHub lets a webhook delivery be redelivered for 3 days; the app must remember it at least that long. */
const MIN_RETENTION_DAYS = 3;

const EVALUATOR = /^([A-Za-z0-9-]+\/[A-Za-z0-9._-]+):([^@\s]+)(?:@(\S+))?$/;

const EnvSchema = z.object({
  WEBHOOK_SECRET: z
    .string({ error: "is not set: the app verifies every webhook's signature with it (the secret in the GitHub App's settings)" })
    .min(1, "is empty: the app verifies every webhook's signature with it")
    .refine((s) => s !== "development", "is Probot's placeholder 'development': set the secret configured in the GitHub App's settings"),
  PROBEGATE_SIGNING_KEY: z
    .string({ error: "is not set: the app checks the evaluator's signed results with it (the Action's signing-key)" })
    .min(16, "must be at least 16 characters (the Action's signing-key)"),
  PROBEGATE_PREVIOUS_SIGNING_KEYS: z
    .string()
    .optional()
    .transform((s) => (s ?? "").split(",").map((k) => k.trim()).filter(Boolean))
    .refine((keys) => keys.every((k) => k.length >= 16), "must be a comma-separated list of keys of at least 16 characters each (the keys used before the current PROBEGATE_SIGNING_KEY)"),
  PROBEGATE_RECONCILE_MINUTES: z.coerce.number({ error: "must be a number of minutes" }).min(1).max(24 * 60).default(10),
  PROBEGATE_REDELIVER_MINUTES: z.coerce.number({ error: "must be a number of minutes (0 turns redelivery off)" }).min(0).max(24 * 60).default(2),
  PROBEGATE_DB: z.string().min(1).optional(),
  PROBEGATE_EVALUATOR: z
    .string()
    .regex(EVALUATOR, "must be owner/repo:workflow-file[@ref], e.g. my-org/probegate-evaluator:evaluate.yml@main")
    .optional(),
  PROBEGATE_TIMEOUT_MINUTES: z.coerce.number().positive().max(24 * 60).default(120),
  PROBEGATE_SWEEP_SECONDS: z.coerce.number().min(0).max(3600).default(60),
  PROBEGATE_DASHBOARD_TOKEN: z.string().min(16, "must be at least 16 characters (the scorecard dashboard's password)").optional(),
  PROBEGATE_DELIVERY_RETENTION_DAYS: z.coerce
    .number({ error: "must be a number of days (how long webhook deliveries are remembered)" })
    .min(MIN_RETENTION_DAYS, `must be at least ${MIN_RETENTION_DAYS} days: GitHub can redeliver a webhook for ${MIN_RETENTION_DAYS} days, and a delivery forgotten sooner would be acted on twice`)
    .max(3650, "must be at most 3650 days (10 years)")
    .default(7),
});

/** What the app needs from its environment, checked once at start. */
export interface AppSettings {
  webhookSecret: string;
  signingKey: string;
  /** Keys of earlier rotations, still accepted on results (PROBEGATE_PREVIOUS_SIGNING_KEYS). */
  previousSigningKeys: string[];
  /** How long an evaluator run may be quiet before the sweep asks GitHub about it. */
  reconcileAfterMs: number;
  /** How often failed webhook deliveries are looked for and redelivered (0: never). */
  redeliverEveryMs: number;
  dbFile: string;
  /** The evaluator of repositories whose config names none. */
  defaultEvaluator: Evaluator | null;
  defaultTimeoutS: number;
  sweepEveryMs: number;
  /** The password of the scorecard dashboard (`/probegate/scorecard`); null: the dashboard is off. */
  dashboardToken: string | null;
  /** How long webhook deliveries are remembered for deduplication before they are pruned. */
  deliveryRetentionMs: number;
}

/**
 * Reads the app's settings from `env`. The app refuses to start without a webhook secret (an
 * unsigned webhook must never be acted on) or a result-signing key (no result could be trusted).
 */
export function readAppSettings(env: NodeJS.ProcessEnv, cwd: string): AppSettings {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")} ${i.message}`);
    throw new AppSettingsError(`probegate app cannot start; fix these environment variables:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const m = e.PROBEGATE_EVALUATOR ? EVALUATOR.exec(e.PROBEGATE_EVALUATOR) : null;
  return {
    webhookSecret: e.WEBHOOK_SECRET,
    signingKey: e.PROBEGATE_SIGNING_KEY,
    previousSigningKeys: e.PROBEGATE_PREVIOUS_SIGNING_KEYS,
    reconcileAfterMs: e.PROBEGATE_RECONCILE_MINUTES * 60_000,
    redeliverEveryMs: e.PROBEGATE_REDELIVER_MINUTES * 60_000,
    dbFile: e.PROBEGATE_DB ?? join(cwd, "probegate.sqlite"),
    defaultEvaluator: m ? { repository: m[1] as string, workflow: m[2] as string, ref: m[3] ?? "main" } : null,
    defaultTimeoutS: e.PROBEGATE_TIMEOUT_MINUTES * 60,
    sweepEveryMs: e.PROBEGATE_SWEEP_SECONDS * 1000,
    dashboardToken: e.PROBEGATE_DASHBOARD_TOKEN ?? null,
    deliveryRetentionMs: e.PROBEGATE_DELIVERY_RETENTION_DAYS * 24 * 3600_000,
  };
}
