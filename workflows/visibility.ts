/**
 * What the operation shows while it runs: the `status` query, the Web UI's current details, and the
 * search attributes operators filter by.
 */
import { setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { totalTokens } from '../common/model-types';
import { statusQuery, type OperationSettings, type OperationStatus } from '../common/operation';
import { costUsd } from '../common/pricing';
import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import type { OperationRun } from './operation-state';

/** The operation's state: its terminal state once ended, else `waiting-approval` or `running`. */
export function currentState(op: OperationRun): OperationStatus['state'] {
  return op.ended?.state ?? (op.waitingApproval ? 'waiting-approval' : 'running');
}

export function operationStatus(op: OperationRun): OperationStatus {
  const s = op.carry;
  return {
    state: currentState(op),
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
    lane: op.settings.lane,
    ...(op.waitingApproval ? { waitingApproval: op.waitingApproval } : {}),
  };
}

export function answerStatusQuery(op: OperationRun): void {
  setHandler(statusQuery, () => operationStatus(op));
}

/** Search attributes: all of them when the state changes, only the counters after a turn. */
export function publishSearchAttributes(op: OperationRun, what: 'state' | 'counters'): void {
  const { settings, carry } = op;
  upsertSearchAttributes([
    ...(what === 'state'
      ? [
          { key: SEARCH_ATTRIBUTES.status, value: currentState(op) },
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
      st.waitingApproval
        ? `**waiting for approval:** \`${st.waitingApproval.summary}\` (${st.waitingApproval.toolCallId}${st.waitingApproval.rule ? `, rule \`${st.waitingApproval.rule}\`` : ''}); denied at ${st.waitingApproval.timeoutAt} unless decided — \`agent approve ${op.operationId} ${st.waitingApproval.toolCallId}\` or \`--deny "why"\``
        : '',
    ]
      .filter(Boolean)
      .join('\n\n'),
  );
}

const roundCost = (usd: number): number => Math.round(usd * 1e6) / 1e6;

function repoLabel(repo: NonNullable<OperationSettings['repo']>): string {
  return repo.kind === 'local' ? repo.path : repo.url;
}
