/**
 * Rebuilds an operation's model context from its Temporal history alone: the conversation is the
 * sequence of completed `modelStep` activities — each step's input tail (a user message) followed
 * by its result (the assistant message). Follows continue-as-new back to the first run.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { MODEL_STEP_ACTIVITY, type ModelStepInput, type ModelStepResult } from '../../common/model-step';
import type { AssembledContext } from './context-cache';

interface RecordedStep {
  input: ModelStepInput;
  result: ModelStepResult;
}

export async function rebuildContextFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<AssembledContext> {
  const runs: RecordedStep[][] = [];
  let next: string | undefined = runId;
  while (next) {
    const history = await client.workflow.getHandle(workflowId, next).fetchHistory();
    const { steps, previousRunId } = completedModelSteps(history.events ?? []);
    runs.unshift(steps);
    next = previousRunId;
  }
  const steps = runs.flat();
  const context: AssembledContext = { system: '', messages: [], lastReplyId: null };
  for (const step of steps) {
    if (step.input.system !== undefined && context.messages.length === 0) context.system = step.input.system;
    context.messages.push({ role: 'user', content: step.input.tail });
    context.messages.push({ role: 'assistant', content: step.result.message.content as Anthropic.ContentBlockParam[] });
    context.lastReplyId = step.result.message.id;
  }
  return context;
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
