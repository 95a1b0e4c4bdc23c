/**
 * Approvals: the operation's tool-call policy (`common/approvals.ts`) and the durable wait for a
 * person. An `ask` call suspends the operation: its state becomes `waiting-approval` (status query,
 * `AgentStatus` search attribute, the Web UI's current details), the request is recorded in the
 * history (memo `approval`, which `agent events` reads as `approval.requested`), and the call waits —
 * across worker and server restarts, since the wait is a Temporal timer and condition — for the
 * `approve` Update (`agent approve <operationId> <toolCallId> [--deny "why"]`) or the timeout
 * (`approvalTimeoutMs`), which denies. A denial is the tool result the model sees; the call is not run.
 * A spent budget with `onExceeded: "ask"` waits the same way (`budget.ts`), under the id `budget-<n>`.
 */
import { ApplicationFailure, condition, isCancellation, setHandler, upsertMemo } from '@temporalio/workflow';
import {
  APPROVAL_FAILURE_TYPES,
  approvalDecisionProblem,
  approvalPolicyFor,
  approveUpdate,
  type ApprovalDecision,
  type ApprovalDecisionInput,
  type WaitingApproval,
} from '../../common/approvals';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import { crashPoints } from '../shared/crash-point-sink';
import type { OperationRun } from './state';
import { toolResult } from './tool-result';
import { publishSearchAttributes, showDetails } from './visibility';

export function policyFor(op: OperationRun, tool: string, mainArgument: string): ApprovalDecision {
  return approvalPolicyFor(op.settings.approvals, tool, mainArgument);
}

export function acceptApprovals(op: OperationRun): void {
  setHandler(
    approveUpdate,
    async (input) => {
      const decision = {
        toolCallId: input.toolCallId,
        approve: input.approve,
        reason: input.reason?.trim() || undefined,
      };
      // A call of the current batch that has not asked yet (its turn, or the activity it waits
      // behind, is still to come): the decision waits for it to ask, then is checked again.
      if (op.isCallAhead(decision.toolCallId)) {
        op.keepDecisionAhead(decision.toolCallId, decision);
        await condition(() => !op.isCallAhead(decision.toolCallId) || op.ended !== undefined);
        op.keepDecisionAhead(decision.toolCallId, undefined);
        checkDecision(op, input);
      }
      op.decideApproval(decision);
      crashPoints.reached('workflow: approval decided');
      return { toolCallId: input.toolCallId, decision: input.approve ? 'approved' : 'denied' };
    },
    { validator: (input) => checkDecision(op, input) },
  );
}

/** Waits for a person to decide an `ask` call; the denial to return to the model, or undefined when approved. */
export async function awaitApproval(
  op: OperationRun,
  call: ToolUseBlock,
  prepared: { summary: string; approval: ApprovalDecision },
): Promise<ToolResultBlockParam | undefined> {
  op.showTool({ name: call.name, summary: prepared.summary });
  const { decision, by } = await waitForDecision(op, {
    toolCallId: call.id,
    tool: call.name,
    summary: prepared.summary,
    ...(prepared.approval.rule ? { rule: prepared.approval.rule } : {}),
  });
  if (by === 'abort') {
    return toolResult(
      call.id,
      `not run: the operation was aborted (${op.abortReason}) while this call waited for approval`,
      true,
    );
  }
  if (decision.approve) return undefined;
  op.showTool({ name: call.name, summary: prepared.summary, isError: true });
  return toolResult(
    call.id,
    `denied${by === 'timeout' ? ' (the approval timed out)' : ' by a person'}: ${decision.reason ?? 'no reason given'}. ` +
      'The call was not run. Do not send it again as it is; change your approach or explain what you need.',
    true,
  );
}

/** How a wait for a person ended: the decision, and who made it (an abort denies). */
export interface ApprovalOutcome {
  decision: ApprovalDecisionInput;
  by: 'person' | 'timeout' | 'abort';
}

/**
 * Suspends the operation until a person decides `request` (a tool call, or a spent budget whose id
 * is `budget-<n>`), the approval timeout denies it, or an abort ends the wait: the state is
 * `waiting-approval`, the request is in the memo, the search attributes, the details and the live
 * events, and the decision is recorded the same way.
 */
export async function waitForDecision(
  op: OperationRun,
  request: Omit<WaitingApproval, 'requestedAt' | 'timeoutAt'>,
): Promise<ApprovalOutcome> {
  const timeoutMs = op.settings.approvalTimeoutMs;
  const now = Date.now();
  const waiting: WaitingApproval = {
    ...request,
    requestedAt: new Date(now).toISOString(),
    timeoutAt: new Date(now + timeoutMs).toISOString(),
  };
  const id = waiting.toolCallId;
  op.awaitApproval(waiting);
  upsertMemo({ approval: { ...waiting, state: 'waiting' } });
  publishSearchAttributes(op, 'state');
  showDetails(op);
  op.live.publish(op.carry.turn, {
    kind: 'approval.requested',
    toolCallId: id,
    summary: waiting.summary,
    timeoutAt: waiting.timeoutAt,
  });
  crashPoints.reached('workflow: approval requested');
  let decided: boolean;
  try {
    decided = await condition(() => op.approvalDecision !== undefined, timeoutMs, {
      summary: `approval timeout: ${id}`,
    });
  } catch (err) {
    if (!isCancellation(err)) throw err;
    op.noteCancelled();
    const decision = { toolCallId: id, approve: false, reason: 'the operation was aborted' };
    endApprovalWait(op, decision, 'abort');
    return { decision, by: 'abort' };
  }
  const decision = op.approvalDecision ?? {
    toolCallId: id,
    approve: false,
    reason: `nobody decided within ${formatDuration(timeoutMs)}`,
  };
  const by = decided ? 'person' : 'timeout';
  endApprovalWait(op, decision, by);
  return { decision, by };
}

function endApprovalWait(op: OperationRun, decision: ApprovalDecisionInput, by: 'person' | 'timeout' | 'abort'): void {
  const waiting = op.waitingApproval!;
  const outcome: 'approved' | 'denied' = decision.approve ? 'approved' : 'denied';
  upsertMemo({
    approval: {
      toolCallId: waiting.toolCallId,
      tool: waiting.tool,
      summary: waiting.summary,
      state: outcome,
      by,
      ...(decision.reason ? { reason: decision.reason } : {}),
      decidedAt: new Date(Date.now()).toISOString(),
    },
  });
  op.closeApproval(waiting.toolCallId, outcome);
  op.live.publish(op.carry.turn, { kind: 'approval.decided', toolCallId: waiting.toolCallId, decision: outcome, by });
  publishSearchAttributes(op, 'state');
  showDetails(op);
}

function rejected(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

/**
 * The `approve` validator: a decision for exactly the call that waits (or one of the current batch
 * that has not asked yet), once, while the operation runs.
 */
function checkDecision(op: OperationRun, raw: unknown): void {
  const input = raw as Partial<ApprovalDecisionInput> | undefined;
  const { invalid, unknownCall, notWaiting, alreadyDecided, operationEnded } = APPROVAL_FAILURE_TYPES;
  const problem = approvalDecisionProblem(input);
  if (problem) throw rejected(invalid, problem);
  const id = input!.toolCallId!;
  if (op.ended)
    throw rejected(operationEnded, `the operation has already ended (${op.ended.state}); nothing waits for approval`);
  const current = op.waitingApproval?.toolCallId === id ? op.approvalDecision : undefined;
  const past = op.carry.approvalsDecided?.find((entry) => entry.toolCallId === id)?.decision;
  const ahead = op.decisionAhead(id);
  if (current || past || ahead) {
    const decided = past ?? ((current ?? ahead)!.approve ? 'approved' : 'denied');
    throw rejected(alreadyDecided, `tool call ${id} was already ${decided}${ahead ? ' (it has not asked yet)' : ''}`);
  }
  if (op.waitingApproval?.toolCallId === id || op.isCallAhead(id)) return;
  const now = op.waitingApproval
    ? ` (waiting now: ${op.waitingApproval.toolCallId}, ${op.waitingApproval.summary})`
    : ' (no call is waiting now)';
  if (op.seenToolCalls.has(id)) throw rejected(notWaiting, `tool call ${id} is not waiting for approval${now}`);
  throw rejected(unknownCall, `this operation has no tool call ${id}${now}`);
}

function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}
