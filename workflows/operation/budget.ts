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
import { RunDeadlines } from '../shared/deadline-timer';
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
  if (limits.deadline !== undefined && deadlines.passed(op)) return deadlineSpent(op);
  return undefined;
}

const deadlines = new RunDeadlines<OperationRun>((op) => ({
  limitMs: budgetLimits(op).deadline,
  startedAtMs: op.carry.startedAtMs,
  addedMs: op.carry.budgetAsks?.added.durationMs ?? 0,
}));

/** Starts the operation's deadline timer (`shared/deadline-timer.ts`): in its first workflow task. */
export function startDeadline(op: OperationRun): void {
  deadlines.timer(op);
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
 * means the deadline won (or had passed already, and `fn` did not run). Runs from before the
 * deadline timer race the step against a timer of their own.
 */
export async function withinDeadline<T>(op: OperationRun, fn: () => Promise<T>): Promise<T | undefined> {
  const timer = deadlines.timer(op);
  if (timer) return timer.passed ? undefined : cancelledWhen(() => condition(() => timer.passed), fn);
  const remainingMs = timeLeftMs(op);
  if (remainingMs === undefined) return fn();
  if (remainingMs <= 0) return undefined;
  return cancelledWhen(() => sleep(remainingMs), fn);
}

/** Runs `fn`, cancelling it when `until` resolves first; `undefined` means `until` won. */
async function cancelledWhen<T>(until: () => Promise<unknown>, fn: () => Promise<T>): Promise<T | undefined> {
  let expired = false;
  const work = new CancellationScope();
  const untilScope = new CancellationScope();
  const watch = untilScope.run(until).then(
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
    untilScope.cancel();
    await watch;
  }
}
