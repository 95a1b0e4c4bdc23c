/**
 * Timeout and retry presets for every activity the operation runs, readable in one place.
 * The model preset lives beside the model activity's contract in `model-policy.ts`.
 */
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/workflow';
import type { ReplayPolicy } from '../common/tools';
import { MODEL_CALL_ACTIVITY_OPTIONS } from './model-policy';

/** The brain's model step: the model-call preset, with a UI summary set per call by the workflow. */
export const MODEL_STEP_ACTIVITY_OPTIONS: ActivityOptions = { ...MODEL_CALL_ACTIVITY_OPTIONS, summary: 'model step' };

/**
 * One tool call on the hands queue.
 * - startToClose: the tool's own timeout plus two minutes for container start and journal I/O.
 * - heartbeat 5 s: the hands heartbeat every second (and workers flush heartbeats every second), so
 *   a dead hands worker is noticed within 5 s; the retry then consults the workspace journal, so a
 *   spurious or real retry never runs a `never` tool twice.
 * - retries: 1 s → ×2 → 30 s, at most 5 attempts; infrastructure failures only (tool failures are
 *   results, not errors).
 * - cancellation waits for the activity to confirm it killed its process (abort must leave nothing running).
 */
export function toolActivityOptions(_policy: ReplayPolicy, timeoutMs: number): ActivityOptions {
  return {
    startToCloseTimeout: timeoutMs + 120_000,
    heartbeatTimeout: '5 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      // `never` tools are protected by the journal on retry; all policies get the same budget.
      maximumAttempts: 5,
      nonRetryableErrorTypes: ['InvalidToolInput', 'UnknownTool'],
    },
  };
}

/** Sandbox lifecycle (seed the workspace, destroy the container). */
export const SANDBOX_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5 },
};
