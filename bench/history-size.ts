/**
 * Measures an operation's Temporal history: events and encoded bytes over its whole run chain
 * (continue-as-new followed back from the latest run through each run's `continuedExecutionRunId`),
 * and how many of those bytes are message content.
 *
 * Message content is what the conversation itself carries and any agent must store somewhere: the
 * goal and system prompt, the model's replies (text and tool-call arguments) and the tool results —
 * wherever a payload holds them (model-step inputs and results, tool-call inputs and results, the
 * carry of continue-as-new, the final text). It is counted as the bytes those strings take inside the
 * JSON payloads. Everything else — event framing, ids, timestamps, usage, options, search attributes
 * — is the harness's own overhead.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { MODEL_STEP_ACTIVITY } from '../common/model-step';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

export interface HistoryMeasure {
  runs: number;
  events: number;
  bytes: number;
  contentBytes: number;
  /** Activity and workflow-task events, except each run's first workflow task (see `results.ts`). */
  stepEvents: number;
  /** Events and bytes per event type (`ACTIVITY_TASK_SCHEDULED`, …) over the chain. */
  byEventType: Record<string, { events: number; bytes: number }>;
}

export async function measureHistory(client: Client, workflowId: string): Promise<HistoryMeasure> {
  const measure: HistoryMeasure = { runs: 0, events: 0, bytes: 0, contentBytes: 0, stepEvents: 0, byEventType: {} };
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    measure.runs += 1;
    measure.events += events.length;
    measure.bytes += temporal.api.history.v1.History.encode(history).finish().length;
    measure.contentBytes += contentBytesOf(events);
    let firstWorkflowTask = 3; // scheduled, started, completed
    for (const event of events) {
      const type = (temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? 'UNKNOWN').replace(/^EVENT_TYPE_/, '');
      if (type.startsWith('WORKFLOW_TASK_') && firstWorkflowTask > 0) firstWorkflowTask -= 1;
      else if (type.startsWith('WORKFLOW_TASK_') || type.startsWith('ACTIVITY_TASK_')) measure.stepEvents += 1;
      const entry = (measure.byEventType[type] ??= { events: 0, bytes: 0 });
      entry.events += 1;
      entry.bytes += temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    }
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return measure;
}

/** Bytes of message content in one run's events (see the file comment). */
export function contentBytesOf(events: readonly HistoryEvent[]): number {
  const activityTypes = new Map<string, string>();
  let total = 0;
  for (const event of events) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) total += operationArgsContent(started.input);
    const continued = event.workflowExecutionContinuedAsNewEventAttributes;
    if (continued) total += operationArgsContent(continued.input);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name ?? '';
      activityTypes.set(String(event.eventId), type);
      const input = first(scheduled.input) as Record<string, unknown> | undefined;
      if (type === MODEL_STEP_ACTIVITY) total += stringBytes(input?.system) + blocksBytes(input?.tail);
      else if (type === 'runTool') total += jsonBytes(input?.input);
    }
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const type = activityTypes.get(String(completed.scheduledEventId));
      const result = first(completed.result) as Record<string, unknown> | undefined;
      if (type === MODEL_STEP_ACTIVITY)
        total += blocksBytes((result?.message as { content?: unknown } | undefined)?.content);
      else if (type === 'runTool') total += stringBytes(result?.content);
    }
    const done = event.workflowExecutionCompletedEventAttributes;
    if (done) total += stringBytes((first(done.result) as { finalText?: unknown } | undefined)?.finalText);
  }
  return total;
}

/** The operation's arguments `[input, carry?]`: the goal and system prompt, and the carried tail and final text. */
function operationArgsContent(payloads: Payloads): number {
  const [input, carry] = (payloads?.payloads ?? []).map((payload) =>
    defaultPayloadConverter.fromPayload<Record<string, unknown>>(payload),
  );
  return (
    stringBytes(input?.goal) + stringBytes(input?.system) + blocksBytes(carry?.tail) + stringBytes(carry?.finalText)
  );
}

function first(payloads: Payloads): unknown {
  const payload = payloads?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
}

/** Bytes a string takes inside a JSON payload (escapes included, quotes not). */
function stringBytes(value: unknown): number {
  return typeof value === 'string' ? Buffer.byteLength(JSON.stringify(value)) - 2 : 0;
}

function jsonBytes(value: unknown): number {
  return value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value));
}

/** Content of message blocks: text, tool_use arguments, tool_result content (string or blocks). */
function blocksBytes(blocks: unknown): number {
  if (typeof blocks === 'string') return stringBytes(blocks);
  if (!Array.isArray(blocks)) return 0;
  let total = 0;
  for (const block of blocks as Array<Record<string, unknown>>) {
    if (block.type === 'text') total += stringBytes(block.text);
    else if (block.type === 'tool_use') total += jsonBytes(block.input);
    else if (block.type === 'tool_result') total += blocksBytes(block.content);
    else if (block.type === 'thinking') total += stringBytes(block.thinking);
  }
  return total;
}
