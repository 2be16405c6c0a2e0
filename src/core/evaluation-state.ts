/**
 * The life of one evaluation (one evaluation key). Each attempt goes
 * queued → dispatched → running → completed, or ends early in error, superseded (a newer push took
 * its place), cancelled (the PR was closed) or timed-out (the runner went quiet). `retry` starts a
 * new attempt of the same key (a `/probegate rerun`, a retry after an error or time-out, or the PR
 * reopened after a cancel); a superseded evaluation is never retried, because its head is no longer
 * the PR's head.
 */
export const EVALUATION_STATES = ["queued", "dispatched", "running", "completed", "error", "superseded", "cancelled", "timed-out"] as const;
export type EvaluationState = (typeof EVALUATION_STATES)[number];

export const EVALUATION_EVENTS = ["dispatch", "start", "complete", "fail", "supersede", "cancel", "time-out", "retry"] as const;
export type EvaluationEvent = (typeof EVALUATION_EVENTS)[number];

export const PENDING_STATES: ReadonlyArray<EvaluationState> = ["queued", "dispatched", "running"];

const NEXT: Readonly<Record<EvaluationState, Partial<Record<EvaluationEvent, EvaluationState>>>> = {
  queued: { dispatch: "dispatched", fail: "error", supersede: "superseded", cancel: "cancelled", "time-out": "timed-out" },
  // `complete` from dispatched: the workflow_run may finish before its in_progress event arrives.
  dispatched: { start: "running", complete: "completed", fail: "error", supersede: "superseded", cancel: "cancelled", "time-out": "timed-out" },
  running: { complete: "completed", fail: "error", supersede: "superseded", cancel: "cancelled", "time-out": "timed-out" },
  completed: { retry: "queued" },
  error: { retry: "queued" },
  "timed-out": { retry: "queued" },
  cancelled: { retry: "queued" },
  superseded: {},
};

/** An event that the evaluation's current state does not allow. */
export class IllegalTransitionError extends Error {
  override readonly name = "IllegalTransitionError";
  constructor(
    readonly from: EvaluationState,
    readonly event: EvaluationEvent,
  ) {
    const allowed = Object.keys(NEXT[from]);
    super(
      `An evaluation in state '${from}' cannot take event '${event}' (allowed: ${allowed.length ? allowed.map((e) => `'${e}'`).join(", ") : "none"}).`,
    );
  }
}

/** The state after `event`; throws IllegalTransitionError when `state` does not allow it. */
export function transition(state: EvaluationState, event: EvaluationEvent): EvaluationState {
  const next = NEXT[state][event];
  if (next === undefined) throw new IllegalTransitionError(state, event);
  return next;
}

/** Whether `event` is allowed in `state`. */
export function canTransition(state: EvaluationState, event: EvaluationEvent): boolean {
  return NEXT[state][event] !== undefined;
}

/** Whether the current attempt has ended (only `retry` leaves these states). */
export function isTerminal(state: EvaluationState): boolean {
  return !PENDING_STATES.includes(state);
}

/**
 * Whether a pending evaluation has run past its deadline: `deadlineS` seconds after its current
 * attempt began. A finished attempt never times out.
 */
export function timedOut(evaluation: { state: EvaluationState; attemptStartedAt: Date }, now: Date, deadlineS: number): boolean {
  if (isTerminal(evaluation.state)) return false;
  return now.getTime() - evaluation.attemptStartedAt.getTime() > deadlineS * 1000;
}
