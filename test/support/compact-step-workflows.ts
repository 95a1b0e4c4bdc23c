/**
 * Test-only workflow: an operation's first two steps with their inputs in the shape the next release
 * writes — what is the same in every step of an operation left out (`ModelStepInput`: operationId,
 * lane, maxTokens; `RunToolInput`: toolCallId, sessionId, timeoutMs, `checkpoint.exclude`). Every release must read what the
 * next one writes before that one is deployed: hands workers serve every build, and an unversioned
 * deployment runs old and new brain workers side by side while it rolls.
 */
import { proxyActivities } from '@temporalio/workflow';
import { toolActivityId, type HandsActivities, type ToolOutcome } from '../../common/hands';
import type { BrainActivities, ModelStepResult } from '../../common/model-step';
import type { ToolUseBlock } from '../../common/model-types';
import { MODEL_STEP_ACTIVITY_OPTIONS } from '../../workflows/shared/policies';

export interface CompactStepsInput {
  handsTaskQueue: string;
  system: string;
  goal: string;
}

export interface CompactStepsResult {
  replies: ModelStepResult[];
  tool: ToolOutcome;
}

export async function compactStepsOnce(input: CompactStepsInput): Promise<CompactStepsResult> {
  const { modelStep } = proxyActivities<BrainActivities>(MODEL_STEP_ACTIVITY_OPTIONS);
  const hands = (activityId: string) =>
    proxyActivities<HandsActivities>({
      taskQueue: input.handsTaskQueue,
      activityId,
      startToCloseTimeout: '2 minutes',
      retry: { maximumAttempts: 1 },
    });
  const first = await modelStep({
    turn: 1,
    system: input.system,
    base: { messages: 0, lastReplyId: null },
    tail: [{ type: 'text', text: input.goal }],
  });
  const call = first.message.content.find((block): block is ToolUseBlock => block.type === 'tool_use');
  if (!call) throw new Error('the first reply asked for no tool');
  const tool = await hands(toolActivityId(call.id)).runTool({
    name: call.name,
    input: call.input,
    checkpoint: { turn: 1 },
  });
  const second = await modelStep({
    turn: 2,
    base: { messages: 2, lastReplyId: first.message.id },
    tail: [{ type: 'tool_result', tool_use_id: call.id, content: tool.content }],
  });
  return { replies: [first, second], tool };
}
