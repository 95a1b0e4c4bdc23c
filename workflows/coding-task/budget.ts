/**
 * A coding task's budgets for the whole run — tokens, cost, deadline — checked between operations
 * (and passed down to each operation as what is left), and, with `budget.onExceeded: "ask"`, the
 * approval that extends a spent one instead of ending the run (`common/budget.ts`): the task waits
 * (`AgentStatus = "waiting-approval"`, its status and details name the budget and the extension)
 * for `agent approve <task id> budget-<n>`; a denial, or nobody deciding within
 * `approvalTimeoutMs`, ends it as the spent budget does. An abort while it waits ends it aborted.
 */
import { ApplicationFailure, condition, isCancellation, setHandler, upsertMemo } from '@temporalio/workflow';
import {
  APPROVAL_FAILURE_TYPES,
  approvalDecisionProblem,
  approveUpdate,
  type ApprovalDecisionInput,
  type WaitingApproval,
} from '../../common/approvals';
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
import { RunDeadlines } from '../shared/deadline-timer';
import { TaskEnd, type TaskRun } from './state';
import { publishTaskAttributes, showTaskDetails } from './visibility';

function limitsAsSet(task: TaskRun): BudgetLimits {
  const { budget } = task.settings;
  return { tokens: budget.maxTotalTokens, cost: budget.maxCostUsd, deadline: budget.maxDurationMs };
}

/** The run's limits in force: as set, plus what approvals added. */
export function taskBudgetLimits(task: TaskRun): BudgetLimits {
  return extendedLimits(limitsAsSet(task), task.carry.budgetAsks);
}

/** A spent budget of the run and the end it calls for unless a person extends it. */
export interface SpentTaskBudget extends SpentBudget {
  end: TaskEnd;
}

/** The budget of the run found spent before the next operation, if any. */
export function spentTaskBudget(task: TaskRun): SpentTaskBudget | undefined {
  const { carry } = task;
  const limits = taskBudgetLimits(task);
  const tokens = totalTokens(carry.usage);
  const ended = (reason: string) => new TaskEnd('completed', reason);
  if (limits.tokens !== undefined && tokens >= limits.tokens) {
    const end = ended(`budget: tokens (${tokens} of ${limits.tokens})`);
    return { name: 'tokens', used: tokens, limit: limits.tokens, end };
  }
  if (limits.cost !== undefined && carry.costUsd >= limits.cost) {
    const end = ended(`budget: cost ($${carry.costUsd.toFixed(4)} of $${limits.cost})`);
    return { name: 'cost', used: carry.costUsd, limit: limits.cost, end };
  }
  if (limits.deadline !== undefined && deadlines.passed(task)) {
    return {
      name: 'deadline',
      used: Date.now() - carry.startedAtMs,
      limit: limits.deadline,
      end: ended(`budget: deadline (${limits.deadline} ms)`),
    };
  }
  return undefined;
}

const deadlines = new RunDeadlines<TaskRun>((task) => ({
  limitMs: taskBudgetLimits(task).deadline,
  startedAtMs: task.carry.startedAtMs,
  addedMs: task.carry.budgetAsks?.added.durationMs ?? 0,
}));

/** Starts the run's deadline timer (`shared/deadline-timer.ts`): in its first workflow task. */
export function startTaskDeadline(task: TaskRun): void {
  deadlines.timer(task);
}

/**
 * What a spent budget does: its end (`onExceeded: "end"`), or — asking — undefined once a person
 * approved the extension (the run goes on), the end with the decision when denied or timed out.
 * An abort while it waits throws the cancellation (the run ends aborted).
 */
export async function taskEndUnlessExtended(task: TaskRun, spent: SpentTaskBudget): Promise<TaskEnd | undefined> {
  if (task.settings.budget.onExceeded !== 'ask') return spent.end;
  const { carry } = task;
  const extension = budgetExtension(spent.name, limitsAsSet(task)[spent.name]!);
  carry.budgetAsks ??= { asked: 0, added: {} };
  carry.budgetAsks.asked += 1;
  const { name, used, limit } = spent;
  const decision = await waitForPerson(task, {
    toolCallId: budgetApprovalId(carry.budgetAsks.asked),
    tool: 'budget',
    summary: budgetAskSummary(spent, extension),
    budget: { name, used, limit, extension },
  });
  if (!decision.approve) return new TaskEnd(spent.end.state, `${spent.end.reason}; not extended: ${decision.reason}`);
  carry.budgetAsks = approvedExtension(carry.budgetAsks, spent, extension, Date.now() - carry.startedAtMs);
  return undefined;
}

/** Waits for `agent approve` (or the timeout, which denies); the decision, with why when denied. */
async function waitForPerson(
  task: TaskRun,
  request: Omit<WaitingApproval, 'requestedAt' | 'timeoutAt'>,
): Promise<{ approve: boolean; reason: string }> {
  const timeoutMs = task.settings.approvalTimeoutMs;
  const now = Date.now();
  const waiting: WaitingApproval = {
    ...request,
    requestedAt: new Date(now).toISOString(),
    timeoutAt: new Date(now + timeoutMs).toISOString(),
  };
  task.waitingApproval = waiting;
  task.approvalDecision = undefined;
  upsertMemo({ approval: { ...waiting, state: 'waiting' } });
  publishTaskAttributes(task, 'state');
  showTaskDetails(task);
  let decided: boolean;
  try {
    decided = await condition(() => task.approvalDecision !== undefined, timeoutMs, {
      summary: `approval timeout: ${waiting.toolCallId}`,
    });
  } catch (err) {
    if (isCancellation(err)) closeWait(task, { toolCallId: waiting.toolCallId, approve: false }, 'abort');
    throw err;
  }
  const decision: ApprovalDecisionInput = task.approvalDecision ?? { toolCallId: waiting.toolCallId, approve: false };
  const by = decided ? 'person' : 'timeout';
  closeWait(task, decision, by);
  const reason =
    by === 'timeout'
      ? `the approval timed out (nobody decided within ${Math.round(timeoutMs / 1000)} s)`
      : `denied by a person: ${decision.reason ?? 'no reason given'}`;
  return { approve: decision.approve, reason };
}

function closeWait(task: TaskRun, decision: ApprovalDecisionInput, by: 'person' | 'timeout' | 'abort'): void {
  const waiting = task.waitingApproval!;
  upsertMemo({
    approval: {
      toolCallId: waiting.toolCallId,
      tool: waiting.tool,
      summary: waiting.summary,
      state: decision.approve ? 'approved' : 'denied',
      by,
      ...(decision.reason ? { reason: decision.reason } : {}),
      decidedAt: new Date(Date.now()).toISOString(),
    },
  });
  task.waitingApproval = undefined;
  task.approvalDecision = undefined;
  publishTaskAttributes(task, 'state');
  showTaskDetails(task);
}

/** The `approve` Update of a task: decides the spent budget that waits (`agent approve <task id> budget-<n>`). */
export function acceptTaskApprovals(task: TaskRun): void {
  setHandler(
    approveUpdate,
    (input) => {
      task.approvalDecision = {
        toolCallId: input.toolCallId,
        approve: input.approve,
        reason: input.reason?.trim() || undefined,
      };
      return { toolCallId: input.toolCallId, decision: input.approve ? 'approved' : 'denied' };
    },
    { validator: (input) => checkTaskDecision(task, input) },
  );
}

function rejected(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

function checkTaskDecision(task: TaskRun, raw: unknown): void {
  const input = raw as Partial<ApprovalDecisionInput> | undefined;
  const { invalid, unknownCall, alreadyDecided, operationEnded } = APPROVAL_FAILURE_TYPES;
  const problem = approvalDecisionProblem(input);
  if (problem) throw rejected(invalid, problem);
  const id = input!.toolCallId!;
  if (task.ended)
    throw rejected(operationEnded, `the task has already ended (${task.ended.state}); nothing waits for approval`);
  const waiting = task.waitingApproval;
  if (waiting?.toolCallId === id) {
    if (task.approvalDecision) throw rejected(alreadyDecided, `${id} was already decided`);
    return;
  }
  const asked = task.carry.budgetAsks?.asked ?? 0;
  const n = /^budget-(\d+)$/.exec(id)?.[1];
  if (n !== undefined && Number(n) >= 1 && Number(n) <= asked)
    throw rejected(alreadyDecided, `${id} was already decided`);
  const now = waiting ? ` (waiting now: ${waiting.toolCallId}, ${waiting.summary})` : ' (nothing waits now)';
  throw rejected(unknownCall, `this task has no approval ${id}${now}`);
}
