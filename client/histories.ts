/**
 * Reading workflow histories from a client: every run of a workflow (following continue-as-new back
 * to the first), payloads decoded with the default converter, event times as numbers. Closed
 * workflows do not change, so their histories are kept for the next read.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

export { eventTimeMs } from '../common/recorded-steps';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;

export interface WorkflowRuns {
  workflowId: string;
  /** Events of every run, oldest run first. */
  runs: HistoryEvent[][];
  closed: boolean;
}

/** Decodes the `index`-th payload, or undefined. */
export function payload<T>(payloads: Payloads, index = 0): T | undefined {
  const p = payloads?.payloads?.[index];
  if (!p) return undefined;
  try {
    return defaultPayloadConverter.fromPayload<T>(p);
  } catch {
    return undefined;
  }
}

const CLOSE_EVENTS = [
  'workflowExecutionCompletedEventAttributes',
  'workflowExecutionFailedEventAttributes',
  'workflowExecutionCanceledEventAttributes',
  'workflowExecutionTerminatedEventAttributes',
  'workflowExecutionTimedOutEventAttributes',
] as const;

export function isCloseEvent(event: HistoryEvent): boolean {
  return CLOSE_EVENTS.some((key) => event[key] != null);
}

/** `fetchHistory` reports a missing workflow as the gRPC status NOT_FOUND (5), not always as WorkflowNotFoundError. */
function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const withCode = err as { code?: number; cause?: { code?: number } };
  return withCode.code === 5 || withCode.cause?.code === 5;
}

export class HistoryReader {
  private readonly closed = new Map<string, WorkflowRuns>();

  constructor(private readonly client: Client) {}

  /** Every run of `workflowId`, or undefined when there is no such workflow. */
  async runs(workflowId: string): Promise<WorkflowRuns | undefined> {
    const cached = this.closed.get(workflowId);
    if (cached) return cached;
    const runs: WorkflowRuns['runs'] = [];
    let runId: string | undefined;
    let first = true;
    let closed = false;
    while (first || runId) {
      const handle = this.client.workflow.getHandle(workflowId, runId);
      let events: HistoryEvent[];
      try {
        events = (await handle.fetchHistory()).events ?? [];
      } catch (err) {
        if (first && isNotFound(err)) return undefined;
        throw err;
      }
      const started = events[0]?.workflowExecutionStartedEventAttributes;
      if (first) closed = events.some(isCloseEvent);
      runs.unshift(events);
      runId = started?.continuedExecutionRunId || undefined;
      first = false;
    }
    const result = { workflowId, runs, closed };
    if (closed) this.closed.set(workflowId, result);
    return result;
  }
}
