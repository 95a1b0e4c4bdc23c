/**
 * Rebuilds an operation's model context from Temporal history alone: the recorded steps of each
 * run (`common/recorded-steps.ts`), newest run first along continue-as-new, back to the run holding
 * the latest completed compaction (it carries everything the context keeps from before it) or the
 * first run; then `assembleContext` replays them.
 *
 * A lane whose context spans several operations walks the same way across their histories
 * (`lane-chain.ts`): when the operation's own steps hold no compaction and its first step continues
 * the previous operation of its lane, that operation's steps come first — up to the context it
 * handed on, back to its latest compaction — and so on.
 */
import type { Client } from '@temporalio/client';
import { readRecordedRun, type RecordedStep } from '../../common/recorded-steps';
import { assembleContext, type AssembledContext } from './context-assembly';
import { laneChainSteps } from './lane-chain';

/**
 * The recorded steps of one operation from its latest completed compaction (or its first step) to
 * the end of `runId`; with `everyRun`, of all its runs (from the latest run when `runId` is absent).
 */
export async function stepsSinceCompaction(
  client: Client,
  workflowId: string,
  runId: string | undefined,
  everyRun = false,
): Promise<RecordedStep[]> {
  const runs: RecordedStep[][] = [];
  let next: string | undefined = runId;
  do {
    const history = await client.workflow.getHandle(workflowId, next).fetchHistory();
    const { steps, previousRunId } = readRecordedRun(history.events ?? []);
    runs.unshift(steps);
    if (!everyRun && steps.some((step) => step.kind === 'compaction' && step.result !== undefined)) break;
    next = previousRunId;
  } while (next);
  return runs.flat();
}

export async function rebuildContextFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<AssembledContext> {
  const own = await stepsSinceCompaction(client, workflowId, runId);
  // A predecessor is read whole: the context it handed on may end before its last recorded step.
  const steps = await laneChainSteps((operationId) => stepsSinceCompaction(client, operationId, undefined, true), own);
  return assembleContext(steps);
}
