/**
 * The ledger of a session (`agent report <session>`): every operation its lanes ran, with the
 * tokens and cost each says it used — its result once it ended, its status while it runs — added up
 * per lane and for the session. Subagents are not rows of their own: their tokens are in their
 * parent operation's. The session's own ledger (counted by the session as each operation ended) is
 * compared with the operations': they must agree to the token.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { addUsage, ZERO_USAGE, type TokenUsage } from '../common/model-types';
import { statusQuery } from '../common/operation';
import type { LedgerTotals, OperationIndexEntry, SessionLedger } from '../common/session';
import { operationResult } from './operation-result';
import { readSession } from './session';

export interface SessionReportRow {
  operationId: string;
  lane: string;
  /** `running`, or how it ended (`completed`, `failed`, `aborted`). */
  state: string;
  reason?: string;
  turns: number;
  usage: TokenUsage;
  costUsd: number;
}

export interface SessionReport {
  sessionId: string;
  /** The lanes' operations that started (queued or cancelled prompts are not), in the order accepted. */
  operations: SessionReportRow[];
  /** Sums over `operations`, by lane. */
  lanes: Array<LedgerTotals & { lane: string }>;
  /** Sums over `operations`: the session's tokens and cost. */
  session: LedgerTotals;
  /** The session's own count of the operations that ended (null before the first ended, or in sessions older than the ledger). */
  recorded: SessionLedger | null;
  /** Whether `recorded` equals the sum of the ended operations to the token (null without `recorded`). */
  consistent: boolean | null;
}

const emptyTotals = (): LedgerTotals => ({ operations: 0, usage: { ...ZERO_USAGE }, costUsd: 0 });

function addRow(totals: LedgerTotals, row: SessionReportRow): void {
  totals.operations += 1;
  totals.usage = addUsage(totals.usage, row.usage);
  totals.costUsd += row.costUsd;
}

/** One operation as it reports itself; an operation that ended without a result used nothing known. */
async function rowOf(client: Client, entry: OperationIndexEntry): Promise<SessionReportRow> {
  const handle = client.workflow.getHandle(entry.operationId);
  const base = { operationId: entry.operationId, lane: entry.lane };
  const described = await handle.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  });
  if (described?.status.name === 'RUNNING') {
    const status = await handle.query(statusQuery);
    return { ...base, state: 'running', turns: status.turn, usage: status.usage, costUsd: status.costUsd };
  }
  const result = described ? await operationResult(handle).catch(() => undefined) : undefined;
  if (!result) {
    return {
      ...base,
      state: entry.state,
      ...(entry.reason ? { reason: entry.reason } : {}),
      turns: 0,
      usage: { ...ZERO_USAGE },
      costUsd: 0,
    };
  }
  return {
    ...base,
    state: result.state,
    reason: result.reason,
    turns: result.turns,
    usage: result.usage,
    costUsd: result.costUsd,
  };
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

export async function sessionReport(client: Client, sessionId: string): Promise<SessionReport> {
  const status = await readSession(client, sessionId);
  const started = status.operations.filter(
    (entry) => !entry.parentOperationId && entry.state !== 'queued' && entry.state !== 'cancelled',
  );
  const operations: SessionReportRow[] = [];
  for (const entry of started) operations.push(await rowOf(client, entry));
  const lanes = new Map<string, LedgerTotals & { lane: string }>();
  const session = emptyTotals();
  const ended = emptyTotals();
  for (const row of operations) {
    let lane = lanes.get(row.lane);
    if (!lane) lanes.set(row.lane, (lane = { lane: row.lane, ...emptyTotals() }));
    addRow(lane, row);
    addRow(session, row);
    if (row.state !== 'running') addRow(ended, row);
  }
  const recorded = status.ledger ?? null;
  return {
    sessionId,
    operations,
    lanes: [...lanes.values()],
    session,
    recorded,
    consistent: recorded
      ? recorded.operations === ended.operations &&
        sameUsage(recorded.usage, ended.usage) &&
        Math.abs(recorded.costUsd - ended.costUsd) < 1e-9
      : null,
  };
}
