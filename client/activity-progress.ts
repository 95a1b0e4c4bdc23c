/**
 * What a running activity last said in its heartbeat, read from the workflow's description (the
 * same details the Web UI shows on the pending activity). For followers that want a long step's
 * progress, e.g. `agent task start` while the environment is built.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';

/** The latest heartbeat details of the workflow's pending activity of `activityType`, if any. */
export async function pendingActivityDetails(
  handle: WorkflowHandle,
  activityType: string,
): Promise<Record<string, unknown> | undefined> {
  const described = await handle.describe();
  const pending = (described.raw.pendingActivities ?? []).find((a) => a.activityType?.name === activityType);
  const payload = pending?.heartbeatDetails?.payloads?.[0];
  if (!payload) return undefined;
  try {
    const details = defaultPayloadConverter.fromPayload<unknown>(payload);
    return details !== null && typeof details === 'object' ? (details as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // details in another encoding: nothing to show
  }
}
