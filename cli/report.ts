/**
 * `agent report <id> [--json] [--steps]`: the report of a workflow the harness starts, chosen by its
 * workflow type: a coding task's morning report (while it runs: the report as it would read now),
 * an operation's token economy — what it cost and what each technique saved
 * (`client/token-report.ts`), a session's ledger — its operations' tokens and cost per lane and in
 * all (`client/session-report.ts`; the id is the session id or its workflow id).
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sessionReport, type SessionReport } from '../client/session-report';
import { codingTaskResult } from '../client/task-result';
import {
  operationTokenReport,
  taskTokenReport,
  type GrowingContextEstimate,
  type OperationTokenReport,
  type StepRow,
  type TaskTokenReport,
} from '../client/token-report';
import { CODING_TASK_WORKFLOW_TYPE, taskStatusQuery } from '../common/coding-task';
import { totalTokens, type TokenUsage } from '../common/model-types';
import { OPERATION_WORKFLOW_TYPE } from '../common/operation';
import { SESSION_WORKFLOW_TYPE, sessionIdOfWorkflow, sessionWorkflowId } from '../common/session';
import type { TechniqueSaving } from '../common/token-ledger';

export interface ReportOptions {
  json: boolean;
  /** The operation report's step table. */
  steps: boolean;
}

/** Prints the report of one workflow; returns the exit code. */
type ReportPrinter = (client: Client, id: string, options: ReportOptions & { running: boolean }) => Promise<number>;

/** Report printers by workflow type. */
const REPORTS: Record<string, ReportPrinter> = {
  [OPERATION_WORKFLOW_TYPE]: async (client, id, options) => {
    const report = await operationTokenReport(client, id);
    console.log(options.json ? JSON.stringify(report, null, 2) : renderOperationReport(report, options));
    return 0;
  },
  [CODING_TASK_WORKFLOW_TYPE]: async (client, id, options) => {
    const handle = client.workflow.getHandle(id);
    const tokens = await taskTokenReport(client, id);
    if (options.running) {
      const status = await handle.query(taskStatusQuery);
      if (options.json) console.log(JSON.stringify({ ...status, tokens }, null, 2));
      else console.log(`(the task is still running: ${status.phase})\n\n${status.report}\n${renderTaskTokens(tokens)}`);
      return 0;
    }
    const result = await codingTaskResult(handle);
    console.log(
      options.json ? JSON.stringify({ ...result, tokens }, null, 2) : `${result.report}\n${renderTaskTokens(tokens)}`,
    );
    return 0;
  },
  [SESSION_WORKFLOW_TYPE]: async (client, id, options) => {
    const report = await sessionReport(client, sessionIdOfWorkflow(id) ?? id);
    console.log(options.json ? JSON.stringify(report, null, 2) : renderSessionReport(report));
    return 0;
  },
};

export async function reportCommand(client: Client, id: string, options: ReportOptions): Promise<number> {
  const describe = (workflowId: string) =>
    client.workflow
      .getHandle(workflowId)
      .describe()
      .then(
        (description) => ({ workflowId, description }),
        (err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return undefined;
          throw err;
        },
      );
  // A session is named by its session id; its workflow is `session-<id>`.
  const found = (await describe(id)) ?? (await describe(sessionWorkflowId(id)));
  if (!found) throw new Error(`no task, operation or session with id ${id}`);
  const { workflowId, description } = found;
  const report = REPORTS[description.type];
  if (!report) {
    throw new Error(`${id} is a ${description.type} workflow: agent report knows ${Object.keys(REPORTS).join(', ')}`);
  }
  return report(client, workflowId, { ...options, running: description.status.name === 'RUNNING' });
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const usd = (n: number): string => `$${n.toFixed(4)}`;
const pct = (n: number): string => `${n.toFixed(1)}%`;

function usageLine(usage: TokenUsage): string {
  const oneHour = usage.cacheWrite1h ?? 0;
  return (
    `uncached ${int(usage.input)} · cache write ${int(usage.cacheWrite - oneHour)} (5 min) + ${int(oneHour)} (1 h)` +
    ` · cache read ${int(usage.cacheRead)} · output ${int(usage.output)}`
  );
}

function savingLine(name: string, saving: TechniqueSaving, versus: string, overhead: string): string {
  const cost = saving.overheadUsd > 0 ? `, ${overhead} ${usd(saving.overheadUsd)} → net ${usd(saving.netUsd)}` : '';
  return `  ${name.padEnd(16)} ${int(saving.tokens).padStart(12)} prompt tokens ≈ ${usd(saving.grossUsd)} ${versus}${cost}`;
}

function stepTable(rows: StepRow[]): string[] {
  const header = `  ${'step'.padStart(5)}  ${'what'.padEnd(36)} ${'prompt'.padStart(9)} ${'uncached'.padStart(9)} ${'write'.padStart(8)} ${'read'.padStart(9)} ${'output'.padStart(7)} ${'cost'.padStart(9)}`;
  return [
    header,
    ...rows.map((row) => {
      const u = row.usage;
      const what = `${row.label}${row.status === 'ok' ? '' : ` [${row.status}]`}${row.clearedResults ? ` clear ${row.clearedResults}` : ''}`;
      return `  ${String(row.index).padStart(5)}  ${what.slice(0, 36).padEnd(36)} ${int(row.promptTokens).padStart(9)} ${int(u?.input ?? 0).padStart(9)} ${int(u?.cacheWrite ?? 0).padStart(8)} ${int(u?.cacheRead ?? 0).padStart(9)} ${int(u?.output ?? 0).padStart(7)} ${usd(row.costUsd).padStart(9)}`;
    }),
  ];
}

function totalsLine(totals: { operations: number; usage: TokenUsage; costUsd: number }): string {
  const n = totals.operations;
  return `${n} operation${n === 1 ? '' : 's'} · ${int(totalTokens(totals.usage))} tokens · ${usd(totals.costUsd)}`;
}

export function renderSessionReport(report: SessionReport): string {
  const lines = [`session ${report.sessionId} — ${totalsLine(report.session)}`];
  for (const lane of report.lanes) {
    lines.push('', `lane ${lane.lane}: ${totalsLine(lane)}`);
    for (const row of report.operations.filter((candidate) => candidate.lane === lane.lane)) {
      lines.push(
        `  ${row.operationId} ${row.state}${row.reason ? ` (${row.reason})` : ''} · ${row.turns} turns · ${int(totalTokens(row.usage))} tokens · ${usd(row.costUsd)}`,
      );
    }
  }
  lines.push('', `tokens: ${usageLine(report.session.usage)}`);
  if (report.recorded) {
    const agreement = report.consistent ? 'agrees with its operations' : 'differs from its operations!';
    lines.push(`recorded by the session for its ended operations: ${totalsLine(report.recorded)} (${agreement})`);
  }
  lines.push(
    'Subagents are counted in their parent operation; `agent report <operation>` shows one operation in detail.',
  );
  return lines.join('\n');
}

/** The conversation a growing estimate reaches, against the window. */
function reached(growing: GrowingContextEstimate, windowTokens: number): string {
  const times = growing.finalTokens / windowTokens;
  return (
    `the conversation reaching ${int(growing.finalTokens)} tokens` +
    (times > 1
      ? `, ${times.toFixed(1)}× the ${int(windowTokens)}-token window, which a real model refuses`
      : ` (${pct(100 * times)} of the window)`)
  );
}

/** The token section `agent report` adds to a coding task's morning report. */
export function renderTaskTokens(report: TaskTokenReport): string {
  const lines = [
    '## Tokens',
    '',
    `cache hit ${pct(100 * report.cacheHitRate)} of prompt tokens · ${int(totalTokens(report.usage))} tokens · ${usd(report.costUsd)}`,
  ];
  const growing = report.resuming;
  if (!growing) {
    lines.push('', 'What the handoff saved against resuming is estimated once the task has ended.');
    return lines.join('\n');
  }
  if (growing.requests === 0) {
    lines.push('', 'No model turn was recorded: nothing to compare with resuming.');
    return lines.join('\n');
  }
  const saved = growing.costUsd - report.costUsd;
  lines.push(
    '',
    `handoff against resuming: the same ${growing.requests} model turns of the ${report.operations === 1 ? 'operation' : `${report.operations} operations`} carried in one growing conversation ` +
      `(each operation resuming the ones before, as \`--resume\` does) would cost ≈ ${usd(growing.costUsd)} for ${int(growing.promptTokens)} prompt tokens, ` +
      `${reached(growing, report.windowTokens)}; the handoff cost ${usd(report.costUsd)}: ` +
      `${saved >= 0 ? `saved ≈ ${usd(saved)}` : `≈ ${usd(-saved)} more`} (${pct((100 * report.costUsd) / growing.costUsd)} of resuming's cost).`,
    '',
    "Estimated from the operations' recorded steps (4 characters a token), with the prompt cache reading every earlier request back.",
  );
  return lines.join('\n');
}

export function renderOperationReport(report: OperationTokenReport, options: Pick<ReportOptions, 'steps'>): string {
  const lines: string[] = [];
  const e = report.economy;
  lines.push(
    `operation ${report.operationId} — ${report.state}${report.reason ? ` (${report.reason})` : ''} · model ${report.model ?? 'unknown'}` +
      (e ? ` · window ${int(e.windowTokens)} tokens` : ''),
  );
  const model = report.steps.filter((s) => s.kind === 'model');
  const compactions = report.steps.filter((s) => s.kind === 'compaction');
  const failed = report.steps.filter((s) => s.status === 'failed');
  lines.push(
    `steps: ${model.length} model turns, ${compactions.length} compactions, ${failed.length} failed` +
      (e ? `, ${e.editBatches} clear batches (${e.clearedResults} tool results cleared)` : ''),
  );
  for (const row of failed) lines.push(`  failed: ${row.label}: ${row.failure}`);
  if (options.steps) lines.push('', ...stepTable(report.steps));
  lines.push(
    '',
    `billed (from history): ${usageLine(report.historyTotals.usage)} · ${usd(report.historyTotals.costUsd)}`,
  );
  if (!e) {
    lines.push('the operation left no token ledger (it ended without a result, or ran before the ledger existed)');
    return lines.join('\n');
  }
  if (!report.consistent) lines.push(`ledger of the operation: ${usageLine(e.usage)} (differs from the history!)`);
  const growing = report.growing;
  const saved = growing.costUsd - e.costUsd;
  lines.push(
    `cost ${usd(e.costUsd)} (compactions ${usd(e.compactionCostUsd)}) · cache hit ${pct(100 * e.cacheHitRate)} of prompt tokens` +
      ` · peak context ${pct(e.peakContextPct)} of the window (${int(e.peakPromptTokens)} tokens)`,
    `one growing context (every turn kept, as resuming a transcript keeps it): ≈ ${usd(growing.costUsd)} for ${int(growing.promptTokens)} prompt tokens, ` +
      `${reached(growing, e.windowTokens)} → ${saved >= 0 ? `saved ≈ ${usd(saved)}` : `≈ ${usd(-saved)} more`} by compacting and clearing`,
    '',
    'saved:',
    `  ${'prompt caching'.padEnd(16)} ${usd(e.saved.promptCaching.usd).padStart(12)} vs the same requests uncached`,
    savingLine('output spill', e.saved.outputSpill, 'vs full tool outputs', ''),
    savingLine('context editing', e.saved.contextEditing, 'vs keeping old tool results', 'cache rewrites'),
    savingLine('compaction', e.saved.compaction, 'vs keeping every turn', 'summary calls and rewrites'),
    '',
    "Avoided tokens are estimates (characters / 4), counted once per request that did not carry them, at this run's average price per prompt token.",
  );
  return lines.join('\n');
}
