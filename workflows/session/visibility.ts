/**
 * What a session shows: the `session` query (lanes, the index of operations, facts, the sandbox), the
 * Web UI's current details, and its search attributes (`AgentKind` = session).
 */
import { setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { totalTokens } from '../../common/model-types';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { sessionStatusQuery, type SessionStatus } from '../../common/session';
import type { SessionRun } from './state';

export function sessionStatus(s: SessionRun): SessionStatus {
  return {
    sessionId: s.sessionId,
    startedAt: new Date(s.carry.startedAtMs).toISOString(),
    runs: s.carry.runs,
    ...(s.settings.repo ? { repo: s.settings.repo } : {}),
    lanes: Object.values(s.carry.lanes).map((lane) => ({
      name: lane.name,
      createdAt: lane.createdAt,
      ...(lane.open ? { open: lane.open } : {}),
      ...(lane.aborting ? { aborting: true } : {}),
      queued: lane.queue.map((q) => ({ operationId: q.operationId, prompt: q.prompt.prompt.slice(0, 200) })),
      operations: lane.operations,
      ...(lane.last ? { last: lane.last } : {}),
      ...(lane.context ? { contextFrom: lane.context.operationId } : {}),
      ...(lane.forkedFrom ? { forkedFrom: lane.forkedFrom } : {}),
      ...(lane.rewoundFrom ? { rewoundFrom: lane.rewoundFrom } : {}),
    })),
    operations: s.carry.operations,
    facts: s.carry.facts,
    sandbox: {
      state: s.sandbox,
      ...(s.lease.holder ? { holder: s.lease.holder } : {}),
      waiting: [...s.lease.waiting],
    },
    ...(s.carry.ledger ? { ledger: s.carry.ledger } : {}),
  };
}

export function answerSessionQuery(s: SessionRun): void {
  setHandler(sessionStatusQuery, () => sessionStatus(s));
}

export function publishSessionAttributes(s: SessionRun): void {
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'session' },
    { key: SEARCH_ATTRIBUTES.status, value: 'running' },
    ...(s.settings.repo
      ? [
          {
            key: SEARCH_ATTRIBUTES.repo,
            value: s.settings.repo.kind === 'local' ? s.settings.repo.path : s.settings.repo.url,
          },
        ]
      : []),
  ]);
}

/** The Web UI's "Current Details": each lane with its open operation and queue, the facts, the sandbox. */
export function showSessionDetails(s: SessionRun): void {
  const lanes = Object.values(s.carry.lanes).filter((lane) => !lane.forkedFrom || lane.open);
  const facts = Object.keys(s.carry.facts).length;
  const { ledger } = s.carry;
  setCurrentDetails(
    [
      `**session ${s.sessionId}** · ${s.carry.operations.length} operations · ${facts} facts · sandbox ${s.sandbox}` +
        (s.lease.holder
          ? ` (used by ${s.lease.holder}${s.lease.waiting.length ? `, ${s.lease.waiting.length} waiting` : ''})`
          : ''),
      ...lanes.map(
        (lane) =>
          `- lane \`${lane.name}\`: ${lane.open ? `running \`${lane.open}\`${lane.aborting ? ' (aborting)' : ''}` : 'idle'}` +
          (lane.queue.length ? ` · ${lane.queue.length} queued` : '') +
          (lane.last && !lane.open ? ` · last \`${lane.last.operationId}\` ${lane.last.state}` : '') +
          laneCost(s, lane.name),
      ),
      ...(ledger
        ? [
            `tokens: ${totalTokens(ledger.usage)} (input ${ledger.usage.input}, cache write ${ledger.usage.cacheWrite}, cache read ${ledger.usage.cacheRead}, output ${ledger.usage.output}) · $${ledger.costUsd.toFixed(4)} over ${ledger.operations} ended operations — \`agent report ${s.sessionId}\``,
          ]
        : []),
    ].join('\n'),
  );
}

function laneCost(s: SessionRun, lane: string): string {
  const totals = s.carry.ledger?.lanes[lane];
  return totals ? ` · ${totalTokens(totals.usage)} tokens · $${totals.costUsd.toFixed(4)}` : '';
}
