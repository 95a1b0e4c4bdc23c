/**
 * The operation's budgets — turns, tokens, cost, wall-clock deadline — the deadline applied to one
 * step, and, with `budget.onExceeded: "ask"`, the approval that extends a spent budget instead of
 * ending the operation (`common/budget.ts`). Without it nothing here schedules anything.
 */
import { CancellationScope, condition, isCancellation, sleep } from '@temporalio/workflow';
import {
  approvedExtension,
  budgetApprovalId,
  budgetAskSummary,
  budgetExtension,
  extendedLimits,
  type BudgetLimits,
  type SpentBudget,
} from '../../common/budget';
import { totalTokens } from '../../common/model-types';
import { costUsd } from '../../common/pricing';
import { deadlineTimerOf, type DeadlineTimer } from '../shared/deadline-timer';
import { waitForDecision } from './approvals';
import { OperationEnd, type OperationRun } from './state';

/** A spent budget and the end it calls for unless a person extends it. */
export interface Spent extends SpentBudget {
  end: OperationEnd;
}

function limitsAsSet(op: OperationRun): BudgetLimits {
  const { budget } = op.settings;
  return {
    turns: budget.maxTurns,
    tokens: budget.maxTotalTokens,
    cost: budget.maxCostUsd,
    deadline: budget.maxDurationMs,
  };
}

/** The limits in force: as set, plus what approvals added. */
export function budgetLimits(op: OperationRun): BudgetLimits {
  return extendedLimits(limitsAsSet(op), op.carry.budgetAsks);
}

/** The budget found spent before a model turn, if any. */
export function spentBudget(op: OperationRun): Spent | undefined {
  const limits = budgetLimits(op);
  const { carry } = op;
  const turns = limits.turns!;
  if (carry.turn >= turns) {
    return { name: 'turns', used: carry.turn, limit: turns, end: failed(`budget: turns (${turns} used)`) };
  }
  const tokens = totalTokens(carry.usage);
  if (limits.tokens !== undefined && tokens >= limits.tokens) {
    const end = failed(`budget: tokens (${tokens} of ${limits.tokens})`);
    return { name: 'tokens', used: tokens, limit: limits.tokens, end };
  }
  if (limits.cost !== undefined) {
    const spent = costUsd(carry.usage, op.settings.model ?? carry.context.model);
    if (spent >= limits.cost) {
      const end = failed(`budget: cost ($${spent.toFixed(4)} of $${limits.cost})`);
      return { name: 'cost', used: spent, limit: limits.cost, end };
    }
  }
  if (limits.deadline !== undefined && deadlinePassed(op, limits.deadline)) return deadlineSpent(op);
  return undefined;
}

const deadlineTimers = new WeakMap<OperationRun, DeadlineTimer | null>();

/**
 * The operation's deadline timer armed for the deadline in force (`shared/deadline-timer.ts`):
 * undefined without a deadline, or in runs from before the timer (they compare the clock).
 */
function deadlineTimer(op: OperationRun): DeadlineTimer | undefined {
  const { deadline } = budgetLimits(op);
  const timer = deadlineTimerOf(deadlineTimers, op, deadline !== undefined);
  // What approvals added to the deadline names the deadline in force (it only grows).
  timer?.arm(op.carry.startedAtMs + deadline!, String(op.carry.budgetAsks?.added.durationMs ?? 0));
  return timer;
}

/**
 * Starts the operation's deadline timer: in its first workflow task, before anything is awaited, so
 * the clock it reads is that task's (a deadline already past by then makes a one-millisecond timer).
 */
export function startDeadline(op: OperationRun): void {
  deadlineTimer(op);
}

function deadlinePassed(op: OperationRun, deadline: number): boolean {
  const timer = deadlineTimer(op);
  return timer ? timer.passed : Date.now() - op.carry.startedAtMs >= deadline;
}

/** The deadline as spent (a step it cut short, or the checkpoint after it passed). */
export function deadlineSpent(op: OperationRun): Spent {
  const limit = budgetLimits(op).deadline!;
  return {
    name: 'deadline',
    used: Date.now() - op.carry.startedAtMs,
    limit,
    end: failed(`budget: deadline (${limit} ms)`),
  };
}

function failed(reason: string): OperationEnd {
  return new OperationEnd('failed', reason);
}

/** Milliseconds left before the deadline, or undefined without one. */
export function timeLeftMs(op: OperationRun): number | undefined {
  const deadline = budgetLimits(op).deadline;
  return deadline === undefined ? undefined : op.carry.startedAtMs + deadline - Date.now();
}

/**
 * What a spent budget does: its end (`onExceeded: "end"`), or — asking — undefined once a person
 * approved the extension (the loop goes on), the end with the decision when denied or timed out,
 * and an abort's end when the operation was aborted while it waited.
 */
export async function endUnlessExtended(op: OperationRun, spent: Spent): Promise<OperationEnd | undefined> {
  if (op.settings.budget.onExceeded !== 'ask') return spent.end;
  const setLimit = limitsAsSet(op)[spent.name]!;
  const extension = budgetExtension(spent.name, setLimit);
  const { name, used, limit } = spent;
  const { decision, by } = await waitForDecision(op, {
    toolCallId: budgetApprovalId(op.askForBudget()),
    tool: 'budget',
    summary: budgetAskSummary(spent, extension),
    budget: { name, used, limit, extension },
  });
  if (by === 'abort') return new OperationEnd('aborted', `aborted: ${op.abortReason}`);
  if (!decision.approve) {
    const why =
      by === 'timeout' ? 'the approval timed out' : `denied by a person: ${decision.reason ?? 'no reason given'}`;
    return failed(`${spent.end.reason}; not extended: ${why}`);
  }
  op.extendBudget(approvedExtension(op.carry.budgetAsks!, spent, extension, Date.now() - op.carry.startedAtMs));
  return undefined;
}

/**
 * What a model or compaction step's activity id ends with: nothing until a budget asked, then the
 * ask's number — a step the deadline cut short may still be pending on the server when it is run
 * again after the approval, and an activity id must not be in use twice at once.
 */
export function afterBudgetAsks(op: OperationRun): string {
  const asked = op.carry.budgetAsks?.asked;
  return asked ? `-after-budget-${asked}` : '';
}

/**
 * Runs one step of the operation (`fn`), cancelling it when the deadline passes first; `undefined`
 * means the deadline won (or had passed already, and `fn` did not run).
 */
export async function withinDeadline<T>(op: OperationRun, fn: () => Promise<T>): Promise<T | undefined> {
  const timer = deadlineTimer(op);
  if (!timer) return withDeadline(timeLeftMs(op), fn);
  if (timer.passed) return undefined;
  let expired = false;
  const work = new CancellationScope();
  const watchScope = new CancellationScope();
  const watch = watchScope
    .run(() => condition(() => timer.passed))
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
    watchScope.cancel();
    await watch;
  }
}

/** Runs `fn`, cancelling it when `remainingMs` passes first; `undefined` means the deadline won. */
async function withDeadline<T>(remainingMs: number | undefined, fn: () => Promise<T>): Promise<T | undefined> {
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
