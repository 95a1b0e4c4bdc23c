/**
 * One model turn: the brain's `modelStep` with the context fingerprint and the new tail (never the
 * transcript — see `common/model-step.ts`), under the operation's deadline; then the reply is
 * recorded in the run's counters and ledger.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BrainActivities, ModelStepResult } from '../../common/model-step';
import { addUsage, ZERO_USAGE, type TextBlock, type ToolUseBlock } from '../../common/model-types';
import { DEFAULT_SYSTEM_PROMPT } from '../../common/prompts';
import { timeLeftMs, withDeadline } from './budget';
import { editFrontierOf } from './context-window';
import { contextFingerprint, continuationOf, heartbeatOverride, type OperationRun } from './state';
import { MODEL_STEP_ACTIVITY_OPTIONS } from '../shared/policies';
import { mcpToolsOf } from './mcp-tools';
import { modelStepWatch } from './step-visibility';

/** Asks the model for the next turn; `undefined` when the deadline passed first. */
export function requestModelTurn(op: OperationRun): Promise<ModelStepResult | undefined> {
  const { settings, carry } = op;
  const watch = modelStepWatch(op);
  const { modelStep } = proxyActivities<BrainActivities>({
    ...MODEL_STEP_ACTIVITY_OPTIONS,
    ...heartbeatOverride(op),
    ...watch?.options,
  });
  return withDeadline(timeLeftMs(op), () =>
    (watch?.run ?? ((run) => run()))(() =>
      modelStep({
        operationId: op.operationId,
        lane: settings.lane,
        turn: carry.turn + 1,
        model: settings.model,
        maxTokens: settings.maxTokensPerTurn,
        system: carry.messages === 0 ? (settings.system ?? DEFAULT_SYSTEM_PROMPT) : undefined,
        base: contextFingerprint(op),
        ...(op.nextClear ? { clear: op.nextClear } : {}),
        ...editFrontierOf(op),
        tail: carry.tail,
        ...continuationOf(op),
        ...mcpToolsOf(op),
      }),
    ),
  );
}

/** Counts the turn, moves the context fingerprint past the reply, and adds its usage to the ledger. */
export function recordReply(op: OperationRun, reply: ModelStepResult): void {
  const { carry } = op;
  carry.turn += 1;
  carry.steps += 1;
  // A resumed paused turn sends no tail: its reply joins the paused message.
  carry.messages += carry.tail.length === 0 ? 0 : 2;
  carry.lastReplyId = reply.message.id;
  // Attempts that failed after consuming tokens are counted too (cost durability).
  carry.usage = addUsage(addUsage(carry.usage, reply.usage), reply.failedAttemptsUsage ?? ZERO_USAGE);
  carry.tail = [];
  const text = replyText(reply);
  if (text) carry.finalText = text;
  op.live.publish(carry.turn, {
    kind: 'model.reply',
    text,
    toolCalls: toolCallsOf(reply).length,
    usage: reply.usage,
  });
}

export function toolCallsOf(reply: ModelStepResult): ToolUseBlock[] {
  return reply.message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
}

function replyText(reply: ModelStepResult): string {
  return reply.message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n')
    .trim();
}
