/**
 * Reads the recorded context steps of one workflow run from its history: every model step and
 * compaction step in order, with its input (the intent), and its result or its failure (with the
 * usage the failed call was billed). The brain rebuilds contexts from these
 * (`activities/brain/history-context.ts`), `agent report` prices them, tests inspect them.
 *
 * One run at a time: `previousRunId` leads back along continue-as-new. A reader that assembles a
 * context walks back only to the latest completed compaction — everything before it is summarised.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { COMPACT_CONTEXT_ACTIVITY, type CompactContextInput, type CompactContextResult } from './context';
import { toolCallIdOf, type ToolOutcome } from './hands';
import { MODEL_STEP_ACTIVITY, type ModelStepInput, type ModelStepResult } from './model-step';
import { addUsage, usageOfFailedCall, type TokenUsage } from './model-types';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Failure = temporal.api.failure.v1.IFailure;

/** Milliseconds since the epoch (with fractions) of an event. */
export function eventTimeMs(event: HistoryEvent): number {
  const t = event.eventTime;
  if (!t) return 0;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

export interface StepFailure {
  /** The ApplicationFailure type (`ModelPromptTooLong`, …), or the kind of timeout/cancellation. */
  type: string | null;
  message: string;
  /** Usage billed to the failed call (its last attempt and the attempts before it), when known. */
  usage: TokenUsage | null;
}

interface StepCommon {
  /** Event id of `ActivityTaskScheduled` (the intent). */
  scheduledEventId: number;
  activityId: string;
  /** Neither completed nor failed yet (running, or the run ended before it did). */
  pending: boolean;
  failure?: StepFailure;
}

export type RecordedStep =
  | (StepCommon & { kind: 'model'; input: ModelStepInput; result?: ModelStepResult })
  | (StepCommon & { kind: 'compaction'; input: CompactContextInput; result?: CompactContextResult });

export interface RecordedRun {
  /** Context steps in the order they were scheduled (they run one at a time). */
  steps: RecordedStep[];
  /** Tool calls' outcomes by tool call id (the `runTool` results), for their spill sizes. */
  toolOutcomes: Map<string, ToolOutcome>;
  /** The run this one continued (continue-as-new), if any. */
  previousRunId?: string;
}

const decode = <T>(payloads: { payloads?: unknown[] | null } | null | undefined): T | undefined => {
  const payload = payloads?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload<T>(payload as never) : undefined;
};

function failureOf(failure: Failure | null | undefined, fallbackType: string): StepFailure {
  const app = failure?.applicationFailureInfo;
  const timeout = failure?.timeoutFailureInfo;
  const details = app
    ? decode<unknown>(app.details)
    : timeout
      ? decode<unknown>(timeout.lastHeartbeatDetails)
      : undefined;
  // A timeout's cause may be the last attempt's ApplicationFailure, whose details are more precise.
  const causeDetails = failure?.cause?.applicationFailureInfo
    ? decode<unknown>(failure.cause.applicationFailureInfo.details)
    : undefined;
  return {
    type: app?.type ?? (timeout ? `timeout:${String(timeout.timeoutType ?? '')}` : fallbackType),
    message: failure?.message ?? fallbackType,
    usage: usageOfFailedCall(details) ?? usageOfFailedCall(causeDetails),
  };
}

export function readRecordedRun(events: readonly HistoryEvent[]): RecordedRun {
  const byScheduledId = new Map<string, RecordedStep>();
  const toolInputs = new Map<string, string>();
  const steps: RecordedStep[] = [];
  const toolOutcomes = new Map<string, ToolOutcome>();
  let previousRunId: string | undefined;
  for (const event of events) {
    const id = String(event.eventId);
    const started = event.workflowExecutionStartedEventAttributes;
    if (started?.continuedExecutionRunId) previousRunId = started.continuedExecutionRunId;

    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name;
      const common = { scheduledEventId: Number(event.eventId), activityId: scheduled.activityId ?? '', pending: true };
      if (type === MODEL_STEP_ACTIVITY) {
        const input = decode<ModelStepInput>(scheduled.input);
        if (input) steps.push({ ...common, kind: 'model', input });
      } else if (type === COMPACT_CONTEXT_ACTIVITY) {
        const input = decode<CompactContextInput>(scheduled.input);
        if (input) steps.push({ ...common, kind: 'compaction', input });
      } else if (type === 'runTool' && scheduled.activityId) {
        toolInputs.set(id, toolCallIdOf(scheduled.activityId) ?? scheduled.activityId);
      }
      const step = steps[steps.length - 1];
      if (step && step.scheduledEventId === Number(event.eventId)) byScheduledId.set(id, step);
      continue;
    }

    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const key = String(completed.scheduledEventId);
      const step = byScheduledId.get(key);
      if (step) {
        step.pending = false;
        step.result = decode(completed.result);
      }
      const toolCallId = toolInputs.get(key);
      const outcome = toolCallId ? decode<ToolOutcome>(completed.result) : undefined;
      if (toolCallId && outcome) toolOutcomes.set(toolCallId, outcome);
      continue;
    }
    const failed = event.activityTaskFailedEventAttributes;
    const timedOut = event.activityTaskTimedOutEventAttributes;
    const cancelled = event.activityTaskCanceledEventAttributes;
    const ended = failed ?? timedOut ?? cancelled;
    if (ended) {
      const step = byScheduledId.get(String(ended.scheduledEventId));
      if (!step) continue;
      step.pending = false;
      step.failure = cancelled
        ? { type: 'cancelled', message: 'the step was cancelled', usage: null }
        : failureOf((failed ?? timedOut)!.failure, failed ? 'failed' : 'timeout');
    }
  }
  return { steps, toolOutcomes, ...(previousRunId ? { previousRunId } : {}) };
}

/** The usage a step was billed: its result's (failed attempts included) or its failure's. */
export function stepUsage(step: RecordedStep): TokenUsage | null {
  if (step.result) {
    const { usage, failedAttemptsUsage } = step.result;
    return failedAttemptsUsage ? addUsage(usage, failedAttemptsUsage) : usage;
  }
  return step.failure?.usage ?? null;
}
