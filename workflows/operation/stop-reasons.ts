/**
 * What a reply's stop reason means for the operation when the reply asks for no tool to run:
 *  - `end_turn`, `stop_sequence`: the model is done — `completed`, unless steering is queued;
 *  - `refusal`: `failed`, the model refused;
 *  - `max_tokens`: the answer was cut — it is continued (a user message asks for the rest), at most
 *    `context.maxContinuations` times in a row, then `failed` with the reason;
 *  - `pause_turn`: the model paused its own turn — the next request passes the assistant message
 *    back as it is (no tail) and the reply continues it;
 *  - `model_context_window_exceeded`: the context is full — compact, then continue as for `max_tokens`;
 *  - anything else (an unknown or missing reason, `tool_use` without a tool call): `failed` with it.
 * Replies whose tool calls were cut off (`max_tokens`, a full window) never run them.
 *
 * Pure decisions: a continuation is returned (`ReplyContinuation`) for the operation's state to apply.
 *
 * Before this, every reason but `refusal` ended the operation `completed`; histories recorded then
 * replay that way (`patched`).
 */
import type { ModelStepResult } from '../../common/model-step';
import type { ToolUseBlock } from '../../common/model-types';
import { canCompact } from './context-window';
import { OperationEnd, type OperationRun, type ReplyContinuation } from './state';
import { toolResult } from './tool-result';
import { isPatched } from '../shared/patches';

/** The `patched()` id of the stop-reason handling above. */
export const STOP_REASONS_PATCH = 'stop-reasons';

/** How the loop goes on after a reply: its end, the next request's continuation, or undefined to send the tail as it is. */
export type AfterReply = OperationEnd | ReplyContinuation | undefined;

/** How the loop goes on after a reply without tool calls to run. */
export function actOnStopReason(op: OperationRun, reply: ModelStepResult): AfterReply {
  const stop = reply.stopReason;
  if (stop === 'refusal') return new OperationEnd('failed', 'the model refused the request');
  if (stop === 'end_turn' || stop === 'stop_sequence' || !isPatched(STOP_REASONS_PATCH)) {
    return op.carry.pendingSteering.length === 0 ? new OperationEnd('completed', stop ?? 'end_turn') : undefined;
  }
  switch (stop) {
    case 'max_tokens':
      return continueCutReply(
        op,
        `[the harness] Your reply was cut off at the max_tokens limit (${op.settings.maxTokensPerTurn} tokens). Continue exactly where it stopped, without repeating what you already wrote.`,
      );
    case 'pause_turn':
      return resumePausedTurn(op);
    case 'model_context_window_exceeded':
      return continueAfterFullWindow(op, []);
    case 'tool_use':
      return new OperationEnd('failed', 'the model stopped for tool_use but asked for no tool');
    default:
      return new OperationEnd(
        'failed',
        `the model stopped for a reason the harness does not handle: ${stop ?? 'none'}`,
      );
  }
}

/**
 * A reply whose tool calls were cut off: they are answered "not executed" (their JSON may parse
 * while truncated). After a full window the context is compacted before the model sees them.
 */
export function actOnCutToolCalls(op: OperationRun, reply: ModelStepResult, calls: ToolUseBlock[]): AfterReply {
  if (reply.stopReason === 'model_context_window_exceeded') {
    return continueAfterFullWindow(
      op,
      calls.map((call) =>
        toolResult(
          call.id,
          'not executed: your reply was cut off because the context window was full. Send it again.',
          true,
        ),
      ),
    );
  }
  return {
    tail: calls.map((call) =>
      toolResult(
        call.id,
        'not executed: your reply was cut off at max_tokens, so this call may be incomplete. Send it again, smaller.',
        true,
      ),
    ),
    counted: false,
  };
}

/** The end when continuing once more would pass `context.maxContinuations`. */
function tooManyContinuations(op: OperationRun, what: string): OperationEnd | undefined {
  const limit = op.settings.context.maxContinuations;
  if (op.carry.context.continuations < limit) return undefined;
  return new OperationEnd('failed', `${what} ${limit + 1} times in a row (context.maxContinuations is ${limit})`);
}

function continueCutReply(op: OperationRun, note: string): AfterReply {
  return (
    tooManyContinuations(op, `the reply was cut off at max_tokens (${op.settings.maxTokensPerTurn})`) ?? {
      tail: [{ type: 'text', text: note }],
      counted: true,
    }
  );
}

function resumePausedTurn(op: OperationRun): AfterReply {
  return tooManyContinuations(op, 'the model paused its turn') ?? { tail: [], counted: true, resumePause: true };
}

function continueAfterFullWindow(op: OperationRun, notExecuted: ReturnType<typeof toolResult>[]): AfterReply {
  if (!op.settings.context.compaction) {
    return new OperationEnd(
      'failed',
      'the context window is full (model_context_window_exceeded) and compaction is off',
    );
  }
  if (!canCompact(op)) {
    return new OperationEnd(
      'failed',
      'the context window is full (model_context_window_exceeded) with nothing left to compact',
    );
  }
  return (
    tooManyContinuations(op, 'the context window filled up') ?? {
      tail: [
        ...notExecuted,
        {
          type: 'text',
          text: '[the harness] Your reply was cut off because the context window was full. The conversation has been compacted (summary above); continue from where you stopped.',
        },
      ],
      counted: true,
      compaction: 'window-full',
    }
  );
}
