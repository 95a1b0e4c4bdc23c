/**
 * The session's ledger: what each lane's operations used, added up as each ends — per lane and for
 * the session (`SessionLedger`, in the `session` query and `agent report <session>`), published as
 * the session's `AgentTokens` and `AgentCostUsd` search attributes and shown in its details. An
 * operation's usage includes its subagents' (they are counted in their parent's ledger).
 *
 * The search attributes are new in the command sequence: only runs that took the `session-ledger`
 * patch publish them.
 */
import { patched, upsertSearchAttributes } from '@temporalio/workflow';
import { addUsage, totalTokens, ZERO_USAGE } from '../../common/model-types';
import type { OperationResult } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import type { LedgerTotals, SessionLedger } from '../../common/session';
import type { SessionRun } from './state';

export const SESSION_LEDGER_PATCH = 'session-ledger';

const emptyTotals = (): LedgerTotals => ({ operations: 0, usage: { ...ZERO_USAGE }, costUsd: 0 });

function add(totals: LedgerTotals, result: OperationResult | undefined): void {
  totals.operations += 1;
  if (!result) return;
  totals.usage = addUsage(totals.usage, result.usage);
  totals.costUsd += result.costUsd;
}

/** A lane's operation ended (`result` undefined: it ended without one, e.g. it could not start). */
export function recordOperationCost(s: SessionRun, lane: string, result: OperationResult | undefined): void {
  const ledger: SessionLedger = (s.carry.ledger ??= { ...emptyTotals(), lanes: {} });
  add(ledger, result);
  add((ledger.lanes[lane] ??= emptyTotals()), result);
  if (patched(SESSION_LEDGER_PATCH)) {
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTES.tokens, value: totalTokens(ledger.usage) },
      { key: SEARCH_ATTRIBUTES.costUsd, value: Math.round(ledger.costUsd * 1e6) / 1e6 },
    ]);
  }
}
