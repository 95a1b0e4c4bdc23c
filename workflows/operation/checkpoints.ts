/**
 * Checkpoints of the workspace (`common/checkpoints.ts`): after a turn whose tool batch had a call
 * that can change files (a call with valid arguments to a tool that is not `safe`: the edit tools,
 * `bash`, a subagent's `task`), the operation records the workspace on its hands host, under the
 * session's sandbox lease, so no other lane's tool call runs meanwhile. When the batch ends with a
 * sandbox tool call (without tool hooks), that call's own activity records it once the call has run
 * (`RunToolInput.checkpoint`: no activity of its own, no events of its own); otherwise — or when
 * that call never ran — a `checkpointWorkspace` activity does. Before its first such batch it
 * records the workspace as it found it (`base`, as the turn before), so every turn of the operation
 * has a checkpoint at or before it. The activity's result is the record: `agent checkpoints` reads
 * it from the history, `agent rewind` restores it.
 *
 * A checkpoint never stops the operation: one that fails is counted and the loop goes on; a sandbox
 * whose image has no git answers `skipped`, and no more are tried. New commands in the loop, so only
 * in operations that took the `checkpoints` patch; recorded by the tool call only in operations
 * that took the `checkpoint-with-tool-call` patch.
 */
import { ActivityFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import { isDefaultExclude, type CheckpointActivities, type CheckpointKind } from '../../common/checkpoints';
import type { ToolCallCheckpoint, ToolOutcome } from '../../common/hands';
import type { ToolUseBlock } from '../../common/model-types';
import { replayPolicyOf, validateModelToolCall, validateToolCall } from '../../common/tools';
import { CHECKPOINT_ACTIVITY_OPTIONS } from '../shared/policies';
import { isMcpToolName } from './mcp-tools';
import type { OperationSandbox } from './sandbox';
import { heartbeatOverride, type OperationRun } from './state';
import { stuckDetectionOn, watchActivity } from './stuck';

export const CHECKPOINTS_PATCH = 'checkpoints';
/** Histories recorded before it took every turn's checkpoint with an activity of its own. */
export const CHECKPOINT_WITH_TOOL_CALL_PATCH = 'checkpoint-with-tool-call';

/** Before the batch: the workspace as the operation found it, once, before its first change. */
export async function checkpointBeforeBatch(
  op: OperationRun,
  sandbox: OperationSandbox,
  calls: readonly ToolUseBlock[],
): Promise<void> {
  if ((op.carry.checkpoints?.taken ?? 0) > 0 || !due(op, calls)) return;
  await recordCheckpoint(op, sandbox, 'base', op.carry.turn - 1);
}

/**
 * The checkpoint the batch's last call records in its own activity, when the batch is due one and
 * that call is a sandbox tool call (the caller leaves out calls with tool hooks: a PostToolUse hook
 * runs after the call and may change files too).
 */
export function checkpointWithLastCall(
  op: OperationRun,
  calls: readonly ToolUseBlock[],
): ToolCallCheckpoint | undefined {
  const last = calls.at(-1);
  if (!last || !validateToolCall(last.name, last.input).ok || !due(op, calls)) return undefined;
  if (!isPatched(CHECKPOINT_WITH_TOOL_CALL_PATCH)) return undefined;
  const { exclude } = op.settings.checkpoints;
  // The hands read an absent `exclude` as the default's (every step's history holds this input).
  return isDefaultExclude(exclude) ? { turn: op.carry.turn } : { turn: op.carry.turn, exclude: [...exclude] };
}

/** What a tool call's activity says of the checkpoint it was asked to record. */
export function recordCheckpointOfCall(op: OperationRun, checkpoint: ToolCallCheckpoint, outcome: ToolOutcome): void {
  if (outcome.checkpoint) op.recordCheckpoint(checkpoint.turn, outcome.checkpoint);
  else if (outcome.checkpointFailure !== undefined)
    op.recordCheckpointFailure(
      checkpoint.turn,
      `checkpoint after turn ${checkpoint.turn}: ${outcome.checkpointFailure}`,
    );
}

/** After the batch: the workspace as the turn left it, unless the batch's last call recorded it. */
export async function checkpointAfterBatch(
  op: OperationRun,
  sandbox: OperationSandbox,
  calls: readonly ToolUseBlock[],
): Promise<void> {
  if (op.carry.checkpoints?.tried === op.carry.turn || !due(op, calls)) return;
  await recordCheckpoint(op, sandbox, 'turn', op.carry.turn);
}

/** A batch that can change files, in an operation that records checkpoints and can still run tools. */
function due(op: OperationRun, calls: readonly ToolUseBlock[]): boolean {
  if (!op.settings.checkpoints.enabled || op.carry.checkpoints?.skipped !== undefined) return false;
  if (op.abortReason !== undefined || op.environmentFailure) return false;
  // A call refused for its arguments never runs (`tool-calls.ts`): it changes nothing.
  const changing = calls.some(
    (call) =>
      !isMcpToolName(call.name) &&
      replayPolicyOf(call.name) !== 'safe' &&
      validateModelToolCall(call.name, call.input).ok,
  );
  return changing && isPatched(CHECKPOINTS_PATCH);
}

async function recordCheckpoint(
  op: OperationRun,
  sandbox: OperationSandbox,
  kind: CheckpointKind,
  turn: number,
): Promise<void> {
  const activityId = `checkpoint-${kind}-${turn}`;
  const summary = kind === 'base' ? `checkpoint before turn ${turn + 1}` : `checkpoint after turn ${turn}`;
  try {
    const outcome = await sandbox.use(() => {
      op.countStep();
      return sandbox.route.call((taskQueue) => {
        const { checkpointWorkspace } = proxyActivities<CheckpointActivities>({
          ...CHECKPOINT_ACTIVITY_OPTIONS,
          ...heartbeatOverride(op),
          taskQueue,
          activityId,
          summary,
        });
        const run = () =>
          checkpointWorkspace({
            sessionId: op.sessionId,
            operationId: op.operationId,
            turn,
            kind,
            exclude: [...op.settings.checkpoints.exclude],
          });
        const host = sandbox.route.host?.host;
        return stuckDetectionOn() ? watchActivity(op, { activityId, taskQueue, waitingOn: summary, host }, run) : run();
      });
    });
    op.recordCheckpoint(turn, outcome);
  } catch (err) {
    // An abort is the loop's to handle; anything else costs this checkpoint, not the operation.
    if (isCancellation(err) || op.abortReason !== undefined) return;
    const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
    op.recordCheckpointFailure(turn, `${summary}: ${(cause as Error).message}`);
  }
}
