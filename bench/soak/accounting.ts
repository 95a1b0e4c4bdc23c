/**
 * The soak's accounting, from what was recorded during the run (pure functions, tested): every unit
 * of work to its end, every effect counted, the token ledger against the model server's own count,
 * latencies before and during faults, and the verdict.
 *
 * The ledger is checked per unit. A unit's recorded usage must equal what the server reported for
 * its requests — except that an answer a SIGKILL of its brain process took with it (cut off while
 * read, or written whole to a socket the process never read to the end, or read and not yet reported
 * to Temporal) was paid and no one could record it: such a unit's shortfall must be exactly the usage
 * of some of those answers, and is reported as lost with the killed brain. Likewise an answer whose
 * completion the Temporal server refused (`refused.ts`: the attempt had timed out while the history
 * service was down) is in no history: a unit the brains' logs name so may be short by exactly some
 * of that brain's last answers for it, reported as refused by the server.
 */
import { ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import type { ReportedUsage } from '../../scripted-model/server';
import { quantile, round } from '../stats';
import { MODEL_ACTIVITY_TYPES } from './attempts';
import type { WorkspaceLogs } from './collect';
import type { InjectedFault } from './faults';
import type { RefusedCompletion } from './refused';
import type { ServedFault } from './model';
import type { Counts, LatencySample, LedgerUnit, Outcome, SoakResults } from './results';
import { FAULT_KINDS, type FaultKind, type PlannedFault, type UnitKind } from './schedule';
import type { UnitRecord } from './units';

const emptyCounts = (): Counts => ({ submitted: 0, accepted: 0, completed: 0, failed: 0, aborted: 0, lost: 0 });

function tally(counts: Counts, accepted: boolean, state: string | undefined): void {
  counts.submitted += 1;
  if (!accepted) return;
  counts.accepted += 1;
  if (state === 'completed' || state === 'failed' || state === 'aborted') counts[state] += 1;
  else counts.lost += 1;
}

export function countWork(units: readonly UnitRecord[]): SoakResults['work'] {
  const all = emptyCounts();
  const operations = emptyCounts();
  const byKind: Partial<Record<UnitKind, Counts>> = {};
  const notCompleted: Outcome[] = [];
  const unexpected: Outcome[] = [];
  const lostUnits: SoakResults['work']['lostUnits'] = [];
  for (const unit of units) {
    const accepted = unit.acceptedAt !== undefined;
    tally(all, accepted, unit.state);
    tally((byKind[unit.kind] ??= emptyCounts()), accepted, unit.state);
    if (unit.kind !== 'task') for (const op of unit.operations) tally(operations, true, op.state);
    if (accepted && !unit.state) lostUnits.push({ unit: unit.id, kind: unit.kind, error: unit.error ?? 'no end read' });
    if (!unit.state) continue;
    const outcome = {
      unit: unit.id,
      kind: unit.kind,
      state: unit.state,
      reason: unit.reason ?? '',
      expected: unit.expected,
    };
    if (unit.state !== 'completed') notCompleted.push(outcome);
    if (unit.state !== unit.expected) unexpected.push(outcome);
  }
  return { ...all, byKind, operations, notCompleted, unexpected, lostUnits };
}

/** Lines written more than once in one log of one workspace. */
function duplicatesIn(unit: string, log: string, lines: readonly string[]) {
  const counts = new Map<string, number>();
  for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
  return [...counts].filter(([, count]) => count > 1).map(([line, count]) => ({ unit, log, line, count }));
}

export function countEffects(
  units: readonly UnitRecord[],
  logs: readonly WorkspaceLogs[],
  egressRequests: ReadonlyMap<string, number>,
  workspacesFound = logs.length,
): SoakResults['effects'] {
  const unitOf = new Map(units.flatMap((unit) => unit.sandboxes.map((sandbox) => [sandbox, unit] as const)));
  const effects: SoakResults['effects'] = {
    neverEffects: 0,
    hookEffects: 0,
    commitEffects: 0,
    egressRequests: 0,
    duplicates: [],
    forbiddenRan: [],
    workspacesRead: logs.length,
    workspacesFound,
  };
  for (const log of logs) {
    const unit = unitOf.get(log.sandbox);
    const name = unit?.id ?? log.sandbox;
    effects.neverEffects += log.effects.length;
    effects.hookEffects += log.hooks.length;
    effects.commitEffects += log.commits.length;
    effects.duplicates.push(
      ...duplicatesIn(name, 'effects.log', log.effects),
      ...duplicatesIn(name, 'hooks.log', log.hooks),
      ...duplicatesIn(name, 'commit-effects.log', log.commits),
    );
    for (const call of unit?.forbiddenCalls ?? [])
      if (log.effects.includes(call)) effects.forbiddenRan.push({ unit: name, call });
  }
  for (const [path, count] of egressRequests) {
    effects.egressRequests += count;
    if (count > 1)
      effects.duplicates.push({ unit: path.split('/')[2] ?? path, log: 'egress requests', line: path, count });
  }
  return effects;
}

/** What the ledger needs of a request the model server recorded. */
export interface ServedRequest {
  index: number;
  path: string;
  receivedAt: number;
  apiKey: string;
  clientDisconnected: boolean;
  reportedUsage: ReportedUsage | null;
  /** A hash of the request's body: a retried model call sends the same body again. */
  bodyHash?: string;
}

const usageOf = (u: ReportedUsage): TokenUsage => ({
  input: u.input_tokens,
  cacheWrite: u.cache_creation_input_tokens,
  cacheRead: u.cache_read_input_tokens,
  output: u.output_tokens,
});
const FIELDS = ['input', 'cacheWrite', 'cacheRead', 'output'] as const;
const plus = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  input: a.input + b.input,
  cacheWrite: a.cacheWrite + b.cacheWrite,
  cacheRead: a.cacheRead + b.cacheRead,
  output: a.output + b.output,
});
const minus = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  input: a.input - b.input,
  cacheWrite: a.cacheWrite - b.cacheWrite,
  cacheRead: a.cacheRead - b.cacheRead,
  output: a.output - b.output,
});
const same = (a: TokenUsage, b: TokenUsage): boolean => FIELDS.every((field) => a[field] === b[field]);
const zero = (): TokenUsage => ({ input: 0, cacheWrite: 0, cacheRead: 0, output: 0 });

/** Whether `gap` is the sum of some of `parts` (a few at most: brute force, else bounded by their total). */
function isSubsetSum(gap: TokenUsage, parts: readonly TokenUsage[]): boolean {
  if (parts.length > 12) {
    const total = parts.reduce(plus, zero());
    return FIELDS.every((field) => gap[field] >= 0 && gap[field] <= total[field]);
  }
  for (let mask = 0; mask < 1 << parts.length; mask++) {
    const sum = parts.filter((_, i) => mask & (1 << i)).reduce(plus, zero());
    if (same(sum, gap)) return true;
  }
  return false;
}

/**
 * Whether a unit's shortfall is exactly some earlier answers to requests it sent again, no more of
 * them than its histories show retried model-call attempts.
 */
function isRetriedAttempts(gap: TokenUsage, askedAgain: readonly TokenUsage[], retried: number): boolean {
  return askedAgain.length > 0 && askedAgain.length <= retried && isSubsetSum(gap, askedAgain);
}

/** The most model calls a unit has in flight at once (a session's lanes a and b). */
const IN_FLIGHT_PER_UNIT = 2;

/** The unit a workflow belongs to: its id, or a child's (`<unit>.<lane><n>`, `<unit>.title.1`). */
function unitOfWorkflow(unitIds: readonly string[], workflowId: string): string | undefined {
  let best: string | undefined;
  for (const id of unitIds)
    if ((workflowId === id || workflowId.startsWith(`${id}.`)) && (!best || id.length > best.length)) best = id;
  return best;
}

export function checkLedger(
  units: readonly UnitRecord[],
  requests: readonly ServedRequest[],
  unitOfRequest: ReadonlyMap<number, string>,
  /** API keys of brain processes that were SIGKILLed, and when. */
  killedKeys: ReadonlyMap<string, number>,
  /** Completions the server refused, as the brains logged them. */
  refusedCompletions: readonly RefusedCompletion[] = [],
  /**
   * Per unit, the model-call attempts its histories show were retried (each model activity's last
   * attempt number minus one, summed; `retriedModelAttempts`). Read only for units that need it.
   */
  retriedAttempts: ReadonlyMap<string, number> = new Map(),
): SoakResults['ledger'] {
  const served = new Map<string, TokenUsage>();
  const cut = new Map<string, TokenUsage[]>();
  /** Per unit, answers whose completion the server refused may be among these. */
  const refusedCuts = new Map<string, TokenUsage[]>();
  /** Per unit and brain, every answer that brain got for it, with when. */
  const byBrain = new Map<string, Array<{ usage: TokenUsage; receivedAt: number }>>();
  /** Per unit and request body, every answer to it, in the order asked. */
  const byBody = new Map<string, { unit: string; answers: TokenUsage[] }>();
  /** Per unit and killed brain, the answers that brain got for it, in the order asked. */
  const ofKilled = new Map<string, { unit: string; answers: Array<{ usage: TokenUsage; disconnected: boolean }> }>();
  const endOf = new Map(units.map((u) => [u.id, u.endedAt]));
  let unattributed = 0;
  let total = zero();
  let messages = 0;
  for (const request of [...requests].sort((a, b) => a.receivedAt - b.receivedAt || a.index - b.index)) {
    if (request.path !== '/v1/messages') continue;
    messages += 1;
    const unit = unitOfRequest.get(request.index);
    if (!request.reportedUsage) continue;
    const usage = usageOf(request.reportedUsage);
    total = plus(total, usage);
    if (unit === undefined) {
      unattributed += 1;
      continue;
    }
    served.set(unit, plus(served.get(unit) ?? zero(), usage));
    const brainKey = `${unit}\n${request.apiKey}`;
    byBrain.set(brainKey, [...(byBrain.get(brainKey) ?? []), { usage, receivedAt: request.receivedAt }]);
    if (request.bodyHash !== undefined) {
      const bodyKey = `${unit}\n${request.bodyHash}`;
      const entry = byBody.get(bodyKey) ?? { unit, answers: [] };
      entry.answers.push(usage);
      byBody.set(bodyKey, entry);
    }
    const killedAt = killedKeys.get(request.apiKey);
    if (killedAt === undefined || request.receivedAt > killedAt) continue;
    // A unit that had ended before the kill had every answer recorded.
    const ended = endOf.get(unit);
    if (ended !== undefined && ended <= killedAt) continue;
    const key = `${unit}\n${request.apiKey}`;
    const entry = ofKilled.get(key) ?? { unit, answers: [] };
    entry.answers.push({ usage, disconnected: request.clientDisconnected });
    ofKilled.set(key, entry);
  }
  // What a SIGKILLed brain took with it: an answer it was reading (the server saw the client go),
  // and its last answers for a unit, which the server wrote whole but which the brain may not have
  // read, or not reported to Temporal, before it died. A unit makes at most two model calls at once
  // (a session's two lanes), so its last two; earlier ones were recorded before it asked again.
  for (const { unit, answers } of ofKilled.values()) {
    const taken = answers.filter((a, i) => a.disconnected || i >= answers.length - IN_FLIGHT_PER_UNIT);
    cut.set(unit, [...(cut.get(unit) ?? []), ...taken.map((a) => a.usage)]);
  }
  // A refused completion was the brain's answer to one model call of the unit, received before the
  // refusal: one of that brain's last answers for the unit (at most two were in flight at once).
  const unitIds = units.map((u) => u.id);
  let refusedModelCompletions = 0;
  for (const refusal of refusedCompletions) {
    if (!MODEL_ACTIVITY_TYPES.includes(refusal.activityType)) continue;
    const unit = unitOfWorkflow(unitIds, refusal.workflowId);
    if (unit === undefined) continue;
    refusedModelCompletions += 1;
    const before = (byBrain.get(`${unit}\n${refusal.apiKey}`) ?? []).filter((a) => a.receivedAt <= refusal.at);
    const last = before.slice(-IN_FLIGHT_PER_UNIT).map((a) => a.usage);
    refusedCuts.set(unit, [...(refusedCuts.get(unit) ?? []), ...last]);
  }
  // A model call is sent again, with the same body, only when its attempt failed or timed out; the
  // attempt that completed is the last one. So the earlier answers to a body the unit sent again are
  // answers of attempts the server gave up on — paid, and recorded only if a heartbeat carried them.
  const askedAgain = new Map<string, TokenUsage[]>();
  for (const { unit, answers } of byBody.values())
    if (answers.length > 1) askedAgain.set(unit, [...(askedAgain.get(unit) ?? []), ...answers.slice(0, -1)]);
  let recorded = zero();
  let lost = zero();
  let refusedUsage = zero();
  let retriedUsage = zero();
  let exactUnits = 0;
  const explained: LedgerUnit[] = [];
  const explainedByRefusals: LedgerUnit[] = [];
  const explainedByRetries: LedgerUnit[] = [];
  const mismatches: LedgerUnit[] = [];
  for (const unit of units) {
    const mine = served.get(unit.id) ?? zero();
    const theirs = { ...ZERO_USAGE, ...unit.usage };
    recorded = plus(recorded, theirs);
    const gap = minus(mine, theirs);
    const entry: LedgerUnit = {
      unit: unit.id,
      served: mine,
      recorded: theirs,
      cutByKill: cut.get(unit.id)?.length ?? 0,
    };
    if (same(gap, zero())) exactUnits += 1;
    else if (isSubsetSum(gap, cut.get(unit.id) ?? [])) {
      explained.push(entry);
      lost = plus(lost, gap);
    } else if (isSubsetSum(gap, refusedCuts.get(unit.id) ?? [])) {
      explainedByRefusals.push(entry);
      refusedUsage = plus(refusedUsage, gap);
    } else if (isRetriedAttempts(gap, askedAgain.get(unit.id) ?? [], retriedAttempts.get(unit.id) ?? 0)) {
      explainedByRetries.push(entry);
      retriedUsage = plus(retriedUsage, gap);
    } else mismatches.push(entry);
  }
  const cutRequests = [...cut.values()].reduce((sum, list) => sum + list.length, 0);
  return {
    requests: messages,
    served: total,
    recorded,
    lostWithKilledBrains: lost,
    cutByKillRequests: cutRequests,
    refusedByServer: refusedUsage,
    refusedModelCompletions,
    paidForRetriedAttempts: retriedUsage,
    unitsExact: exactUnits,
    unitsExplainedByKills: explained,
    unitsExplainedByRefusals: explainedByRefusals,
    unitsExplainedByRetries: explainedByRetries,
    mismatches,
    unattributedRequests: unattributed,
    exact:
      mismatches.length === 0 &&
      unattributed === 0 &&
      same([recorded, lost, refusedUsage, retriedUsage].reduce(plus), total),
  };
}

function sample(durations: number[]): LatencySample {
  return {
    count: durations.length,
    p50Ms: round(quantile(durations, 0.5), 0),
    p95Ms: round(quantile(durations, 0.95), 0),
  };
}

/** Plain operations' submission-to-result times: before the first fault, and submitted during the fault phase. */
export function latencies(
  units: readonly UnitRecord[],
  t0: number,
  firstFaultMs: number,
  faultPhaseEndMs: number,
): SoakResults['latency'] {
  const ops = units.filter((u) => u.kind === 'op' && u.state === 'completed' && u.endedAt !== undefined);
  const ms = (u: UnitRecord) => u.endedAt! - u.submittedAt;
  return {
    beforeFaults: sample(ops.filter((u) => u.endedAt! - t0 < firstFaultMs).map(ms)),
    duringFaults: sample(
      ops.filter((u) => u.submittedAt - t0 >= firstFaultMs && u.submittedAt - t0 < faultPhaseEndMs).map(ms),
    ),
  };
}

export function summarizeFaults(
  planned: readonly PlannedFault[],
  fired: readonly InjectedFault[],
  served: readonly ServedFault[],
): SoakResults['faults'] {
  const byKind = Object.fromEntries(
    FAULT_KINDS.map((kind) => [
      kind,
      {
        planned: planned.filter((f) => f.kind === kind).length,
        injected: fired.filter((f) => f.kind === kind && f.outcome === 'injected').length,
        noTarget: fired.filter((f) => f.kind === kind && f.outcome !== 'injected').length,
      },
    ]),
  ) as SoakResults['faults']['byKind'];
  const modelServed: Partial<Record<FaultKind, number>> = {};
  for (const fault of served) modelServed[fault.kind] = (modelServed[fault.kind] ?? 0) + 1;
  return { planned: [...planned], byKind, fired: [...fired], modelServed };
}

export function verdictOf(results: Omit<SoakResults, 'verdict'>): SoakResults['verdict'] {
  const verdict = {
    noneLost: results.work.lost === 0 && results.work.accepted === results.work.submitted,
    noDuplicateEffects:
      results.effects.workspacesRead === results.effects.workspacesFound &&
      results.effects.duplicates.length === 0 &&
      results.effects.forbiddenRan.length === 0,
    ledgerExact: results.ledger.exact,
    noLeaks: results.leaks.total === 0,
    everyFaultKind: FAULT_KINDS.every((kind) => results.faults.byKind[kind].injected > 0),
    noUnexpectedExit: results.restarts.every((restart) => restart.cause.startsWith('fault ')),
  };
  return { ...verdict, passed: Object.values(verdict).every(Boolean) };
}
