/**
 * One model turn: the brain's `modelStep` with the context fingerprint and the new tail (never the
 * transcript — see `common/model-step.ts`), under the operation's deadline. The reply is recorded
 * by the operation's state (`OperationRun.recordReply`) and published to live followers here.
 */
import { proxyActivities } from '@temporalio/workflow';
import { DEFAULT_LANE } from '../../common/lanes';
import { DEFAULT_MAX_TOKENS_PER_TURN, type BrainActivities, type ModelStepResult } from '../../common/model-step';
import { DEFAULT_SYSTEM_PROMPT } from '../../common/prompts';
import { withinDeadline } from './budget';
import { continuationOf, editFrontierOf, recordedFingerprint } from './context-window';
import { replyText, toolCallsOf } from './reply';
import { heartbeatOverride, type OperationRun } from './state';
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
  return withinDeadline(op, () =>
    (watch?.run ?? ((run) => run()))(() =>
      modelStep({
        // What the brain reads absent (`ModelStepInput`): the operation's id (the activity's workflow
        // id), the main lane, the default max_tokens. Every step's history holds this input.
        ...(settings.lane !== DEFAULT_LANE ? { lane: settings.lane } : {}),
        turn: carry.turn + 1,
        model: settings.model,
        ...(settings.maxTokensPerTurn !== DEFAULT_MAX_TOKENS_PER_TURN ? { maxTokens: settings.maxTokensPerTurn } : {}),
        system: carry.messages === 0 ? (settings.system ?? DEFAULT_SYSTEM_PROMPT) : undefined,
        base: recordedFingerprint(op),
        ...(op.nextClear ? { clear: op.nextClear } : {}),
        ...editFrontierOf(op),
        tail: [...carry.tail],
        ...continuationOf(op),
        ...mcpToolsOf(op),
      }),
    ),
  );
}

/** Tells live followers what the reply just recorded says. */
export function publishReply(op: OperationRun, reply: ModelStepResult): void {
  op.live.publish(op.carry.turn, {
    kind: 'model.reply',
    text: replyText(reply),
    toolCalls: toolCallsOf(reply).length,
    usage: reply.usage,
  });
}
