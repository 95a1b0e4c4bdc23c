/**
 * What the operation shows while it runs: the `status` query, the Web UI's current details, and the
 * search attributes operators filter by.
 */
import { patched, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { totalTokens } from '../common/model-types';
import { statusQuery, type OperationSettings, type OperationStatus } from '../common/operation';
import { costUsd } from '../common/pricing';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { OperationRun } from './operation-state';

export function operationStatus(op: OperationRun): OperationStatus {
  const s = op.carry;
  return {
    state: op.ended?.state ?? 'running',
    sessionId: op.sessionId,
    reason: op.ended?.reason,
    turn: s.turn,
    steps: s.steps,
    phase: op.phase,
    lastTool: op.lastTool,
    usage: s.usage,
    costUsd: costUsd(s.usage, op.settings.model),
    pendingSteering: s.pendingSteering.length,
    startedAt: new Date(s.startedAtMs).toISOString(),
    runs: s.runs,
  };
}

export function answerStatusQuery(op: OperationRun): void {
  setHandler(statusQuery, () => operationStatus(op));
}

/**
 * Turns between two publications of the counters (turns, tokens, cost) while the operation runs.
 * Every publication is one more history event; publishing after every turn made a step 13 events
 * instead of 12. The live figures are in the status query and the Web UI's current details at
 * every turn; the search attributes (for filtering lists) lag by at most this many turns, and are
 * exact again at every state change and at the end.
 */
export const COUNTERS_EVERY_TURNS = 10;
/** Histories recorded before the counters were published every `COUNTERS_EVERY_TURNS` turns publish them every turn. */
export const COUNTERS_CADENCE_PATCH = 'counters-every-10-turns';

/** Whether the turn just recorded publishes the counters. */
export function countersDue(op: OperationRun): boolean {
  if (!patched(COUNTERS_CADENCE_PATCH)) return true;
  return op.carry.turn % COUNTERS_EVERY_TURNS === 0;
}

/** Search attributes: all of them when the state changes, only the counters every few turns (`countersDue`). */
export function publishSearchAttributes(op: OperationRun, what: 'state' | 'counters'): void {
  const { settings, carry } = op;
  upsertSearchAttributes([
    ...(what === 'state'
      ? [
          { key: SEARCH_ATTRIBUTES.status, value: op.ended?.state ?? 'running' },
          { key: SEARCH_ATTRIBUTES.lane, value: settings.lane },
          { key: SEARCH_ATTRIBUTES.kind, value: 'run' },
          ...(settings.repo ? [{ key: SEARCH_ATTRIBUTES.repo, value: repoLabel(settings.repo) }] : []),
        ]
      : []),
    { key: SEARCH_ATTRIBUTES.turns, value: carry.turn },
    { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(carry.usage) },
    { key: SEARCH_ATTRIBUTES.costUsd, value: roundCost(costUsd(carry.usage, settings.model)) },
  ]);
}

/** The Web UI's "Current Details": state, turn, tokens, cost, the last tool, queued steering. */
export function showDetails(op: OperationRun): void {
  const st = operationStatus(op);
  const { usage } = st;
  setCurrentDetails(
    [
      `**${st.state}**${st.reason ? ` — ${st.reason}` : ''} · turn ${st.turn}/${op.settings.budget.maxTurns} · ${st.steps} steps`,
      `tokens: ${totalTokens(usage)} (input ${usage.input}, cache write ${usage.cacheWrite}, cache read ${usage.cacheRead}, output ${usage.output}) · $${st.costUsd.toFixed(4)}`,
      st.lastTool ? `last tool: \`${st.lastTool.summary}\`${st.lastTool.isError ? ' (error)' : ''}` : '',
      st.pendingSteering ? `steering queued: ${st.pendingSteering}` : '',
    ]
      .filter(Boolean)
      .join('\n\n'),
  );
}

const roundCost = (usd: number): number => Math.round(usd * 1e6) / 1e6;

function repoLabel(repo: NonNullable<OperationSettings['repo']>): string {
  return repo.kind === 'local' ? repo.path : repo.url;
}
