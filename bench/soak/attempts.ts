/**
 * Retried model-call attempts, read from a unit's workflow histories. A model call whose attempt the
 * server gave up on (a heartbeat timeout while the history service was down, a killed brain) is
 * retried with the same request; the answer of the abandoned attempt was paid, and no history holds
 * it unless a heartbeat carried its usage. The ledger accepts a unit's shortfall as such answers only
 * up to the number of retried attempts its histories show (`checkLedger`).
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { COMPACT_CONTEXT_ACTIVITY } from '../../common/context';
import { MODEL_STEP_ACTIVITY } from '../../common/model-step';

/** The activities that call the model (`BrainActivities`). */
export const MODEL_ACTIVITY_TYPES: readonly string[] = [MODEL_STEP_ACTIVITY, COMPACT_CONTEXT_ACTIVITY];

const EventType = temporal.api.enums.v1.EventType;
type History = temporal.api.history.v1.IHistory;

/**
 * Model-call attempts a history shows retried: for each model activity that started, its last
 * attempt number minus one (the server records one started event per activity, with the attempt
 * that ended it).
 */
export function retriedModelAttemptsOf(history: History): number {
  const modelActivities = new Set<string>();
  let retried = 0;
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && scheduled) {
      if (MODEL_ACTIVITY_TYPES.includes(scheduled.activityType?.name ?? '')) modelActivities.add(String(event.eventId));
      continue;
    }
    const started = event.activityTaskStartedEventAttributes;
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED && started) {
      if (modelActivities.has(String(started.scheduledEventId))) retried += Math.max(0, (started.attempt ?? 1) - 1);
    }
  }
  return retried;
}

/** The visibility query for every workflow of a unit: its own, its children's, its sessions' operations. */
export function unitWorkflowsQuery(unitId: string): string {
  return [
    `WorkflowId = '${unitId}'`,
    `WorkflowId STARTS_WITH '${unitId}.'`,
    `WorkflowId STARTS_WITH 'op-${unitId}.'`,
  ].join(' OR ');
}

/** Per unit, the retried model-call attempts of all its workflows' runs. */
export async function retriedModelAttempts(client: Client, unitIds: readonly string[]): Promise<Map<string, number>> {
  const retried = new Map<string, number>();
  for (const unitId of unitIds) {
    let total = 0;
    for await (const execution of client.workflow.list({ query: unitWorkflowsQuery(unitId) })) {
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      total += retriedModelAttemptsOf(history);
    }
    retried.set(unitId, total);
  }
  return retried;
}
