import type { Logger } from "probot";
import type { Evaluator } from "../github/evaluator.js";
import type { GitHubClient } from "../github/client.js";
import type { StoreDb } from "../store/db.js";

/** Everything the handlers need besides the event: injected, so tests control the store and the clock. */
export interface AppDeps {
  db: StoreDb;
  now: () => Date;
  /** The keys a result may be signed with: the current one first, then previous ones kept through a rotation. */
  signingKeys: ReadonlyArray<string>;
  /** How long a dispatch claim holds before another process may take the attempt over. */
  dispatchLeaseMs: number;
  /** How long an evaluator run may be quiet before the sweep asks GitHub about it (a webhook may be lost). */
  reconcileAfterMs: number;
  defaultEvaluator: Evaluator | null;
  defaultTimeoutS: number;
  /**
   * This app process's name on dispatch claims (random per load): among processes sharing the
   * store, only the claim's holder dispatches a queued attempt, so none is dispatched twice.
   */
  instance: string;
  /** An Octokit for an installation (Probot's `app.auth`), for work not driven by that installation's event. */
  auth: (installationId: number) => Promise<GitHubClient>;
  /** An Octokit authenticated as the app itself (its JWT), for app-level endpoints such as its webhook deliveries. */
  appAuth: () => Promise<GitHubClient>;
  log: Logger;
}

/** The installation a delivery came through; every event the app handles has one. */
export function installationIdOf(payload: unknown, deliveryId: string): number {
  const id = (payload as { installation?: { id?: number } }).installation?.id;
  if (typeof id !== "number") throw new Error(`delivery ${deliveryId} has no installation id; is the app installed on the repository?`);
  return id;
}
