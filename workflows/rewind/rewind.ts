/**
 * `rewind` (id `rewind-<new session id>`): goes back to turn N of an operation as a fork
 * (`common/rewind.ts`) — plan from the history, restore the checkpoint into the new session's
 * workspace on the hands host that holds it, and only then start the new session, whose lane
 * continues the conversation as it was after turn N (or starts afresh with `codeOnly`) and runs the
 * prompt, if one was given. The original operation, its session and its workspace are only read.
 *
 * Crash safety: the plan is a read; the restore is idempotent (a retry starts the new workspace over
 * and ends with the same files); the session is started after the restore has completed, so a worker
 * killed at any point leaves either no new session or a complete one. The session is a child that
 * outlives this workflow (`ABANDON`).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { CheckpointActivities, RestoredWorkspace } from '../../common/checkpoints';
import { DEFAULT_LANE, SUBAGENT_LANE_PREFIX } from '../../common/lanes';
import {
  parseRewindInput,
  REWIND_FAILURE_TYPES,
  sessionIdOfRewind,
  type RewindActivities,
  type RewindPlan,
  type RewindResult,
  type RewindSettings,
} from '../../common/rewind';
import { sessionIdFor } from '../../common/sandbox-names';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { SESSION_WORKFLOW_TYPE, sessionOperationId, sessionWorkflowId, type SessionInput } from '../../common/session';
import { REWIND_PLAN_ACTIVITY_OPTIONS, RESTORE_CHECKPOINT_ACTIVITY_OPTIONS } from '../shared/policies';

export async function rewind(rawInput: unknown): Promise<RewindResult> {
  const input = validInput(rawInput);
  const { workflowId, taskQueue, firstExecutionRunId } = workflowInfo();
  const sessionId = input.sessionId ?? sessionIdOfRewind(workflowId) ?? sessionIdFor(workflowId);
  const { planRewind } = proxyActivities<RewindActivities>({ ...REWIND_PLAN_ACTIVITY_OPTIONS, taskQueue });
  const plan = await failingAs(() =>
    planRewind({ operationId: input.operationId, toTurn: input.toTurn, codeOnly: input.codeOnly }),
  );
  const { restoreCheckpoint } = proxyActivities<CheckpointActivities>({
    ...RESTORE_CHECKPOINT_ACTIVITY_OPTIONS,
    taskQueue: plan.checkpoint.taskQueue,
    summary: `restore the workspace of ${plan.from.operationId} at turn ${plan.checkpoint.turn}`,
  });
  const restored = await failingAs(() =>
    restoreCheckpoint({
      fromSessionId: plan.from.sessionId,
      commit: plan.checkpoint.commit,
      sessionId,
      // Who makes the workspace: this rewind's attempts find it theirs; any other rewind into it is refused.
      operationId: `${workflowId}@${firstExecutionRunId}`,
    }),
  );
  const lane = input.lane ?? (plan.from.lane.startsWith(SUBAGENT_LANE_PREFIX) ? DEFAULT_LANE : plan.from.lane);
  const operationId = input.prompt !== undefined ? sessionOperationId(sessionId, 1) : null;
  await startChild(SESSION_WORKFLOW_TYPE, {
    workflowId: sessionWorkflowId(sessionId),
    taskQueue,
    args: [sessionInputOf(input, plan, restored, { sessionId, lane, operationId })],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    staticSummary: `session ${sessionId} (rewound from ${plan.from.operationId} turn ${input.toTurn})`,
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'session' },
      { key: SEARCH_ATTRIBUTES.status, value: 'running' },
    ],
  });
  return {
    sessionId,
    lane,
    operationId,
    from: { sessionId: plan.from.sessionId, operationId: plan.from.operationId, turn: input.toTurn },
    checkpoint: { turn: plan.checkpoint.turn, kind: plan.checkpoint.kind, commit: plan.checkpoint.commit },
    files: restored.files,
    workspaceVolume: restored.workspaceVolume,
  };
}

function validInput(rawInput: unknown): RewindSettings {
  const parsed = parseRewindInput(rawInput);
  if (parsed.ok) return parsed.value;
  throw ApplicationFailure.nonRetryable(`invalid rewind input: ${parsed.error}`, REWIND_FAILURE_TYPES.invalidInput);
}

/** The new session: the original operation's settings, its restored workspace, the lane that continues. */
function sessionInputOf(
  input: RewindSettings,
  plan: RewindPlan,
  restored: RestoredWorkspace,
  made: { sessionId: string; lane: string; operationId: string | null },
): SessionInput {
  return {
    sessionId: made.sessionId,
    ...(plan.handsTaskQueue ? { handsTaskQueue: plan.handsTaskQueue } : {}),
    defaults: plan.defaults,
    fork: {
      from: {
        sessionId: plan.from.sessionId,
        operationId: plan.from.operationId,
        turn: input.toTurn,
        commit: plan.checkpoint.commit,
      },
      lane: made.lane,
      ...(plan.continues ? { context: plan.continues } : {}),
      handsHost: restored.handsHost,
      ...(input.prompt !== undefined && made.operationId
        ? { prompt: { prompt: input.prompt, operationId: made.operationId } }
        : {}),
    },
  };
}

/** Runs an activity; its final failure ends the rewind with the activity's own type and message. */
async function failingAs<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure) throw ApplicationFailure.nonRetryable(cause.message, cause.type);
    throw err;
  }
}
