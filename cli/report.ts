/**
 * `agent report <id> [--json] [--steps]`: what a run cost and what each technique saved. The id
 * may name any workflow the harness starts; the report is chosen by its workflow type (an
 * `operation` gets the token-economy report of `client/token-report.ts`).
 */
import type { Client } from '@temporalio/client';
import type { TokenUsage } from '../common/model-types';
import { OPERATION_WORKFLOW_TYPE } from '../common/operation';
import type { TechniqueSaving } from '../common/token-ledger';
import { operationTokenReport, type OperationTokenReport, type StepRow } from '../client/token-report';

export interface ReportOptions {
  json: boolean;
  steps: boolean;
}

/** Report builders by workflow type: each prints its report and returns the exit code. */
const REPORTS: Record<string, (client: Client, id: string, options: ReportOptions) => Promise<number>> = {
  [OPERATION_WORKFLOW_TYPE]: async (client, id, options) => {
    const report = await operationTokenReport(client, id);
    console.log(options.json ? JSON.stringify(report, null, 2) : renderOperationReport(report, options));
    return 0;
  },
};

export async function reportCommand(client: Client, id: string, options: ReportOptions): Promise<number> {
  const { type } = await client.workflow.getHandle(id).describe();
  const report = REPORTS[type];
  if (!report) {
    throw new Error(`${id} is a ${type} workflow: agent report knows ${Object.keys(REPORTS).join(', ')}`);
  }
  return report(client, id, options);
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
  lines.push(
    `cost ${usd(e.costUsd)} (compactions ${usd(e.compactionCostUsd)}) · cache hit ${pct(100 * e.cacheHitRate)} of prompt tokens` +
      ` · peak context ${pct(e.peakContextPct)} of the window (${int(e.peakPromptTokens)} tokens)`,
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
