/**
 * The timeout and retry preset for model calls (the `callModel` activity and the operation's model
 * step): the one place that says how long a model call may take and how it is retried.
 * Workflow code: deterministic, imports nothing but types and constants.
 */
import type { ActivityOptions } from '@temporalio/workflow';
import { MODEL_NON_RETRYABLE_FAILURE_TYPES } from '../common/model-types';

/**
 * - `startToCloseTimeout` 10 min — one attempt: a streamed answer of 16k tokens at a slow ~30
 *   tokens/s takes ~9 min. (A stream that goes silent is abandoned much sooner, after
 *   `AGENT_MODEL_IDLE_TIMEOUT_MS`, and retried.)
 * - `heartbeatTimeout` 15 s — the activity heartbeats every 5 s while it waits and whenever usage
 *   arrives (workers flush heartbeats to the server every second), so a worker that died mid-call
 *   is noticed within 15 s and the call moves to another worker; heartbeats also deliver
 *   cancellation.
 * - `scheduleToCloseTimeout` 30 min — every attempt and every wait between them: an API that stays
 *   down fails the step after half an hour rather than parking the operation forever.
 * - `retry.initialInterval` 2 s, `backoffCoefficient` 2, `maximumInterval` 60 s — waits of
 *   2, 4, 8, 16, 32, 60, 60, 60, 60 s (~5 min in all): long enough to ride out a 529 burst, short
 *   enough that a blip costs seconds. A 429 overrides the wait with the server's `retry-after`
 *   (`nextRetryDelay`), so rate limits are honoured exactly, not guessed.
 * - `retry.maximumAttempts` 10 — with the waits above, about as many as fit the 30 minutes.
 * - `retry.nonRetryableErrorTypes` — 400/401/403/404/413 and other refusals, missing settings and
 *   harness bugs: sending the same request again cannot succeed. (The activity already marks these
 *   failures non-retryable; listing them here keeps the policy readable in one place.)
 */
export const MODEL_CALL_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15 seconds',
  scheduleToCloseTimeout: '30 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...MODEL_NON_RETRYABLE_FAILURE_TYPES],
  },
  summary: 'model call',
};
