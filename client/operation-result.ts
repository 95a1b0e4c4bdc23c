/** Reading an operation's outcome from a client (CLI, demo, benchmark, tests). */
import { WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { OperationResult } from '../common/operation';

/** The operation's result whether it completed, was aborted (returned) or failed (carried in the failure). */
export async function operationResult(handle: WorkflowHandle): Promise<OperationResult> {
  try {
    return (await handle.result()) as OperationResult;
  } catch (err) {
    if (
      err instanceof WorkflowFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === 'OperationFailed'
    ) {
      return err.cause.details?.[0] as OperationResult;
    }
    if (err instanceof WorkflowFailedError) throw new Error(`operation failed: ${err.cause?.message ?? err.message}`);
    throw err;
  }
}

/**
 * Waits until the workflow exists: an operation a session accepted as `queued` (behind its lane's
 * open one, or behind an operation that has returned its result but whose end the session has not
 * yet handled) has an id but no workflow until the session starts it. False if `stop` comes first.
 */
export async function operationStarted(
  handle: WorkflowHandle,
  options: { stop?: Promise<void>; intervalMs?: number; onWaiting?: () => void } = {},
): Promise<boolean> {
  let stopped = false;
  void options.stop?.then(() => (stopped = true));
  let told = false;
  while (!stopped) {
    try {
      await handle.describe();
      return true;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    if (!told) options.onWaiting?.();
    told = true;
    const pause = new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
    await (options.stop ? Promise.race([options.stop, pause]) : pause);
  }
  return false;
}

/** The result of an operation a session accepted, started or queued: a queued one is waited for until it starts. */
export async function acceptedOperationResult(client: Client, operationId: string): Promise<OperationResult> {
  const handle = client.workflow.getHandle(operationId);
  await operationStarted(handle);
  return operationResult(handle);
}
