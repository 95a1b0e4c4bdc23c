/**
 * Stuck detection: the limits an operation watches itself with, and the contract of the activity
 * that tells the workflow what the server knows about one of its pending activities.
 *
 * An operation is *stuck* when
 *  - an activity it waits on has not started within `notStartedMs` (usually: no worker polls that
 *    task queue),
 *  - one activity keeps retrying: past `retryAttempts` attempts or `retryMs` since it was scheduled,
 *  - the agent loops: the same call with the same result `sameCallRepeats` times in a row, two calls
 *    alternating `alternations` times, or `errorTurns` turns whose every tool result is an error.
 * The first two clear themselves when the cause goes away; a loop first earns the model a note at
 * the tail of its context and, if it goes on, ends the operation with reason `stuck: <pattern>`.
 *
 * Deterministic (imported by workflow code): zod and types only.
 */
import { z } from 'zod';

export const stuckLimitsSchema = z.strictObject({
  /** An activity not started after this long is reported (`stuck: no worker polls <queue>`). */
  notStartedMs: z.int().min(100).max(86_400_000).default(60_000),
  /** How often a stuck (or still unstarted) activity is looked at again. Default: `notStartedMs`, at most 60 s. */
  recheckMs: z.int().min(100).max(3_600_000).optional(),
  /** An activity on its attempt past this many is reported as retrying. */
  retryAttempts: z.int().min(1).max(1_000).default(3),
  /** An activity still not done this long after it was first scheduled, having failed at least once, is reported. */
  retryMs: z.int().min(1_000).max(86_400_000).default(600_000),
  /** The same tool call with the same result this many times in a row is a loop. */
  sameCallRepeats: z.int().min(2).max(1_000_000).default(3),
  /** Two calls alternating (A, B, A, B, …) this many calls in a row is a loop. */
  alternations: z.int().min(4).max(1_000_000).default(6),
  /** This many turns in a row whose every tool result is an error is a loop. */
  errorTurns: z.int().min(2).max(1_000_000).default(5),
});

export type StuckLimitsInput = z.input<typeof stuckLimitsSchema>;
export type StuckLimits = z.output<typeof stuckLimitsSchema>;

/** Why an operation is stuck, as shown in its status, current details and the `AgentStatus` attribute. */
export interface StuckState {
  /** The whole reason, starting with `stuck: ` (e.g. `stuck: no worker polls agent-hands`). */
  reason: string;
  /** What the operation waits on (`tool bash: npm test`, `model turn 3`). */
  waitingOn: string;
  /** ISO time since when. */
  since: string;
  /** The last failure of the activity, when it is retrying. */
  lastFailure?: string;
}

export interface PendingActivityProbeInput {
  workflowId: string;
  runId: string;
  activityId: string;
  taskQueue: string;
  /** When the workflow started waiting on the activity (its clock); the probe answers `elapsedMs` from it. */
  sinceMs?: number;
}

/** What the server says about one pending activity and the task queue it waits on. */
export interface PendingActivityProbe {
  /** `absent` when the activity is no longer pending (it finished while the probe ran). */
  state: 'scheduled' | 'started' | 'cancel-requested' | 'paused' | 'absent';
  attempt: number;
  lastFailure?: string;
  /** Workers the server remembers polling the task queue for activities (for some minutes after they stop). */
  pollers: number;
  /** How long ago the most recent of them polled. */
  lastPollAgoMs?: number;
  /** How long the workflow has waited on the activity (from `sinceMs`), by the probe's clock: recorded, so a replay sees the same. */
  elapsedMs?: number;
  /**
   * A scheduled retry: how long ago it became due (its backoff over; negative while it waits out the
   * backoff). A due task no free poller takes means none polls — a live worker's poll would have
   * taken it at once, whatever the server still lists (it remembers a killed worker for minutes).
   */
  scheduledAgoMs?: number;
}

/** The operations activities (run on the brain queue: they only talk to the Temporal server). */
export interface OpsActivities {
  probePendingActivity(input: PendingActivityProbeInput): Promise<PendingActivityProbe>;
}

/** The activity type name of the probe (doctor and tests find it in histories by it). */
export const PROBE_ACTIVITY = 'probePendingActivity';
