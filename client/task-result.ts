/** Reading a coding task's outcome from a client (CLI, demo, tests). */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { CODING_TASK_FAILURES, type CodingTaskResult } from '../common/coding-task';

/**
 * The task's result whether it completed or was aborted (returned) or failed (carried in the
 * failure's details). A failure without a result — bad input, a bug — is thrown as one line.
 */
export async function codingTaskResult(handle: WorkflowHandle): Promise<CodingTaskResult> {
  try {
    return (await handle.result()) as CodingTaskResult;
  } catch (err) {
    if (
      err instanceof WorkflowFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === CODING_TASK_FAILURES.failed &&
      err.cause.details?.[0]
    ) {
      return err.cause.details[0] as CodingTaskResult;
    }
    if (err instanceof WorkflowFailedError) throw new Error(`task failed: ${err.cause?.message ?? err.message}`);
    throw err;
  }
}
