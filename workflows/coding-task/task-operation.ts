/**
 * One operation of a coding task: an `operation` child workflow with a goal the harness assembled
 * (a fresh context), in the task's sandbox (same session id, so the same workspace volume; the
 * container is kept between operations and removed by the task at the end). Its outcome — completed,
 * failed (the result travels in the failure) or aborted — goes into the task's ledger with its
 * tokens and cost.
 */
import {
  ApplicationFailure,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { LedgerEntry } from '../../common/coding-task';
import { mergeHooks, type HooksInput } from '../../common/hooks';
import { addUsage, totalTokens, ZERO_USAGE } from '../../common/model-types';
import { contextWindowOf } from '../../common/models';
import { newTokenLedger, tokenEconomy } from '../../common/token-ledger';
import { OPERATION_WORKFLOW_TYPE, type OperationInput, type OperationResult } from '../../common/operation';
import { taskBudgetLimits } from './budget';
import type { TaskRun } from './state';
import { publishTaskAttributes, showTaskDetails } from './visibility';

export interface TaskOperation {
  kind: LedgerEntry['kind'];
  operationId: string;
  goal: string;
  summary: string;
  featureId?: string;
  attempt?: number;
}

export interface OperationOutcome {
  entry: LedgerEntry;
  /** The operation's closing text. */
  finalText: string;
  /** The model could not be reached or refused the requests: another attempt would fail the same way. */
  modelUnavailable: boolean;
}

export async function runTaskOperation(task: TaskRun, op: TaskOperation): Promise<OperationOutcome> {
  const { carry } = task;
  task.current = { operationId: op.operationId, featureId: op.featureId, attempt: op.attempt };
  carry.sandboxUsed = true;
  showTaskDetails(task);
  const result = await runChild(task, op, operationInput(task, op.goal));
  // The operation may have given its host up (replaceHandsHost): the task follows it.
  if (result.handsRoute && task.route.routed) carry.handsHost = result.handsRoute;
  const entry: LedgerEntry = {
    operationId: op.operationId,
    kind: op.kind,
    ...(op.featureId !== undefined ? { featureId: op.featureId, attempt: op.attempt } : {}),
    state: result.state,
    reason: result.reason,
    turns: result.turns,
    usage: result.usage,
    costUsd: result.costUsd,
  };
  carry.ledger.push(entry);
  carry.usage = addUsage(carry.usage, result.usage);
  carry.costUsd += result.costUsd;
  publishTaskAttributes(task, 'counters');
  return {
    entry,
    finalText: result.finalText,
    modelUnavailable: result.state === 'failed' && result.reason.startsWith('model step failed'),
  };
}

/** The operation's input: the task's settings, and the budgets the run has left (the task asks, not its operations). */
function operationInput(task: TaskRun, goal: string): OperationInput {
  const { settings, carry } = task;
  const { budget } = settings;
  const limits = taskBudgetLimits(task);
  const tokensLeft = limits.tokens !== undefined ? limits.tokens - totalTokens(carry.usage) : undefined;
  const costLeft = limits.cost !== undefined ? limits.cost - carry.costUsd : undefined;
  const timeLeft = limits.deadline !== undefined ? carry.startedAtMs + limits.deadline - Date.now() : undefined;
  const hooks = mergeHooks<HooksInput>(settings.hooks, carry.repositoryHooks);
  return {
    goal,
    sessionId: task.sessionId,
    handsTaskQueue: task.handsQueue,
    ...(carry.handsHost ? { handsHost: carry.handsHost } : {}),
    keepContainer: true,
    egress: settings.egress,
    ...(settings.model ? { model: settings.model } : {}),
    ...(settings.mcpServers ? { mcpServers: settings.mcpServers } : {}),
    stuck: settings.stuck,
    ...(hooks ? { hooks } : {}),
    budget: {
      maxTurns: budget.maxTurnsPerFeature,
      ...(tokensLeft !== undefined ? { maxTotalTokens: Math.max(1, tokensLeft) } : {}),
      ...(costLeft !== undefined ? { maxCostUsd: Math.max(0.000001, costLeft) } : {}),
      ...(timeLeft !== undefined ? { maxDurationMs: Math.max(1, Math.round(timeLeft)) } : {}),
    },
  };
}

/** The child's result whatever its end: returned, carried in its failure, or made up from the failure. */
async function runChild(task: TaskRun, op: TaskOperation, input: OperationInput): Promise<OperationResult> {
  try {
    return await executeChild<(input: OperationInput) => Promise<OperationResult>>(OPERATION_WORKFLOW_TYPE, {
      workflowId: op.operationId,
      taskQueue: workflowInfo().taskQueue,
      args: [input],
      staticSummary: op.summary.slice(0, 190),
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    });
  } catch (err) {
    if (err instanceof ChildWorkflowFailure && err.cause instanceof ApplicationFailure) {
      const carried = err.cause.details?.[0] as OperationResult | undefined;
      if (err.cause.type === 'OperationFailed' && carried) return carried;
    }
    if (isCancellation(err)) throw err;
    const message = err instanceof ChildWorkflowFailure ? (err.cause?.message ?? err.message) : String(err);
    return {
      state: 'failed',
      reason: `operation ${op.operationId} ended without a result: ${message}`,
      turns: 0,
      steps: 0,
      usage: ZERO_USAGE,
      costUsd: 0,
      finalText: '',
      sessionId: task.sessionId,
      workspaceVolume: '',
      openToolResults: [],
      tokens: tokenEconomy(ZERO_USAGE, newTokenLedger(), input.model ?? null, contextWindowOf(input.model)),
    };
  }
}
