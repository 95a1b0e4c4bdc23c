/**
 * The morning report of a coding task: what a person reads after the night. Rendered from the
 * task's report data (its ledger and outcomes), so every number in it can be checked against the
 * ledger: features passed this run and in total, commits pushed, skipped features with their last
 * error, integrity corrections and changed test files, tokens and cost, wall time, and what the
 * next run starts with.
 *
 * Deterministic: a pure function (the workflow renders it; the CLI prints it).
 */
import type { LedgerEntry, TaskReportData } from './coding-task';
import { describeEnvironment } from './environment';
import { describeViolation } from './feature-list';
import { promptTokens, totalTokens, type TokenUsage } from './model-types';

export function renderTaskReport(data: TaskReportData): string {
  const passing = data.features.filter((f) => f.passes);
  const passedThisRun = data.features.filter((f) => f.passedThisRun);
  const skipped = data.features.filter((f) => f.skipped);
  const remaining = data.features.filter((f) => !f.passes);
  const lines = [
    `# Morning report: ${data.taskId}`,
    '',
    `**${headline(data)}** — ${data.reason}`,
    '',
    '| | |',
    '|---|---|',
    `| repository | ${data.remote} · branch \`${data.branch}\` |`,
    `| features passing | ${passing.length} of ${data.features.length} (${passedThisRun.length} this run) |`,
    `| skipped this run | ${skipped.length} |`,
    `| commits pushed | ${data.commits.length}${data.unpushed.length ? ` (${data.unpushed.length} not pushed)` : ''} |`,
    `| operations | ${data.ledger.length} (${plural(data.ledger.filter((e) => e.kind === 'feature').length, 'feature attempt')}; initializer: ${data.initializer}) |`,
    `| tokens | ${formatUsage(data.usage)} |`,
    `| cache hit | ${formatCacheHit(data.usage)} |`,
    `| cost | $${data.costUsd.toFixed(4)} |`,
    `| wall time | ${formatDuration(data.wallMs)} |`,
    `| started from | ${data.startCommit ? `\`${data.startCommit.slice(0, 12)}\`` : '(not prepared)'} |`,
    ...(data.environment
      ? [`| environment | ${describeEnvironment(data.environment)}${environmentNotes(data.environment)} |`]
      : []),
    '',
    ...featureTable(data),
    ...skippedSection(data),
    ...integritySection(data),
    ...commitSection(data),
    '## Next run',
    '',
    nextRun(
      data,
      remaining.map((f) => f.id),
    ),
    '',
    `Workspace volume \`${data.workspaceVolume}\`${data.hostRepository ? ` · host clone \`${data.hostRepository}\`` : ''}.`,
    '',
  ];
  return lines.join('\n');
}

function headline(data: TaskReportData): string {
  if (data.state === 'failed') return 'FAILED';
  if (data.state === 'aborted') return 'ABORTED';
  return data.features.length > 0 && data.features.every((f) => f.passes) ? 'ALL FEATURES PASS' : 'STOPPED';
}

function featureTable(data: TaskReportData): string[] {
  if (data.features.length === 0) return [];
  return [
    '## Features',
    '',
    '| feature | status | attempts this run | commit |',
    '|---|---|---|---|',
    ...data.features.map((f) => {
      const status = f.passedThisRun
        ? 'passed this run'
        : f.passes
          ? 'passing'
          : f.skipped
            ? 'skipped'
            : f.attempts > 0
              ? 'failing'
              : 'not started';
      return `| \`${f.id}\` ${escapeCell(f.description)} | ${status} | ${f.attempts} | ${f.commit ? `\`${f.commit.slice(0, 12)}\`` : ''} |`;
    }),
    '',
  ];
}

function skippedSection(data: TaskReportData): string[] {
  const skipped = data.features.filter((f) => f.skipped);
  if (skipped.length === 0) return [];
  return [
    '## Skipped',
    '',
    ...skipped.map(
      (f) => `- \`${f.id}\`: failed ${f.attempts} attempts; last error: ${oneLine(f.lastError ?? 'unknown')}`,
    ),
    '',
  ];
}

function integritySection(data: TaskReportData): string[] {
  const tests = data.ledger.filter((e) => e.changedTestFiles?.length);
  if (data.integrity.length === 0 && tests.length === 0) return [];
  return [
    '## Integrity',
    '',
    ...data.integrity.map((note) => {
      const what =
        note.violation.kind === 'history-rewritten'
          ? `history rewritten: ${note.violation.detail}`
          : describeViolation(note.violation);
      const where = note.featureId ? `\`${note.featureId}\` attempt ${note.attempt}` : 'initializer';
      return `- ${where} (\`${note.operationId}\`): ${what} — ${note.action}`;
    }),
    ...tests.map(
      (entry) =>
        `- ⚠ changed test files in the accepted work of ${entry.featureId ? `\`${entry.featureId}\`` : 'the initializer'}: ${entry.changedTestFiles!.join(', ')}`,
    ),
    '',
  ];
}

function commitSection(data: TaskReportData): string[] {
  return [
    '## Commits pushed',
    '',
    ...(data.commits.length ? data.commits.map((c) => `- \`${c.sha.slice(0, 12)}\` ${c.subject}`) : ['(none)']),
    ...(data.unpushed.length
      ? [
          '',
          'Not pushed (kept in the workspace and the host clone):',
          ...data.unpushed.map((c) => `- \`${c.sha.slice(0, 12)}\` ${c.subject}`),
        ]
      : []),
    '',
  ];
}

function nextRun(data: TaskReportData, remaining: string[]): string {
  if (!data.startCommit) return 'The next run starts over: this one ended before the repository was prepared.';
  const from = `\`${data.endCommit.slice(0, 12)}\` on \`${data.branch}\``;
  if (data.features.length === 0)
    return `The next run starts from ${from} with the initializer (there is no feature list yet).`;
  if (remaining.length === 0) return `Nothing is left: every feature passes at ${from}.`;
  return `The next run starts from ${from} with ${remaining.length} feature${remaining.length === 1 ? '' : 's'} left: ${remaining.map((id) => `\`${id}\``).join(', ')} (no initializer: the feature list is on the branch).`;
}

/** Cache reads as a share of all prompt tokens (`agent report` adds what the handoff saved against resuming). */
export function formatCacheHit(usage: TokenUsage): string {
  const prompt = promptTokens(usage);
  return prompt > 0 ? `${((100 * usage.cacheRead) / prompt).toFixed(1)} % of prompt tokens` : '–';
}

export function formatUsage(usage: TokenUsage): string {
  return `${totalTokens(usage)} (input ${usage.input}, cache write ${usage.cacheWrite}, cache read ${usage.cacheRead}, output ${usage.output})`;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s % 60} s` : `${s} s`;
}

/** Sums of the ledger: what the report's token and cost figures must equal. */
export function ledgerTotals(ledger: readonly LedgerEntry[]): { usage: TokenUsage; costUsd: number } {
  const usage = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
  let costUsd = 0;
  for (const entry of ledger) {
    usage.input += entry.usage.input;
    usage.cacheWrite += entry.usage.cacheWrite;
    usage.cacheRead += entry.usage.cacheRead;
    usage.output += entry.usage.output;
    costUsd += entry.costUsd;
  }
  return { usage, costUsd };
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

function escapeCell(text: string): string {
  return oneLine(text).replace(/\|/g, '\\|');
}

/** Most files' asks the environment line names; the rest are counted. */
const ASKS_SHOWN = 8;

/**
 * What the report adds to the environment line: build time, what a devcontainer.json asked for that
 * is not supported, which file asked for what (detection), and what cannot be had.
 */
function environmentNotes(env: NonNullable<TaskReportData['environment']>): string {
  const built = env.built && env.buildMs !== undefined ? ` in ${formatDuration(env.buildMs)}` : '';
  const unsupported = env.unsupported.length ? `; not supported: ${env.unsupported.join(', ')}` : '';
  const asks = env.asks ?? [];
  const asked = asks.length
    ? `; asked for by ${asks
        .slice(0, ASKS_SHOWN)
        .map((a) => `${a.file} (${a.wants})`)
        .join(', ')}${asks.length > ASKS_SHOWN ? ` and ${asks.length - ASKS_SHOWN} more` : ''}`
    : '';
  const notes = env.notes?.length ? `; cannot be had: ${env.notes.join('; ')}` : '';
  return `${built}${unsupported}${asked}${notes}`;
}
