/**
 * The brain's rewind activity (contract: `common/rewind.ts`): `planRewind` reads every run of the
 * operation's history and turns it into a plan (`common/rewind-plan.ts`). Read-only, so retrying it
 * is always safe; what the history cannot give is final.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { planRewind } from '../../common/rewind-plan';
import {
  REWIND_FAILURE_TYPES,
  type PlanRewindInput,
  type RewindActivities,
  type RewindPlan,
} from '../../common/rewind';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export function createRewindActivities(deps: { client: Client }): RewindActivities {
  return { planRewind: (input) => planRewindActivity(deps.client, input) };
}

async function planRewindActivity(client: Client, input: PlanRewindInput): Promise<RewindPlan> {
  const runs = await everyRun(client, input.operationId);
  const planned = planRewind(runs, input);
  if (!planned.ok) throw ApplicationFailure.nonRetryable(planned.message, planned.type);
  return planned.plan;
}

/** The events of every run of the workflow, oldest run first. */
async function everyRun(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  do {
    let events: HistoryEvent[];
    try {
      events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    } catch (err) {
      if (runs.length === 0 && isNotFound(err))
        throw ApplicationFailure.nonRetryable(`no operation ${workflowId}`, REWIND_FAILURE_TYPES.unknownOperation);
      throw err;
    }
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  } while (runId);
  return runs;
}

/** A missing workflow, as `fetchHistory` reports it (the gRPC status NOT_FOUND, 5). */
function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const withCode = err as { code?: number; cause?: { code?: number } };
  return withCode.code === 5 || withCode.cause?.code === 5;
}
