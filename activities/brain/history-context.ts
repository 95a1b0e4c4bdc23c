/**
 * Rebuilds a lane's model context from Temporal history alone: an operation's conversation is the
 * sequence of its completed `modelStep` activities — each step's input tail (a user message) followed
 * by its result (the assistant message) — following continue-as-new back to the first run; when the
 * operation continues its lane's conversation, the operations before it come first
 * (`lane-chain.ts`).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { MODEL_STEP_ACTIVITY, type ModelStepInput, type ModelStepResult } from '../../common/model-step';
import type { AssembledContext } from './context-cache';
import { laneChainSteps, type ChainHead, type RecordedStep } from './lane-chain';

export async function rebuildContextFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
  head: ChainHead = {},
): Promise<AssembledContext> {
  const own = await readOperationSteps(client, workflowId, runId);
  const steps = await laneChainSteps((operationId) => readOperationSteps(client, operationId), own, head);
  const context: AssembledContext = { system: '', messages: [], lastReplyId: null };
  for (const step of steps) {
    if (step.input.system !== undefined && context.messages.length === 0) context.system = step.input.system;
    context.messages.push({ role: 'user', content: step.input.tail });
    context.messages.push({ role: 'assistant', content: step.result.message.content as Anthropic.ContentBlockParam[] });
    context.lastReplyId = step.result.message.id;
  }
  return context;
}

/** The completed model steps of one operation, over all its runs (from `runId`, or the latest, back to the first). */
export async function readOperationSteps(client: Client, workflowId: string, runId?: string): Promise<RecordedStep[]> {
  const runs: RecordedStep[][] = [];
  let next: string | undefined = runId;
  let first = true;
  while (next || first) {
    first = false;
    const history = await client.workflow.getHandle(workflowId, next).fetchHistory();
    const { steps, previousRunId } = completedModelSteps(history.events ?? []);
    runs.unshift(steps);
    next = previousRunId;
  }
  return runs.flat();
}

function completedModelSteps(events: temporal.api.history.v1.IHistoryEvent[]): {
  steps: RecordedStep[];
  previousRunId?: string;
} {
  const scheduled = new Map<string, ModelStepInput>();
  const steps: RecordedStep[] = [];
  let previousRunId: string | undefined;
  for (const event of events) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started?.continuedExecutionRunId) previousRunId = started.continuedExecutionRunId;
    const sched = event.activityTaskScheduledEventAttributes;
    if (sched && sched.activityType?.name === MODEL_STEP_ACTIVITY) {
      const payload = sched.input?.payloads?.[0];
      if (payload) scheduled.set(String(event.eventId), defaultPayloadConverter.fromPayload<ModelStepInput>(payload));
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done) {
      const input = scheduled.get(String(done.scheduledEventId));
      const payload = done.result?.payloads?.[0];
      if (input && payload)
        steps.push({ input, result: defaultPayloadConverter.fromPayload<ModelStepResult>(payload) });
    }
  }
  return { steps, previousRunId };
}
