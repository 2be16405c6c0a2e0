import { randomUUID } from "node:crypto";
import type { ApplicationFunction, Context, Probot } from "probot";
import type { GitHubClient } from "../github/client.js";
import type { Evaluator } from "../github/evaluator.js";
import type { StoreDb } from "../store/db.js";
import { DELIVERY_TAKEOVER_MS, forgetDelivery, handled, markDeliveryHandled, pruneDeliveries, recordDelivery } from "../store/deliveries.js";
import { listPendingEvaluations } from "../store/evaluations.js";
import type { AppDeps } from "./deps.js";
import { onMergeGroup } from "./handle-merge-group.js";
import { DISPATCH_LEASE_MS } from "./evaluation-runner.js";
import { reconcileQuiet, repostCheckOutputs, resumeQueued, sweepOverdue } from "./sweep.js";
import { redeliverFailed } from "./redelivery.js";
import { onPullRequest, PULL_REQUEST_ACTIONS } from "./handle-pull-request.js";
import { onCheckRunRerun } from "./handle-check-run.js";
import { onCheckSuiteRerun } from "./handle-check-suite.js";
import { onIssueComment } from "./handle-issue-comment.js";
import { onWorkflowRun } from "./handle-workflow-run.js";

/** How the app is put together: its store, clock and keys (tests inject them; index.ts reads the environment). */
export interface ProbegateOptions {
  db: StoreDb;
  signingKey: string;
  /** Keys of earlier rotations: results signed with them still verify (results in flight when the key changed). */
  previousSigningKeys?: ReadonlyArray<string>;
  /** How long an evaluator run may be quiet before the sweep asks GitHub about it (default 10 minutes). */
  reconcileAfterMs?: number;
  /**
   * How often the sweep asks GitHub for failed webhook deliveries and has them redelivered (GitHub
   * does not by itself); 0 (the default here; the server's settings turn it on) leaves them.
   */
  redeliverEveryMs?: number;
  /** How far back failed deliveries are looked for (default 1 hour; GitHub keeps them 3 days). */
  redeliverLookbackMs?: number;
  /** The least time between two requests to redeliver one delivery (default 1 minute). */
  redeliverGapMs?: number;
  /** How long a dispatch claim holds (default DISPATCH_LEASE_MS): a process that died mid-dispatch blocks its attempt that long. */
  dispatchLeaseMs?: number;
  /** How long an unfinished delivery is left to its handler before a redelivery takes it over (default 5 minutes). */
  deliveryTakeoverMs?: number;
  defaultEvaluator?: Evaluator | null;
  defaultTimeoutS?: number;
  /** How often the timer sweeps for overdue evaluations; 0 leaves only the sweep on each event. */
  sweepEveryMs?: number;
  /**
   * How long delivery ids are remembered for deduplication (default 7 days, at least 3: GitHub
   * redelivers for 3 days). The sweep timer prunes older ones at most once an hour.
   */
  deliveryRetentionMs?: number;
  now?: () => Date;
}

/** A loaded probegate app: its Probot app function, plus handles for the sweep, resuming and shutdown. */
export interface Probegate {
  app: ApplicationFunction;
  /** Times out overdue evaluations now; resolves to how many. */
  sweep(): Promise<number>;
  /** Asks GitHub to redeliver the app's failed webhook deliveries now (the timer does it every `redeliverEveryMs`); resolves to their ids. */
  redeliver(): Promise<string[]>;
  /** Settles when the evaluations a restart left queued have been started again. */
  resumed(): Promise<number>;
  /** Stops the sweep timer (the store is the caller's to close). */
  stop(): void;
}

/** Events run the sweep too, at most this often, so a quiet timer is not the only way time-outs surface. */
const EVENT_SWEEP_GAP_MS = 5000;

const DAY_MS = 24 * 3600_000;
/** GitHub redelivers a webhook for 3 days: a delivery id forgotten sooner could be acted on twice. */
const MIN_DELIVERY_RETENTION_MS = 3 * DAY_MS;
/** The timer prunes old deliveries at most this often. */
const PRUNE_GAP_MS = 3600_000;

/**
 * The probegate Probot app. Each delivery is acted on once: its id is recorded before handling and
 * forgotten again if handling fails, so GitHub's redelivery of a failed one is acted on.
 */
export function createProbegate(opts: ProbegateOptions): Probegate {
  let deps: AppDeps | undefined;
  let timer: NodeJS.Timeout | undefined;
  let resuming: Promise<number> = Promise.resolve(0);
  let lastSweep = -Infinity;
  const now = opts.now ?? (() => new Date());
  const retentionMs = opts.deliveryRetentionMs ?? 7 * DAY_MS;
  if (!(retentionMs >= MIN_DELIVERY_RETENTION_MS)) {
    throw new RangeError(`deliveryRetentionMs is ${retentionMs}; it must be at least ${MIN_DELIVERY_RETENTION_MS} (3 days: GitHub can redeliver a webhook for 3 days).`);
  }
  let lastPrune = -Infinity;
  // The first look for failed deliveries waits one period: a process starting is not held up by it.
  let lastRedelivery = now().getTime();
  const redeliverEveryMs = opts.redeliverEveryMs ?? 0;

  /** Asks GitHub to redeliver the failed webhook deliveries now; resolves to their ids. */
  const redeliver = async (): Promise<string[]> => {
    if (!deps) throw new Error("the probegate app is not loaded yet");
    lastRedelivery = now().getTime();
    return redeliverFailed(deps, opts.redeliverLookbackMs ?? 3600_000, opts.redeliverGapMs);
  };

  /**
   * Has failed deliveries redelivered, at most every `redeliverEveryMs`; on the timer only, so no
   * webhook waits for it. A failure is logged, not thrown.
   */
  const redeliverIfDue = async (): Promise<void> => {
    if (!deps || redeliverEveryMs <= 0 || now().getTime() - lastRedelivery < redeliverEveryMs) return;
    try {
      await redeliver();
    } catch (e) {
      deps.log.error({ err: e }, `asking GitHub for failed webhook deliveries failed: ${(e as Error).message}`);
    }
  };

  const sweep = async (): Promise<number> => {
    if (!deps) throw new Error("the probegate app is not loaded yet");
    lastSweep = now().getTime();
    const timedOut = await sweepOverdue(deps);
    // Runs whose workflow_run webhook may have been lost: asked about, and finished as the webhook would.
    await reconcileQuiet(deps);
    await repostCheckOutputs(deps);
    // Attempts left queued by a process that died mid-dispatch, once its claim ran out.
    const resumed = await resumeQueued(deps, listPendingEvaluations(deps.db));
    if (resumed > 0) deps.log.info(`sweep: resumed ${resumed} evaluation(s) left queued`);
    return timedOut;
  };

  /** Forgets the deliveries older than the retention window, at most once an hour; never throws (it runs on a timer). */
  const pruneIfDue = (): void => {
    const t = now().getTime();
    if (!deps || t - lastPrune < PRUNE_GAP_MS) return;
    lastPrune = t;
    const before = new Date(t - retentionMs);
    try {
      const pruned = pruneDeliveries(deps.db, before);
      if (pruned > 0) deps.log.info(`pruned ${pruned} webhook deliveries received before ${before.toISOString()}`);
    } catch (e) {
      deps.log.error({ err: e }, `pruning webhook deliveries failed: ${(e as Error).message}`);
    }
  };

  const app: ApplicationFunction = (probot: Probot) => {
    const d: AppDeps = {
      db: opts.db,
      now,
      signingKeys: [opts.signingKey, ...(opts.previousSigningKeys ?? [])],
      reconcileAfterMs: opts.reconcileAfterMs ?? 10 * 60_000,
      dispatchLeaseMs: opts.dispatchLeaseMs ?? DISPATCH_LEASE_MS,
      defaultEvaluator: opts.defaultEvaluator ?? null,
      defaultTimeoutS: opts.defaultTimeoutS ?? 120 * 60,
      instance: randomUUID(),
      auth: async (id) => (await probot.auth(id)) as unknown as GitHubClient,
      appAuth: async () => (await probot.auth()) as unknown as GitHubClient,
      log: probot.log,
    };
    deps = d;

    const once =
      <C extends Context>(handler: (context: C, deps: AppDeps) => Promise<void>) =>
      async (context: C): Promise<void> => {
        if (now().getTime() - lastSweep >= EVENT_SWEEP_GAP_MS) await sweep();
        const action = (context.payload as { action?: string }).action;
        if (!recordDelivery(d.db, { id: context.id, event: action ? `${context.name}.${action}` : context.name }, now(), opts.deliveryTakeoverMs ?? DELIVERY_TAKEOVER_MS)) {
          // Still being handled (or its handler died a moment ago): answer with an error, so GitHub
          // keeps it as failed and the redelivery sweep brings it back once it can be taken over.
          if (!handled(d.db, context.id)) throw new Error(`delivery ${context.id} (${context.name}) is still being handled; not acted on twice`);
          context.log.info(`delivery ${context.id} (${context.name}) was handled before; ignored`);
          return;
        }
        try {
          await handler(context, d);
          markDeliveryHandled(d.db, context.id, now());
        } catch (e) {
          forgetDelivery(d.db, context.id);
          throw e;
        }
      };

    probot.on(
      PULL_REQUEST_ACTIONS.map((a) => `pull_request.${a}` as const),
      once(onPullRequest),
    );
    probot.on(["workflow_run.in_progress", "workflow_run.completed"], once(onWorkflowRun));
    probot.on(["check_run.rerequested", "check_run.requested_action"], once(onCheckRunRerun));
    probot.on(["issue_comment.created", "issue_comment.edited"], once(onIssueComment));
    probot.on("check_suite.rerequested", once(onCheckSuiteRerun));
    probot.on("merge_group.checks_requested", once(onMergeGroup));

    const every = opts.sweepEveryMs ?? 60_000;
    if (every > 0) {
      timer = setInterval(() => {
        pruneIfDue();
        void sweep().catch((e: Error) => d.log.error({ err: e }, `sweep failed: ${e.message}`));
        void redeliverIfDue();
      }, every);
      timer.unref();
    }
    resuming = resumeQueued(d, listPendingEvaluations(d.db));
  };

  return {
    app,
    sweep,
    redeliver,
    resumed: () => resuming,
    stop: () => {
      if (timer) clearInterval(timer);
    },
  };
}
