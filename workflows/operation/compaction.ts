/**
 * Keeping the context inside the window, at each checkpoint (after steering is applied, before the
 * model turn): run a compaction that was asked for (`agent compact`, a full window) or that the
 * next request needs (it would pass `compactAtPct`); otherwise plan the clear batch the next model
 * step carries. And reactively: a model step refused as too large (413, prompt too long) gets one
 * reduced compaction and one retry before the operation fails.
 *
 * A compaction is its own recorded step: the `compactContext` activity (id `compaction-<n>`,
 * summary "compaction"), whose input and result a reader of the history finds (`common/recorded-steps.ts`).
 * Scheduling it changed the command sequence of operations, hence the `patched` guard.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import { COMPACTION_SUMMARY, type CompactionReason } from '../../common/context';
import type { BrainActivities, ModelStepResult } from '../../common/model-step';
import { CONTEXT_TOO_LARGE_FAILURE_TYPES, usageOfFailedCall, ZERO_USAGE } from '../../common/model-types';
import { compactUpdate, switchModelUpdate } from '../../common/operation';
import { afterBudgetAsks, withinDeadline } from './budget';
import {
  canCompact,
  contextFingerprint,
  continuationOf,
  nextRequestTokens,
  planClearBatch,
  summaryFitsWindow,
  turnLookahead,
  windowOf,
} from './context-window';
import { requestModelTurn } from './model-turn';
import { heartbeatOverride, type OperationRun } from './state';
import { COMPACTION_ACTIVITY_OPTIONS } from '../shared/policies';
import { stuckDetectionOn, watchActivity } from './stuck';
import { mcpToolsOf } from './mcp-tools';

/** The `patched()` id of scheduling compaction steps. */
export const COMPACTION_PATCH = 'context-compaction';
/** The `patched()` id of watching compaction steps for being stuck (the watch may add a timer and probes). */
export const COMPACTION_WATCH_PATCH = 'compaction-stuck-watch';

/** `agent compact` and the refused mid-operation model switch. */
export function acceptContextUpdates(op: OperationRun): void {
  setHandler(
    compactUpdate,
    () => {
      op.requestCompaction('manual');
      return { accepted: true as const };
    },
    {
      validator: (arg) => {
        if (arg?.reason !== undefined && typeof arg.reason !== 'string') throw new Error('reason: must be a string');
        if (op.ended) throw new Error(`the operation has already ended (${op.ended.state}): nothing to compact`);
        if (op.abortReason !== undefined) throw new Error('the operation is being aborted: nothing to compact');
      },
    },
  );
  setHandler(
    switchModelUpdate,
    () => {
      throw ApplicationFailure.nonRetryable('unreachable: the validator refuses every model switch');
    },
    {
      validator: (arg) => {
        const current = op.settings.model ?? op.carry.context.model ?? 'the worker default';
        throw new Error(
          `model: an operation's model is fixed for its life (this one runs ${current}); a switch mid-way would rebuild ` +
            `the whole prompt cache. Name ${typeof arg?.model === 'string' ? arg.model : 'the new model'} in the lane's next operation instead.`,
        );
      },
    },
  );
}

/**
 * The checkpoint's context step: a compaction when one is asked for or needed (then no clear
 * batch), else the clear batch for the next model step (`op.nextClear`). Returns false when the
 * deadline passed during a compaction. `beforeCompaction` runs first (the PreCompact hooks).
 */
export async function keepContextInWindow(
  op: OperationRun,
  beforeCompaction?: (reason: CompactionReason) => Promise<void>,
): Promise<boolean> {
  op.setClearBatch(undefined);
  const reason = compactionNeeded(op);
  if (reason && canCompact(op) && isPatched(COMPACTION_PATCH)) {
    // hooks: PreCompact (`hooks.ts`); nothing is scheduled without hooks.
    await beforeCompaction?.(reason);
    return compact(op, reason, false);
  }
  // Asked for with nothing to compact yet (too few turns): dropped.
  op.dropCompactionRequest();
  op.setClearBatch(planClearBatch(op)?.clear);
  return true;
}

function compactionNeeded(op: OperationRun): CompactionReason | undefined {
  const { requested } = op.carry.context;
  if (requested) return requested;
  const policy = op.settings.context;
  if (!policy.compaction) return undefined;
  const batch = planClearBatch(op);
  const next = nextRequestTokens(op) - (batch?.removed ?? 0);
  return next + turnLookahead(op) > (policy.compactAtPct / 100) * windowOf(op) ? 'threshold' : undefined;
}

/** Runs one compaction step and applies its result; false when the deadline passed first. */
export async function compact(op: OperationRun, reason: CompactionReason, reduced: boolean): Promise<boolean> {
  const { carry, settings } = op;
  const number = carry.context.compactions + 1;
  const activityId = `compaction-${number}${afterBudgetAsks(op)}`;
  const { compactContext } = proxyActivities<BrainActivities>({
    ...COMPACTION_ACTIVITY_OPTIONS,
    ...heartbeatOverride(op),
    activityId,
    summary: `${COMPACTION_SUMMARY} ${number} (${reason})`,
  });
  op.startCompaction();
  const watched = <T>(run: () => Promise<T>): Promise<T> =>
    stuckDetectionOn() && isPatched(COMPACTION_WATCH_PATCH)
      ? watchActivity(op, { activityId, taskQueue: workflowInfo().taskQueue, waitingOn: `compaction ${number}` }, run)
      : run();
  let result;
  try {
    result = await withinDeadline(op, () =>
      watched(() =>
        compactContext({
          operationId: op.operationId,
          lane: settings.lane,
          turn: carry.turn,
          compaction: number,
          reason,
          ...(settings.model !== undefined ? { model: settings.model } : {}),
          base: contextFingerprint(op),
          tail: [...carry.tail],
          keepTurns: settings.context.keepTurns,
          goal: settings.goal,
          summaryMaxTokens: settings.context.summaryMaxTokens,
          reduced: reduced || !summaryFitsWindow(op),
          // The last request that fit carried about `context.tokens`; leave room for the summary.
          fitTokens: Math.floor(Math.min(0.8 * windowOf(op), carry.context.tokens)),
          ...continuationOf(op),
          ...mcpToolsOf(op),
        }),
      ),
    );
  } catch (err) {
    recordFailedCall(op, err, 'compaction');
    throw err;
  }
  if (result === undefined) return false;
  op.recordCompaction(result);
  return true;
}

/**
 * The model turn with its reactive recovery: when the request is refused as too large, one
 * compaction of a reduced context and one retry; a second refusal fails the operation. The usage of
 * a step that finally failed reaches the ledger either way. `undefined`: the deadline passed.
 */
export async function modelTurnWithinWindow(op: OperationRun): Promise<ModelStepResult | undefined> {
  try {
    return await requestModelTurn(op);
  } catch (err) {
    recordFailedCall(op, err, 'model');
    if (!isContextTooLarge(err) || !op.settings.context.compaction || !canCompact(op)) throw err;
    if (!isPatched(COMPACTION_PATCH)) throw err;
  }
  op.setClearBatch(undefined);
  if (!(await compact(op, 'too-large', true))) return undefined;
  op.resumeModelTurn();
  try {
    return await requestModelTurn(op);
  } catch (err) {
    recordFailedCall(op, err, 'model');
    throw err;
  }
}

function isContextTooLarge(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof ApplicationFailure &&
    CONTEXT_TOO_LARGE_FAILURE_TYPES.includes(err.cause.type ?? '')
  );
}

/** Adds the usage a finally failed model or compaction call was billed to the operation's usage and ledger. */
function recordFailedCall(op: OperationRun, err: unknown, kind: 'model' | 'compaction'): void {
  if (!(err instanceof ActivityFailure)) return;
  const cause = err.cause;
  const details =
    cause instanceof ApplicationFailure
      ? cause.details?.[0]
      : cause instanceof TimeoutFailure
        ? cause.lastHeartbeatDetails
        : undefined;
  op.billFailedCall(usageOfFailedCall(details) ?? ZERO_USAGE, kind);
}
