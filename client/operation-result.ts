/** Reading an operation's outcome from a client (CLI, demo, benchmark, tests). */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
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
