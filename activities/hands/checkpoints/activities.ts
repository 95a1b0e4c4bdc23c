/**
 * The checkpoint activities on the hands host holding a session's workspace (contract:
 * `common/checkpoints.ts`): `checkpointWorkspace` records it, `restoreCheckpoint` makes a new
 * session's workspace from one. Failures are classified here, at the activity boundary.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  CHECKPOINT_FAILURE_TYPES,
  checkpointResult,
  type CheckpointResult,
  type CheckpointWorkspaceInput,
  type RestoreCheckpointInput,
  type RestoredWorkspace,
} from '../../../common/checkpoints';
import { volumeNameOf } from '../../../common/sandbox-names';
import { crashPoint } from '../../crash-points';
import { currentActivity, Heartbeat } from '../../heartbeat';
import { claimSandboxHost } from '../claim-host';
import type { HandsContext } from '../deps';
import { toActivityFailure } from '../failures';

export async function checkpointWorkspace(
  hands: HandsContext,
  input: CheckpointWorkspaceInput,
): Promise<CheckpointResult> {
  const heartbeat = new Heartbeat(currentActivity(), hands.heartbeatEveryMs, { sessionId: input.sessionId }, false);
  try {
    await hands.sandboxes.lifecycle.ensure(input.sessionId, { operationId: input.operationId });
    return checkpointResult(await hands.sandboxes.checkpoints.record(input));
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    heartbeat.stop();
  }
}

export async function restoreCheckpoint(
  hands: HandsContext,
  input: RestoreCheckpointInput,
): Promise<RestoredWorkspace> {
  const activity = currentActivity();
  const heartbeat = new Heartbeat(activity, hands.heartbeatEveryMs, { sessionId: input.sessionId, restoring: true });
  // The owner of the new volumes: a retried attempt of this restore finds its own workspace.
  const owner = input.operationId ?? activity?.info.workflowExecution?.workflowId ?? `restore-${input.sessionId}`;
  try {
    const outcome = await hands.sandboxes.checkpoints.restore(
      { fromSessionId: input.fromSessionId, commit: input.commit, sessionId: input.sessionId, owner },
      () => crashPoint('checkpoint: restoring the workspace'),
    );
    if (outcome.kind === 'unknown-checkpoint') {
      throw ApplicationFailure.nonRetryable(
        `session ${input.fromSessionId} has no checkpoint ${input.commit} on hands host ${hands.host.host}`,
        CHECKPOINT_FAILURE_TYPES.unknownCheckpoint,
      );
    }
    if (outcome.kind === 'workspace-exists') {
      throw ApplicationFailure.nonRetryable(
        `session ${input.sessionId} has a workspace already (made by ${outcome.owner ?? 'another session'}): choose a new session id`,
        CHECKPOINT_FAILURE_TYPES.workspaceExists,
      );
    }
    return {
      sessionId: input.sessionId,
      commit: outcome.commit,
      files: outcome.files,
      workspaceVolume: volumeNameOf(input.sessionId, hands.host.namePrefix),
      handsHost: await claimSandboxHost(hands.host),
    };
  } catch (err) {
    throw toActivityFailure(err);
  } finally {
    heartbeat.stop();
  }
}
