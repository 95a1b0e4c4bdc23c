/**
 * The body of a coding task's pull request: the morning report (features passed and failed, the
 * integrity guard's notes, commits, tokens and cost), each failing feature's verification output,
 * the issue it resolves and where to watch the run in the Temporal Web UI. Rewritten in place by
 * every later run of the branch; the review rounds keep a section of their own below it.
 *
 * Deterministic: a pure function (the workflow renders it).
 */
import type { TaskReportData } from './coding-task';
import type { PullRequestRound } from './pull-request';
import { renderTaskReport } from './task-report';

const OUTPUT_MAX = 3_000;

export interface PullRequestBodyInput {
  data: TaskReportData;
  /** The run's page in the Temporal Web UI. */
  webUiUrl?: string;
  /** The issue the pull request resolves. */
  issue?: number;
}

export function renderPullRequestBody(input: PullRequestBodyInput): string {
  const { data } = input;
  const failing = data.ledger.filter((entry) => entry.verifyError);
  const lastFailure = new Map<string, string>();
  for (const entry of failing) if (entry.featureId) lastFailure.set(entry.featureId, entry.verifyError!);
  const open = data.features.filter((f) => !f.passes && lastFailure.has(f.id));
  return [
    ...(input.issue ? [`Fixes #${input.issue}`, ''] : []),
    `This pull request is the work of a coding agent on \`${data.branch}\`, verified by the harness before each commit. A person reviews and merges it: the agent never merges, never force-pushes, and answers review comments with commits on this branch.`,
    '',
    ...(input.webUiUrl
      ? [`Watch or inspect the run: [${data.taskId} in the Temporal Web UI](${input.webUiUrl})`, '']
      : []),
    renderTaskReport(data).replace(/^# Morning report: /, '## Morning report: '),
    ...(open.length
      ? [
          '## Verification output of the features that do not pass',
          '',
          ...open.flatMap((f) => [
            `<details><summary><code>${f.id}</code> — ${escapeHtml(f.description.slice(0, 120))}</summary>`,
            '',
            '```',
            tail(lastFailure.get(f.id)!),
            '```',
            '',
            '</details>',
            '',
          ]),
        ]
      : []),
  ].join('\n');
}

/** The rounds section the pull-request loop keeps up to date in the body. */
export function renderRoundsSection(rounds: readonly PullRequestRound[]): string {
  if (rounds.length === 0) return '';
  return [
    '## Review rounds',
    '',
    '| round | for | commit | replies | cost | outcome |',
    '|---|---|---|---|---|---|',
    ...rounds.map(
      (r) =>
        `| ${r.round} | ${r.kind}: ${escapeCell(r.trigger)} | ${r.commit ? `\`${r.commit.slice(0, 12)}\`` : '—'} | ${r.replies} | $${r.costUsd.toFixed(4)} | ${r.state}: ${escapeCell(r.reason)} |`,
    ),
    '',
  ].join('\n');
}

function tail(text: string): string {
  const trimmed = text.trim().replace(/```/g, "'''");
  return trimmed.length > OUTPUT_MAX ? `…${trimmed.slice(-OUTPUT_MAX)}` : trimmed;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeCell(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return (line.length > 120 ? `${line.slice(0, 119)}…` : line).replace(/\|/g, '\\|');
}
