/**
 * Temporal's own floor for the harness's step shape: a workflow that does nothing but what every
 * step of an operation does at the least — one activity on the brain's queue (where the model call
 * runs) and one on the hands queue (where the tool call runs), each awaited before the next. It
 * returns the time each brain activity ran (the worker's clock), so a step is timed as the
 * harness's is: the gap between two consecutive "model calls". With a model latency, the brain
 * activity waits so long after noting its time, as the scripted model does before it answers.
 */
import { proxyActivities } from '@temporalio/workflow';

export const FLOOR_WORKFLOW_TYPE = 'benchFloorWorkflow';

export interface FloorInput {
  steps: number;
  handsQueue: string;
  /** How long each "model call" takes (default 0). */
  modelLatencyMs?: number;
}

export interface FloorActivities {
  /** Returns `Date.now()` in the worker when the step's "model call" started; takes `latencyMs` to return. */
  floorModelStep(latencyMs: number): Promise<number>;
  floorToolCall(): Promise<void>;
}

export async function benchFloorWorkflow(input: FloorInput): Promise<number[]> {
  const brain = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
  const hands = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute', taskQueue: input.handsQueue });
  const modelCallTimes: number[] = [];
  for (let step = 0; step < input.steps; step++) {
    modelCallTimes.push(await brain.floorModelStep(input.modelLatencyMs ?? 0));
    await hands.floorToolCall();
  }
  // One more "model call": the last step's gap ends where the harness's would (at the next request).
  modelCallTimes.push(await brain.floorModelStep(0));
  return modelCallTimes;
}
