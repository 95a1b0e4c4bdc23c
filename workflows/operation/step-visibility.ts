/**
 * How a model step shows in the Web UI and is watched for being stuck. An activity's summary is
 * fixed when it is scheduled, so a step's summary names its turn and what the turn before it did
 * (`turn 8 · turn 7 → bash, read_file · 12.4k tokens`, `reply.ts`); the outcome of the last turn is
 * in the current details and in the result's `details`.
 */
import { type ActivityOptions, workflowInfo } from '@temporalio/workflow';
import { afterBudgetAsks } from './budget';
import type { OperationRun } from './state';
import { stuckDetectionOn, watchActivity } from './stuck';

export interface StepWatch {
  options: Pick<ActivityOptions, 'activityId' | 'summary'>;
  run<T>(run: () => Promise<T>): Promise<T>;
}

/** The model step's id, summary and stuck watch; undefined in runs that predate them. */
export function modelStepWatch(op: OperationRun): StepWatch | undefined {
  if (!stuckDetectionOn()) return undefined;
  const turn = op.carry.turn + 1;
  const asked = op.voidReplies > 0 ? `-asked-again-${op.voidReplies}` : '';
  const activityId = `model-turn-${turn}${afterBudgetAsks(op)}${asked}`;
  const summary = op.lastTurnOutcome ? `turn ${turn} · ${op.lastTurnOutcome}` : `turn ${turn}`;
  return {
    options: { activityId, summary },
    run: (run) =>
      watchActivity(op, { activityId, taskQueue: workflowInfo().taskQueue, waitingOn: `model turn ${turn}` }, run),
  };
}
