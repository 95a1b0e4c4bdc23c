/** Reading a child operation's outcome in workflow code (the session's lanes, the `task` tool). */
import { ApplicationFailure, ChildWorkflowFailure } from '@temporalio/workflow';
import type { OperationResult } from '../../common/operation';

/**
 * The result a failed operation carries in its `OperationFailed` failure, or undefined when the
 * child failed some other way (terminated, timed out, invalid input).
 */
export function resultOfFailedOperation(err: unknown): OperationResult | undefined {
  if (!(err instanceof ChildWorkflowFailure)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'OperationFailed') {
    return cause.details?.[0] as OperationResult | undefined;
  }
  return undefined;
}

/** One line on how a child workflow failed without a result. */
export function childFailureMessage(err: unknown): string {
  if (err instanceof ChildWorkflowFailure) return err.cause?.message ?? err.message;
  return err instanceof Error ? err.message : String(err);
}
