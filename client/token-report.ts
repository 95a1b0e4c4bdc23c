/**
 * The token-economy report of one operation: every recorded context step (model turns and
 * compactions, failed ones included) with the usage it was billed, read from the operation's
 * history (all its runs); the totals of those; and the operation's own token economy — from its
 * result once it ended, from its status while it runs (`common/token-ledger.ts`). The two totals
 * are compared: the history is the ledger's source, so they must agree to the token.
 *
 * Beside it, what the same model turns would have cost carried in one growing conversation — what
 * resuming a transcript does — estimated from the same recorded steps (`growingContextEstimate`);
 * for a coding task (`taskTokenReport`), over all its operations in order, as if each had resumed
 * the conversation of the ones before instead of starting fresh from the handoff.
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { CODING_TASK_WORKFLOW_TYPE, taskStatusQuery, type LedgerEntry } from '../common/coding-task';
import { addUsage, promptTokens, ZERO_USAGE, type TokenUsage } from '../common/model-types';
import { contextWindowOf, estimateMessagesTokens } from '../common/models';
import { statusQuery, type OperationResult } from '../common/operation';
import { CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, costUsd, priceOf } from '../common/pricing';
import { readRecordedRun, stepUsage, type RecordedStep } from '../common/recorded-steps';
import type { TokenEconomy } from '../common/token-ledger';
import { operationResult } from './operation-result';
import { codingTaskResult } from './task-result';

export interface StepRow {
  /** 1-based, in the order the steps ran. */
  index: number;
  kind: 'model' | 'compaction';
  /** `turn 12`, `compaction 2 (threshold)`. */
  label: string;
  status: 'ok' | 'failed' | 'running';
  /** The failure's type and message, for failed steps. */
  failure?: string;
  /** Usage billed to the step, failed attempts included (null: none known, e.g. cancelled). */
  usage: TokenUsage | null;
  promptTokens: number;
  costUsd: number;
  /** Tool results the step's request cleared (context editing batch). */
  clearedResults?: number;
  /** The request resumed or continued a reply (`pause_turn`, `max_tokens`). */
  stopReason?: string | null;
}

export interface OperationTokenReport {
  operationId: string;
  workflowType: string;
  /** `running`, or the terminal state (`completed`, `failed`, `aborted`; `terminated`… when the workflow did not finish itself). */
  state: string;
  reason?: string;
  model: string | null;
  steps: StepRow[];
  /** Sums over `steps`: what the history says was billed. */
  historyTotals: { usage: TokenUsage; costUsd: number; requests: number };
  /** The operation's own figures (result or status); null when it ended without a result. */
  economy: TokenEconomy | null;
  /** Whether `historyTotals.usage` equals `economy.usage` to the token (null without an economy). */
  consistent: boolean | null;
  /** The same model turns carried in one growing conversation (nothing compacted or cleared). */
  growing: GrowingContextEstimate;
}

/**
 * What a sequence of model turns would cost in one conversation that only grows — every turn kept,
 * as resuming a transcript keeps it — with the prompt cache working perfectly: each request reads
 * the one before it and writes only what was added since (the last reply and the new tool results
 * or instruction), priced at the cache's rates. The conversation starts as the first request did
 * and grows by each reply's output and each next request's tail (its recorded input, estimated at 4
 * characters a token); compaction calls are not made. An estimate: a real model refuses a
 * conversation past its window (`finalTokens`).
 */
export interface GrowingContextEstimate {
  requests: number;
  promptTokens: number;
  cacheWrite: number;
  cacheRead: number;
  output: number;
  /** The conversation's size at its last request. */
  finalTokens: number;
  costUsd: number;
}

/** The growing-conversation estimate of the model steps among `steps`, in order (any number of operations). */
export function growingContextEstimate(steps: readonly RecordedStep[], model: string | null): GrowingContextEstimate {
  const estimate = { requests: 0, promptTokens: 0, cacheWrite: 0, cacheRead: 0, output: 0, finalTokens: 0 };
  let previousOutput = 0;
  for (const step of steps) {
    if (step.kind !== 'model' || !step.result) continue;
    const { usage } = step.result;
    const size =
      estimate.requests === 0
        ? promptTokens(usage)
        : estimate.finalTokens + previousOutput + estimateMessagesTokens([{ content: step.input.tail }]);
    estimate.cacheRead += estimate.finalTokens;
    estimate.cacheWrite += size - estimate.finalTokens;
    estimate.promptTokens += size;
    estimate.output += usage.output;
    estimate.requests += 1;
    estimate.finalTokens = size;
    previousOutput = usage.output;
  }
  const price = priceOf(model);
  const costUsd =
    ((estimate.cacheWrite * CACHE_WRITE_MULTIPLIER + estimate.cacheRead * CACHE_READ_MULTIPLIER) * price.input +
      estimate.output * price.output) /
    1_000_000;
  return { ...estimate, costUsd };
}

/** Every recorded context step of a workflow (all its runs, in order), from its latest run back. */
export async function recordedStepsOf(client: Client, workflowId: string): Promise<RecordedStep[]> {
  const description = await client.workflow.getHandle(workflowId).describe();
  return stepsOf(client, workflowId, description.runId);
}

async function stepsOf(client: Client, workflowId: string, runId: string): Promise<RecordedStep[]> {
  const runs: RecordedStep[][] = [];
  let next: string | undefined = runId;
  while (next) {
    const history = await client.workflow.getHandle(workflowId, next).fetchHistory();
    const run = readRecordedRun(history.events ?? []);
    runs.unshift(run.steps);
    next = run.previousRunId;
  }
  return runs.flat();
}

function rowOf(step: RecordedStep, index: number, model: string | null): StepRow {
  const usage = stepUsage(step);
  const label =
    step.kind === 'model'
      ? `turn ${step.input.turn}`
      : `compaction ${step.input.compaction} (${step.input.reason}${step.input.reduced ? ', reduced' : ''})`;
  const row: StepRow = {
    index,
    kind: step.kind,
    label,
    status: step.pending ? 'running' : step.failure ? 'failed' : 'ok',
    usage,
    promptTokens: usage ? promptTokens(usage) : 0,
    costUsd: usage ? costUsd(usage, model) : 0,
  };
  if (step.failure) row.failure = `${step.failure.type ?? 'failed'}: ${step.failure.message}`;
  if (step.kind === 'model' && step.input.clear) row.clearedResults = step.input.clear.toolUseIds.length;
  if (step.kind === 'model' && step.result) row.stopReason = step.result.stopReason;
  return row;
}

function sameUsage(a: TokenUsage, b: TokenUsage): boolean {
  return (
    a.input === b.input &&
    a.cacheWrite === b.cacheWrite &&
    (a.cacheWrite1h ?? 0) === (b.cacheWrite1h ?? 0) &&
    a.cacheRead === b.cacheRead &&
    a.output === b.output
  );
}

async function economyOf(
  handle: WorkflowHandle,
  running: boolean,
): Promise<{ economy: TokenEconomy | null; result?: OperationResult }> {
  if (running) return { economy: (await handle.query(statusQuery)).tokens ?? null };
  const result = await operationResult(handle).catch(() => undefined);
  return { economy: result?.tokens ?? null, ...(result ? { result } : {}) };
}

export async function operationTokenReport(client: Client, operationId: string): Promise<OperationTokenReport> {
  const handle = client.workflow.getHandle(operationId);
  const description = await handle.describe();
  const running = description.status.name === 'RUNNING';
  const { economy, result } = await economyOf(handle, running);
  const steps = await stepsOf(client, operationId, description.runId);
  const model =
    economy?.model ??
    steps.map((step) => (step.kind === 'model' ? step.result?.message.model : step.result?.model)).find(Boolean) ??
    null;
  const rows = steps.map((step, index) => rowOf(step, index + 1, model));
  const usage = rows.reduce((sum, row) => (row.usage ? addUsage(sum, row.usage) : sum), { ...ZERO_USAGE });
  return {
    operationId,
    workflowType: description.type,
    state: running ? 'running' : (result?.state ?? description.status.name.toLowerCase()),
    ...(result ? { reason: result.reason } : {}),
    model,
    steps: rows,
    historyTotals: {
      usage,
      costUsd: costUsd(usage, model),
      requests: rows.filter((row) => row.status === 'ok').length,
    },
    economy,
    consistent: economy ? sameUsage(usage, economy.usage) : null,
    growing: growingContextEstimate(steps, model),
  };
}

/** A coding task's tokens (`agent report <task>`): its cache-hit rate, and the handoff against resuming. */
export interface TaskTokenReport {
  taskId: string;
  /** `running`, or how the task ended. */
  state: string;
  /** Operations the figures cover (all of them once the task ended; none while it runs). */
  operations: number;
  model: string | null;
  windowTokens: number;
  usage: TokenUsage;
  costUsd: number;
  /** Cache reads / prompt tokens over all the task's requests (0–1). */
  cacheHitRate: number;
  /**
   * The operations' model turns carried in one growing conversation, each operation resuming the
   * one before (null while the task runs: its operations are read once it ended).
   */
  resuming: GrowingContextEstimate | null;
}

const hitRate = (usage: TokenUsage): number => {
  const prompt = promptTokens(usage);
  return prompt > 0 ? usage.cacheRead / prompt : 0;
};

export async function taskTokenReport(client: Client, taskId: string): Promise<TaskTokenReport> {
  const handle = client.workflow.getHandle(taskId);
  const description = await handle.describe();
  if (description.type !== CODING_TASK_WORKFLOW_TYPE) throw new Error(`${taskId} is not a coding task`);
  if (description.status.name === 'RUNNING') {
    const status = await handle.query(taskStatusQuery);
    return {
      taskId,
      state: 'running',
      operations: 0,
      model: null,
      windowTokens: contextWindowOf(null),
      usage: status.usage,
      costUsd: status.costUsd,
      cacheHitRate: hitRate(status.usage),
      resuming: null,
    };
  }
  const result = await codingTaskResult(handle);
  const steps: RecordedStep[] = [];
  for (const entry of result.ledger) steps.push(...(await ledgerSteps(client, entry)));
  const model = modelOfSteps(steps);
  return {
    taskId,
    state: result.state,
    operations: result.ledger.length,
    model,
    windowTokens: contextWindowOf(model),
    usage: result.usage,
    costUsd: result.costUsd,
    cacheHitRate: hitRate(result.usage),
    resuming: growingContextEstimate(steps, model),
  };
}

/** The recorded steps of one of the task's operations (none when its history is gone). */
async function ledgerSteps(client: Client, entry: LedgerEntry): Promise<RecordedStep[]> {
  return recordedStepsOf(client, entry.operationId).catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return [];
    throw err;
  });
}

function modelOfSteps(steps: readonly RecordedStep[]): string | null {
  for (const step of steps) {
    const model = step.kind === 'model' ? step.result?.message.model : step.result?.model;
    if (model) return model;
  }
  return null;
}
