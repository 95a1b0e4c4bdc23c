/** The operation's budgets — turns, tokens, cost, wall-clock deadline — and the deadline applied to one step. */
import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { totalTokens } from '../../common/model-types';
import { costUsd } from '../../common/pricing';
import { OperationEnd, type OperationRun } from './state';

/** The end a spent budget calls for, checked before each model turn. */
export function spentBudget(op: OperationRun): OperationEnd | undefined {
  const { budget } = op.settings;
  const { carry } = op;
  if (carry.turn >= budget.maxTurns) return new OperationEnd('failed', `budget: turns (${budget.maxTurns} used)`);
  if (budget.maxTotalTokens !== undefined && totalTokens(carry.usage) >= budget.maxTotalTokens) {
    return new OperationEnd('failed', `budget: tokens (${totalTokens(carry.usage)} of ${budget.maxTotalTokens})`);
  }
  if (budget.maxCostUsd !== undefined) {
    const spent = costUsd(carry.usage, op.settings.model ?? carry.context.model);
    if (spent >= budget.maxCostUsd) {
      return new OperationEnd('failed', `budget: cost ($${spent.toFixed(4)} of $${budget.maxCostUsd})`);
    }
  }
  if (budget.maxDurationMs !== undefined && Date.now() - carry.startedAtMs >= budget.maxDurationMs) {
    return deadlineEnd(op);
  }
  return undefined;
}

export function deadlineEnd(op: OperationRun): OperationEnd {
  return new OperationEnd('failed', `budget: deadline (${op.settings.budget.maxDurationMs} ms)`);
}

/** Milliseconds left before the deadline, or undefined without one. */
export function timeLeftMs(op: OperationRun): number | undefined {
  const { maxDurationMs } = op.settings.budget;
  return maxDurationMs === undefined ? undefined : op.carry.startedAtMs + maxDurationMs - Date.now();
}

/** Runs `fn`, cancelling it when `remainingMs` passes first; `undefined` means the deadline won. */
export async function withDeadline<T>(remainingMs: number | undefined, fn: () => Promise<T>): Promise<T | undefined> {
  if (remainingMs === undefined) return fn();
  if (remainingMs <= 0) return undefined;
  let expired = false;
  const work = new CancellationScope();
  const timerScope = new CancellationScope();
  const timer = timerScope
    .run(() => sleep(remainingMs))
    .then(
      () => {
        expired = true;
        work.cancel();
      },
      () => undefined,
    );
  try {
    return await work.run(fn);
  } catch (err) {
    if (expired && isCancellation(err)) return undefined;
    throw err;
  } finally {
    timerScope.cancel();
    await timer;
  }
}
