/**
 * How a model step shows in the Web UI and is watched for being stuck. An activity's summary is
 * fixed when it is scheduled, so a step's summary names its turn and what the turn before it did
 * (`turn 8 · turn 7 → bash, read_file · 12.4k tokens`); the outcome of the last turn is in the
 * current details and in the result's `details`.
 */
import { type ActivityOptions, workflowInfo } from '@temporalio/workflow';
import type { ModelStepResult } from '../../common/model-step';
import { totalTokens, type ToolUseBlock } from '../../common/model-types';
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
  const activityId = `model-turn-${turn}`;
  const summary = op.lastTurnOutcome ? `turn ${turn} · ${op.lastTurnOutcome}` : `turn ${turn}`;
  return {
    options: { activityId, summary },
    run: (run) =>
      watchActivity(op, { activityId, taskQueue: workflowInfo().taskQueue, waitingOn: `model turn ${turn}` }, run),
  };
}

/** Remembers what the turn just recorded did: `turn 7 → bash, read_file · 12.4k tokens` or `turn 9 → end_turn`. */
export function noteTurnOutcome(op: OperationRun, reply: ModelStepResult): void {
  const tools = reply.message.content
    .filter((block): block is ToolUseBlock => block.type === 'tool_use')
    .map((block) => block.name);
  const what = tools.length ? [...new Set(tools)].join(', ') : (reply.stopReason ?? 'end_turn');
  op.lastTurnOutcome = `turn ${op.carry.turn} → ${what} · ${formatTokens(totalTokens(reply.usage))} tokens`;
}

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}
