/**
 * Rewinding from a client (CLI, tests): reading an operation's checkpoints from its history, and
 * running a `rewind` workflow to its result (`common/rewind.ts`).
 */
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { CHECKPOINT_FAILURE_TYPES } from '../common/checkpoints';
import { readCheckpoints, type CheckpointRecord } from '../common/rewind-plan';
import {
  REWIND_FAILURE_TYPES,
  REWIND_WORKFLOW_TYPE,
  rewindWorkflowId,
  type RewindInput,
  type RewindResult,
} from '../common/rewind';
import { HistoryReader } from './histories';
import { Refused } from './session';

/** The operation's checkpoint activities in order; a `Refused` (`UnknownOperation`) when there is no such workflow. */
export async function operationCheckpoints(client: Client, operationId: string): Promise<CheckpointRecord[]> {
  const runs = await new HistoryReader(client).runs(operationId);
  if (!runs) throw new Refused(REWIND_FAILURE_TYPES.unknownOperation, `no operation ${operationId}`);
  return readCheckpoints(runs.runs);
}

/**
 * Runs a rewind into the new session `sessionId` (workflow `rewind-<sessionId>` on the brain queue)
 * and returns its result; a rewind the history refuses (no such turn, no checkpoint) is a `Refused`,
 * and so is a session id an earlier rewind used (`WorkspaceExists`).
 */
export async function runRewind(
  client: Client,
  options: { input: RewindInput & { sessionId: string }; taskQueue: string },
): Promise<RewindResult> {
  const { sessionId } = options.input;
  const handle = await client.workflow
    .start(REWIND_WORKFLOW_TYPE, {
      workflowId: rewindWorkflowId(sessionId),
      taskQueue: options.taskQueue,
      args: [options.input],
      staticSummary: `rewind ${options.input.operationId} to turn ${options.input.toTurn}`,
      // One rewind per new session, ever: a second one would find the first one's workspace.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    })
    .catch((err: unknown) => {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      throw new Refused(
        CHECKPOINT_FAILURE_TYPES.workspaceExists,
        `session ${sessionId} was made by an earlier rewind: choose a new session id`,
      );
    });
  let result: RewindResult;
  try {
    result = (await handle.result()) as RewindResult;
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure)
      throw new Refused(err.cause.type ?? 'RewindFailed', err.cause.message);
    throw err;
  }
  if (result.operationId) await operationStarted(client, result.operationId);
  return result;
}

/**
 * The new session starts the lane's operation right after the rewind made it: wait until that
 * operation exists, so the id the caller is given can be followed at once (`agent events`).
 */
async function operationStarted(client: Client, operationId: string, timeoutMs = 60_000): Promise<void> {
  const handle = client.workflow.getHandle(operationId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await handle.describe().then(
      () => true,
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
    if (found || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
