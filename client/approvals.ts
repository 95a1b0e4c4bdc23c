/** Deciding a tool call that waits for approval, from a client (`agent approve`, tests). */
import { WorkflowNotFoundError, type WorkflowClient } from '@temporalio/client';
import { APPROVAL_FAILURE_TYPES, approveUpdate, type ApprovalDecided } from '../common/approvals';
import { Refused, refusalOf } from './session';

/**
 * Sends the `approve` Update. Refusals come back as `Refused` with the validator's type; an operation
 * that does not exist is `UnknownOperation`, one that has closed `OperationEnded`.
 */
export async function decideToolCall(
  workflows: WorkflowClient,
  decision: { operationId: string; toolCallId: string; approve: boolean; reason?: string },
): Promise<ApprovalDecided> {
  const handle = workflows.getHandle(decision.operationId);
  try {
    return await handle.executeUpdate(approveUpdate, {
      args: [
        {
          toolCallId: decision.toolCallId,
          approve: decision.approve,
          ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
        },
      ],
    });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw refusalOf(err);
    const status = await handle.describe().then(
      (description) => description.status.name.toLowerCase(),
      () => undefined,
    );
    if (status === undefined) throw new Refused('UnknownOperation', `no operation ${decision.operationId}`);
    throw new Refused(
      APPROVAL_FAILURE_TYPES.operationEnded,
      `operation ${decision.operationId} has already ended (${status}); nothing waits for approval`,
    );
  }
}
