/**
 * The token-economy report of one operation: every recorded context step (model turns and
 * compactions, failed ones included) with the usage it was billed, read from the operation's
 * history (all its runs); the totals of those; and the operation's own token economy — from its
 * result once it ended, from its status while it runs (`common/token-ledger.ts`). The two totals
 * are compared: the history is the ledger's source, so they must agree to the token.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { addUsage, promptTokens, ZERO_USAGE, type TokenUsage } from '../common/model-types';
import { statusQuery, type OperationResult } from '../common/operation';
import { costUsd } from '../common/pricing';
import { readRecordedRun, stepUsage, type RecordedStep } from '../common/recorded-steps';
import type { TokenEconomy } from '../common/token-ledger';
import { operationResult } from './operation-result';

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
  };
}
