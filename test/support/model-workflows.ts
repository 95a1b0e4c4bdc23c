/**
 * Test-only workflows around the `callModel` activity: one model call under the model-call preset
 * (optionally with shorter retry waits), its failure returned as data so tests can inspect type,
 * retryability and details.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { ModelActivities } from './model-activities';
import type { ModelReply, ModelRequest } from '../../common/model-types';
import { MODEL_CALL_ACTIVITY_OPTIONS } from '../../workflows/shared/policies';

export interface CallModelOnceInput {
  request: ModelRequest;
  /** Overrides the preset's first retry wait (ms), to keep tests short. */
  initialRetryIntervalMs?: number;
  /** Overrides the preset's heartbeat timeout (ms), so cancellation arrives sooner. */
  heartbeatTimeoutMs?: number;
}

export type CallModelOnceResult =
  | { ok: true; reply: ModelReply }
  | { ok: false; type: string | undefined; message: string; nonRetryable: boolean; details: unknown[] };

export async function callModelOnce(input: CallModelOnceInput): Promise<CallModelOnceResult> {
  const { callModel } = proxyActivities<ModelActivities>({
    ...MODEL_CALL_ACTIVITY_OPTIONS,
    heartbeatTimeout: input.heartbeatTimeoutMs ?? MODEL_CALL_ACTIVITY_OPTIONS.heartbeatTimeout,
    retry: {
      ...MODEL_CALL_ACTIVITY_OPTIONS.retry,
      initialInterval: input.initialRetryIntervalMs ?? MODEL_CALL_ACTIVITY_OPTIONS.retry?.initialInterval,
    },
  });
  try {
    return { ok: true, reply: await callModel({ request: input.request }) };
  } catch (error) {
    if (error instanceof ActivityFailure && error.cause instanceof ApplicationFailure) {
      const cause = error.cause;
      return {
        ok: false,
        type: cause.type ?? undefined,
        message: cause.message,
        nonRetryable: cause.nonRetryable === true,
        details: [...(cause.details ?? [])],
      };
    }
    throw error;
  }
}
