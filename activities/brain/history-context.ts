/**
 * Rebuilds an operation's model context from its Temporal history alone: the recorded steps of each
 * run (`common/recorded-steps.ts`), newest run first along continue-as-new, back to the run holding
 * the latest completed compaction (it carries everything the context keeps from before it) or the
 * first run; then `assembleContext` replays them.
 *
 * A lane whose context spans several operations walks the same way across their histories: read
 * runs until a compaction, assemble.
 */
import type { Client } from '@temporalio/client';
import { readRecordedRun, type RecordedStep } from '../../common/recorded-steps';
import { assembleContext, type AssembledContext } from './context-assembly';

/** The recorded steps from the latest completed compaction (or the start) to the end of `runId`. */
export async function stepsSinceCompaction(client: Client, workflowId: string, runId: string): Promise<RecordedStep[]> {
  const runs: RecordedStep[][] = [];
  let next: string | undefined = runId;
  while (next) {
    const history = await client.workflow.getHandle(workflowId, next).fetchHistory();
    const { steps, previousRunId } = readRecordedRun(history.events ?? []);
    runs.unshift(steps);
    if (steps.some((step) => step.kind === 'compaction' && step.result !== undefined)) break;
    next = previousRunId;
  }
  return runs.flat();
}

export async function rebuildContextFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<AssembledContext> {
  return assembleContext(await stepsSinceCompaction(client, workflowId, runId));
}
