/**
 * `operation`: one accepted request, run as the agent loop
 * checkpoint → model turn → tool batch → checkpoint → … until the model ends its turn with nothing
 * queued, a budget ends it, or someone aborts it. Exactly one terminal state:
 *  - `completed` (the workflow returns its result),
 *  - `failed` (the workflow fails with an `OperationFailed` ApplicationFailure carrying the result),
 *  - `aborted` (the workflow returns its result).
 *
 * The workflow keeps no transcript: model turns send a context fingerprint and the new tail
 * (`model-turn.ts`); tool calls run on the hands queue, one activity per call (`tool-calls.ts`).
 * Steering is accepted durably by an Update and enters the context at the next checkpoint, at its
 * tail (`steering.ts`). The state every step works on is one `OperationRun` (`operation-state.ts`).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  workflowInfo,
} from '@temporalio/workflow';
import type { ModelStepResult } from '../common/model-step';
import type { ToolResultBlockParam } from '../common/model-types';
import type { OperationResult } from '../common/operation';
import { costUsd } from '../common/pricing';
import { volumeNameOf } from '../common/sandbox-names';
import { deadlineEnd, spentBudget } from './budget';
import { recordReply, requestModelTurn, toolCallsOf } from './model-turn';
import { OperationEnd, startOperationRun, type OperationCarry, type OperationRun } from './operation-state';
import { provisionSandbox, type OperationSandbox } from './sandbox';
import { acceptSteeringAndAbort, applySteering } from './steering';
import { runToolBatch, toolResult } from './tool-calls';
import { answerStatusQuery, countersDue, publishSearchAttributes, showDetails } from './visibility';

export type { OperationCarry } from './operation-state';

export async function operation(rawInput: unknown, carry?: OperationCarry): Promise<OperationResult> {
  const op = startOperationRun(rawInput, carry);
  const loopScope = new CancellationScope();
  answerStatusQuery(op);
  acceptSteeringAndAbort(op, () => loopScope.cancel());
  publishSearchAttributes(op, 'state');
  showDetails(op);
  const sandbox = provisionSandbox(op);

  try {
    op.ended = await loopScope.run(() => agentLoop(op, sandbox, rawInput));
  } catch (err) {
    op.ended = endOfFailedLoop(op, err);
  }
  return finish(op, sandbox);
}

async function agentLoop(op: OperationRun, sandbox: OperationSandbox, rawInput: unknown): Promise<OperationEnd> {
  const { carry } = op;
  for (;;) {
    applySteering(op);
    if (carry.tail.length === 0) return new OperationEnd('completed', 'end_turn');
    const overBudget = spentBudget(op);
    if (overBudget) return overBudget;
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof operation>(rawInput, carry);
    }

    op.phase = 'model';
    showDetails(op);
    const reply = await requestModelTurn(op);
    if (reply === undefined) return deadlineEnd(op);
    recordReply(op, reply);
    if (countersDue(op)) publishSearchAttributes(op, 'counters');

    const end = await actOnReply(op, sandbox, reply);
    if (end) return end;
    showDetails(op);
  }
}

/** Runs the reply's tool batch (its results become the next tail), or says how the operation ends. */
async function actOnReply(
  op: OperationRun,
  sandbox: OperationSandbox,
  reply: ModelStepResult,
): Promise<OperationEnd | undefined> {
  const calls = toolCallsOf(reply);
  if (calls.length > 0 && reply.stopReason === 'max_tokens') {
    // A batch cut off by max_tokens is never executed: its JSON may parse while truncated.
    op.carry.tail = calls.map((call) =>
      toolResult(
        call.id,
        'not executed: your reply was cut off at max_tokens, so this call may be incomplete. Send it again, smaller.',
        true,
      ),
    );
    return undefined;
  }
  if (calls.length > 0) {
    op.phase = 'tools';
    showDetails(op);
    op.carry.tail = await runToolBatch(op, sandbox, calls);
    return op.abortReason !== undefined ? new OperationEnd('aborted', `aborted: ${op.abortReason}`) : undefined;
  }
  if (reply.stopReason === 'refusal') return new OperationEnd('failed', 'the model refused the request');
  if (op.carry.pendingSteering.length === 0) return new OperationEnd('completed', reply.stopReason ?? 'end_turn');
  return undefined;
}

/** How an exception out of the loop ends the operation: an abort, or a model step that finally failed. */
function endOfFailedLoop(op: OperationRun, err: unknown): OperationEnd {
  if (isCancellation(err) || op.abortReason !== undefined) {
    return new OperationEnd('aborted', `aborted: ${op.abortReason ?? 'workflow cancelled'}`);
  }
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure && cause.type ? ` [${cause.type}]` : '';
    return new OperationEnd('failed', `model step failed${type}: ${cause?.message ?? err.message}`);
  }
  throw err;
}

/** Tears the sandbox down, publishes the terminal state and returns (or, when failed, throws) the result. */
async function finish(op: OperationRun, sandbox: OperationSandbox): Promise<OperationResult> {
  const ended = op.ended!;
  op.phase = 'finishing';
  showDetails(op);
  await sandbox.teardown();
  op.phase = 'done';
  publishSearchAttributes(op, 'state');
  showDetails(op);

  const { carry } = op;
  const result: OperationResult = {
    state: ended.state,
    reason: ended.reason,
    turns: carry.turn,
    steps: carry.steps,
    usage: carry.usage,
    costUsd: costUsd(carry.usage, op.settings.model),
    finalText: carry.finalText,
    sessionId: op.sessionId,
    workspaceVolume: volumeNameOf(op.sessionId),
    openToolResults: carry.tail.filter((block): block is ToolResultBlockParam => block.type === 'tool_result'),
  };
  if (ended.state === 'failed') {
    throw ApplicationFailure.create({
      type: 'OperationFailed',
      message: ended.reason,
      nonRetryable: true,
      details: [result],
    });
  }
  return result;
}
