/**
 * What the operation shows while it runs: the `status` query, the Web UI's current details, and the
 * search attributes operators filter by.
 */
import { describeEnvironment } from '../../common/environment';
import { setCurrentDetails, setHandler, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { isPatched } from '../shared/patches';
import { totalTokens } from '../../common/model-types';
import { statusQuery, type OperationSettings, type OperationStatus } from '../../common/operation';
import { costUsd } from '../../common/pricing';
import { SEARCH_ATTRIBUTES, type AgentStatus } from '../../common/search-attributes';
import { contextStatus, modelOf, operationTokens } from './context-window';
import type { OperationRun } from './state';

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
    costUsd: costUsd(s.usage, modelOf(op)),
    pendingSteering: s.pendingSteering.length,
    startedAt: new Date(s.startedAtMs).toISOString(),
    runs: s.runs,
    ...(op.stuck && !op.ended ? { stuck: op.stuck } : {}),
    ...(op.waitingFor && !op.ended ? { waitingFor: op.waitingFor } : {}),
    ...(s.handsHost ? { handsHost: s.handsHost.host } : {}),
    context: contextStatus(op),
    tokens: operationTokens(op),
    lane: op.settings.lane,
    ...(op.waitingApproval ? { waitingApproval: op.waitingApproval } : {}),
  };
}

/** The `AgentStatus` value now: the terminal state, else `stuck` while stuck, else `running`. */
/** `AgentStatus`: the status query's state, or `stuck` while a running operation is stuck. */
export function agentStatus(op: OperationRun): AgentStatus {
  const state = currentState(op);
  return state === 'running' && op.stuck ? 'stuck' : state;
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
  if (!isPatched(COUNTERS_CADENCE_PATCH)) return true;
  return op.carry.turn % COUNTERS_EVERY_TURNS === 0;
}

/** Search attributes: all of them when the state changes, only the counters every few turns (`countersDue`). */
export function publishSearchAttributes(op: OperationRun, what: 'state' | 'counters'): void {
  const { settings, carry } = op;
  upsertSearchAttributes([
    ...(what === 'state'
      ? [
          { key: SEARCH_ATTRIBUTES.status, value: agentStatus(op) },
          { key: SEARCH_ATTRIBUTES.lane, value: settings.lane },
          { key: SEARCH_ATTRIBUTES.kind, value: 'run' },
          ...(settings.repo ? [{ key: SEARCH_ATTRIBUTES.repo, value: repoLabel(settings.repo) }] : []),
        ]
      : []),
    { key: SEARCH_ATTRIBUTES.turns, value: carry.turn },
    { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(carry.usage) },
    { key: SEARCH_ATTRIBUTES.costUsd, value: roundCost(costUsd(carry.usage, modelOf(op))) },
  ]);
}

/** The Web UI's "Current Details" (markdown; see `detailsMarkdown`). */
export function showDetails(op: OperationRun): void {
  setCurrentDetails(detailsMarkdown(op));
}

/**
 * The operation in a few markdown lines: goal, state and phase, what it waits for, why it is stuck,
 * turn, the last turn's outcome, the last tool, tokens and cost, the hands host, queued steering.
 * Kept in the result (`details`) and the memo when the run closes.
 */
export function detailsMarkdown(op: OperationRun): string {
  const st = operationStatus(op);
  const { usage } = st;
  const goal = op.settings.goal.split('\n')[0].slice(0, 200);
  const approval = st.waitingApproval;
  return [
    `### ${goal}`,
    `**${agentStatus(op)}**${st.reason ? ` — ${st.reason}` : ''} · phase ${st.phase} · turn ${st.turn}/${op.settings.budget.maxTurns + (op.carry.budgetAsks?.added.turns ?? 0)} · ${st.steps} steps`,
    approval
      ? `**waiting for approval:** \`${approval.summary}\` (${approval.toolCallId}${approval.rule ? `, rule \`${approval.rule}\`` : ''}); denied at ${approval.timeoutAt} unless decided — \`agent approve ${op.operationId} ${approval.toolCallId}\` or \`--deny "why"\``
      : '',
    st.stuck
      ? `⚠ **${st.stuck.reason}** (since ${st.stuck.since})${st.stuck.lastFailure ? `\n\nlast failure: \`${oneLine(st.stuck.lastFailure)}\`` : ''}`
      : '',
    st.waitingFor ? `waiting for: ${st.waitingFor}` : '',
    op.lastTurnOutcome ? `last turn: ${op.lastTurnOutcome}` : '',
    st.lastTool ? `last tool: \`${st.lastTool.summary}\`${st.lastTool.isError ? ' (error)' : ''}` : '',
    op.lastHook ? lastHookLine(op.lastHook) : '',
    `tokens: ${totalTokens(usage)} (input ${usage.input}, cache write ${usage.cacheWrite}, cache read ${usage.cacheRead}, output ${usage.output}) · $${st.costUsd.toFixed(4)}`,
    `context: ${st.context.pct}% of ${st.context.windowTokens} tokens · ${st.context.compactions} compactions · ${st.context.editBatches} clear batches · cache hit ${(100 * st.tokens.cacheHitRate).toFixed(1)}%`,
    op.carry.handsHost ? `hands host: ${op.carry.handsHost.host} (queue ${op.carry.handsHost.taskQueue})` : '',
    op.carry.environment ? `environment: ${describeEnvironment(op.carry.environment)}` : '',
    op.environmentFailure ? `**environment:** ${oneLine(op.environmentFailure)}` : '',
    op.carry.loop?.noted ? `loop noticed: the model was told (${op.carry.loop.noted})` : '',
    st.pendingSteering ? `steering queued: ${st.pendingSteering}` : '',
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** `last hook: \`hook PreToolUse: ./check.sh\` (toolu_…) → deny: no force pushes`. */
function lastHookLine(hook: NonNullable<OperationRun['lastHook']>): string {
  const { decision } = hook;
  const why = decision.reason ?? decision.error ?? decision.systemMessage;
  const failed = decision.error !== undefined ? ' (the hook failed)' : '';
  return `last hook: \`${hook.summary}\`${hook.toolCallId ? ` (${hook.toolCallId})` : ''} → ${decision.decision}${failed}${why ? `: ${oneLine(why)}` : ''}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

const roundCost = (usd: number): number => Math.round(usd * 1e6) / 1e6;

function repoLabel(repo: NonNullable<OperationSettings['repo']>): string {
  return repo.kind === 'local' ? repo.path : repo.url;
}

/** New in the command sequence: the search attributes of a rejected input, the final details in the memo. */
export const OPS_VISIBILITY_PATCH = 'ops-visibility';

/**
 * Makes a rejected input findable (`AgentStatus = "failed"`, `AgentKind = "run"`): called before
 * the workflow fails with `InvalidOperationInput`.
 */
export function publishRejectedInput(): void {
  if (!isPatched(OPS_VISIBILITY_PATCH)) return;
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.status, value: 'failed' },
    { key: SEARCH_ATTRIBUTES.kind, value: 'run' },
  ]);
}

/**
 * The closing run's details, for its result and its memo: the Web UI answers "Current Details"
 * from a live worker only, so a closed run's would be blank once its worker is gone.
 */
export function keepDetails(op: OperationRun): { details?: string; handsHost?: string } {
  if (!isPatched(OPS_VISIBILITY_PATCH)) return {};
  const details = detailsMarkdown(op);
  upsertMemo({ details });
  return { details, ...(op.carry.handsHost ? { handsHost: op.carry.handsHost.host } : {}) };
}
