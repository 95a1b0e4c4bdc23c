/**
 * The chaos soak's pure parts (the soak itself: `npm run soak`, docs/benchmark.md#the-chaos-soak):
 * its plan from a seed, its arguments, its scripted agent's answers, and its accounting.
 */
import { checkLedger, countEffects, countWork, verdictOf, type ServedRequest } from '../../bench/soak/accounting';
import { parseSoakArgs } from '../../bench/soak/args';
import { retriedModelAttemptsOf, unitWorkflowsQuery } from '../../bench/soak/attempts';
import { parseRefusal } from '../../bench/soak/refused';
import { FILLER, promptTag, SoakModel, taskBranch, toolIdOf } from '../../bench/soak/model';
import { FAULT_KINDS, planSoak } from '../../bench/soak/schedule';
import type { UnitRecord } from '../../bench/soak/units';
import { temporal } from '@temporalio/proto';
import { ZERO_USAGE } from '../../common/model-types';
import { FEATURE_HEADING } from '../../scripted-model/scenarios/coding-task';
import { scriptedRequest, type ScriptedTurn } from '../../scripted-model/script';
import type { MessagesRequestBody } from '../../scripted-model/validation';

type Message = MessagesRequestBody['messages'][number];
const user = (text: string): Message => ({ role: 'user', content: text });
/** The assistant turn a script answered, as the harness sends it back. */
const assistant = (turn: ScriptedTurn): Message => ({
  role: 'assistant',
  content: (turn.toolCalls ?? []).map((call) => ({
    type: 'tool_use',
    id: call.id!,
    name: call.name,
    input: call.input,
  })),
});
const results = (turn: ScriptedTurn, content = 'ok'): Message => ({
  role: 'user',
  content: (turn.toolCalls ?? []).map((call) => ({ type: 'tool_result', tool_use_id: call.id!, content })),
});
const request = (messages: Message[], index = 0) =>
  scriptedRequest({ model: 'scripted-model', max_tokens: 1024, messages } as MessagesRequestBody, index, index);

describe('the soak plan', () => {
  it('is the same for the same seed, another for another, and has every fault kind in three minutes', () => {
    const options = { seed: 'ci', durationMs: 180_000, concurrency: 6 };
    const plan = planSoak(options);
    expect(planSoak(options)).toEqual(plan);
    expect(planSoak({ ...options, seed: 'other' }).faults).not.toEqual(plan.faults);
    expect(plan.warmupMs).toBe(30_000);
    expect(plan.faults.length).toBeGreaterThanOrEqual(FAULT_KINDS.length);
    expect(new Set(plan.faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
    expect(plan.faults.every((f) => f.atMs > plan.warmupMs && f.atMs < options.durationMs)).toBe(true);
    // Rounds: the first ten faults are the ten kinds.
    expect(new Set(plan.faults.slice(0, FAULT_KINDS.length).map((f) => f.kind)).size).toBe(FAULT_KINDS.length);
    expect(plan.slots.map((s) => s.role)).toEqual(['task', 'session', 'mixed', 'mixed', 'mixed', 'mixed']);
  });

  it('spreads an hour: a fault every 20 s on average after a five-minute warm-up', () => {
    const plan = planSoak({ seed: 'hour', durationMs: 3_600_000, concurrency: 6 });
    expect(plan.warmupMs).toBe(300_000);
    expect(plan.meanGapMs).toBe(20_000);
    expect(plan.faults.length).toBeGreaterThan(140);
    for (const kind of FAULT_KINDS)
      expect(plan.faults.filter((f) => f.kind === kind).length).toBeGreaterThanOrEqual(14);
  });

  it('refuses what cannot run', () => {
    expect(() => planSoak({ seed: 's', durationMs: 20_000, concurrency: 6 })).toThrow(/warm-up/);
    expect(() => planSoak({ seed: 's', durationMs: 180_000, concurrency: 2 })).toThrow(/at least 3/);
  });
});

describe('npm run soak arguments', () => {
  it('parses, and names what is wrong', () => {
    expect(parseSoakArgs(['--minutes', '60', '--seed', 'abc', '--out=/tmp/x'], '/d')).toEqual({
      minutes: 60,
      seed: 'abc',
      concurrency: 6,
      outDir: '/tmp/x',
      help: false,
    });
    expect(parseSoakArgs([], '/d')).toEqual({ error: expect.stringContaining('--minutes is required') });
    expect(parseSoakArgs(['--minutes', '0'], '/d')).toEqual({ error: expect.stringContaining('--minutes') });
    expect(parseSoakArgs(['--minutes', '3', '--concurrency', '2'], '/d')).toEqual({
      error: expect.stringContaining('--concurrency'),
    });
    expect(parseSoakArgs(['--minutes', '3', '--seed', 'a b'], '/d')).toEqual({
      error: expect.stringContaining('--seed'),
    });
    expect(parseSoakArgs(['--bogus'], '/d')).toEqual({ error: 'unknown argument --bogus' });
  });
});

describe("the soak's scripted agent", () => {
  const model = () => new SoakModel({ egressUrl: 'http://192.0.2.2:9', stallMs: 12_000 });

  it('walks an operation step by step from the conversation, each call named by its step', () => {
    const m = model();
    const prompt = user(promptTag('u1', 'op'));
    const first = m.script(request([prompt]))!;
    expect(first.toolCalls?.[0]).toMatchObject({ id: toolIdOf('u1', 0), name: 'bash' });
    expect(first.toolCalls?.[0]?.input.command).toContain(`echo ${toolIdOf('u1', 0)} >> /workspace/effects.log`);
    // The same request asked again (a retry) gets the same answer.
    expect(m.script(request([prompt]))).toEqual(first);
    const second = m.script(request([prompt, assistant(first), results(first)]))!;
    expect(second.toolCalls?.[0]).toMatchObject({ id: toolIdOf('u1', 1), name: 'write_file' });
    expect(m.unitOf.get(0)).toBe('u1');
  });

  it('removes the filler after ENOSPC and does the step again as a new call', () => {
    const m = model();
    const prompt = user(promptTag('u2', 'op'));
    const first = m.script(request([prompt]))!;
    const full = results(first, 'bash: echo: write error: No space left on device');
    const fix = m.script(request([prompt, assistant(first), full]))!;
    expect(fix.toolCalls?.[0]).toMatchObject({ id: toolIdOf('u2', 0, 'fix1') });
    expect(fix.toolCalls?.[0]?.input.command).toContain(`rm -f ${FILLER}`);
    const again = m.script(request([prompt, assistant(first), full, assistant(fix), results(fix)]))!;
    expect(again.toolCalls?.[0]).toMatchObject({ id: toolIdOf('u2', 0, 're1') });
    expect(again.toolCalls?.[0]?.input.command).toContain(`echo ${toolIdOf('u2', 0, 're1')} >>`);
    const next = m.script(
      request([prompt, assistant(first), full, assistant(fix), results(fix), assistant(again), results(again)]),
    )!;
    expect(next.toolCalls?.[0]).toMatchObject({ id: toolIdOf('u2', 1), name: 'write_file' });
  });

  it("starts a lane's follow-up at its own first step, after the previous operation's conversation", () => {
    const m = model();
    const p1 = user(promptTag('s1', 'session', { lane: 'a', n: 1 }));
    const t1 = m.script(request([p1]))!;
    const t2 = m.script(request([p1, assistant(t1), results(t1)]))!;
    const t3 = m.script(request([p1, assistant(t1), results(t1), assistant(t2), results(t2)]))!;
    expect(t3).toEqual({ text: 'done s1_a1' });
    const p2 = user(promptTag('s1', 'session', { lane: 'a', n: 2 }));
    const next = m.script(
      request([
        p1,
        assistant(t1),
        results(t1),
        assistant(t2),
        results(t2),
        { role: 'assistant', content: 'done s1_a1' },
        p2,
      ]),
    )!;
    expect(next.toolCalls?.[0]).toMatchObject({ id: toolIdOf('s1_a2', 0) });
  });

  it("names a coding task's commit effect by feature and attempt, and finds its unit by the branch", () => {
    const m = model();
    const goal = [
      FEATURE_HEADING,
      '',
      `You are continuing a long-running task on the branch \`${taskBranch('t1')}\` of this repository`,
      'id: slug',
      'attempt 2 of 3',
    ].join('\n');
    const messages: Message[] = [user(goal)];
    for (let step = 0; step < 2; step++) {
      const turn = m.script(request(messages))!;
      messages.push(assistant(turn), results(turn));
    }
    const commit = m.script(request(messages))!;
    expect(commit.toolCalls?.[0]?.input.command).toContain('echo slug#2 >> /workspace/.agent/commit-effects.log');
    expect(m.unitOf.get(0)).toBe('t1');
  });

  it('serves an injected model fault once, with the turn it would have answered', () => {
    const m = model();
    m.inject('model-stall');
    const turn = m.script(request([user(promptTag('u3', 'op'))], 7))!;
    expect(turn.fault).toEqual({ type: 'stall', ms: 12_000, afterBlocks: 0 });
    expect(turn.toolCalls?.[0]?.id).toBe(toolIdOf('u3', 0));
    expect(m.served).toEqual([expect.objectContaining({ kind: 'model-stall', requestIndex: 7, unitId: 'u3' })]);
    expect(m.script(request([user(promptTag('u3', 'op'))], 8))!.fault).toBeUndefined();
  });
});

describe("the soak's accounting", () => {
  const unit = (over: Partial<UnitRecord>): UnitRecord => ({
    id: 'u',
    kind: 'op',
    slot: 2,
    sandboxes: [over.id ?? 'u'],
    submittedAt: 0,
    acceptedAt: 1,
    endedAt: 2,
    state: 'completed',
    reason: 'end_turn',
    expected: 'completed',
    usage: { ...ZERO_USAGE },
    operations: [],
    forbiddenCalls: [],
    ...over,
  });
  const usage = (input: number, output: number) => ({
    input_tokens: input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: output,
  });
  const served = (index: number, u: ReturnType<typeof usage>, over: Partial<ServedRequest> = {}): ServedRequest => ({
    index,
    path: '/v1/messages',
    receivedAt: 100,
    apiKey: 'soak-brain-1.1',
    clientDisconnected: false,
    reportedUsage: u,
    ...over,
  });

  it('counts every unit to its end, and a unit with no end as lost', () => {
    const work = countWork([
      unit({ id: 'a' }),
      unit({ id: 'b', kind: 'fail', state: 'failed', reason: 'budget: turns', expected: 'failed' }),
      unit({ id: 'c', kind: 'abort', state: 'completed', expected: 'aborted' }),
      unit({ id: 'd', state: undefined, error: 'did not end within the drain' }),
    ]);
    expect(work).toMatchObject({ submitted: 4, accepted: 4, completed: 2, failed: 1, aborted: 0, lost: 1 });
    expect(work.unexpected.map((o) => o.unit)).toEqual(['c']);
    expect(work.lostUnits).toEqual([{ unit: 'd', kind: 'op', error: 'did not end within the drain' }]);
  });

  it('finds an effect made twice and a forbidden call that ran', () => {
    const effects = countEffects(
      [unit({ id: 'a', forbiddenCalls: ['x9'] })],
      [{ sandbox: 'a', host: 'host-a', effects: ['x1', 'x2', 'x1', 'x9'], hooks: ['x1'], commits: [] }],
      new Map([['/soak/x5', 2]]),
    );
    expect(effects.duplicates).toEqual([
      { unit: 'a', log: 'effects.log', line: 'x1', count: 2 },
      { unit: 'x5', log: 'egress requests', line: '/soak/x5', count: 2 },
    ]);
    expect(effects.forbiddenRan).toEqual([{ unit: 'a', call: 'x9' }]);
  });

  it('checks the ledger per unit; a shortfall is accepted only as answers a brain SIGKILL cut off', () => {
    const units = [
      unit({ id: 'a', usage: { input: 30, cacheWrite: 0, cacheRead: 0, output: 6 } }),
      unit({ id: 'b', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 }, endedAt: 300 }),
      unit({ id: 'c', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 } }),
    ];
    const requests = [
      served(0, usage(30, 6)),
      served(1, usage(10, 5)),
      // b's second answer was cut off when its brain was killed, before anything reached Temporal.
      served(2, usage(12, 1), { clientDisconnected: true, apiKey: 'soak-brain-2.1' }),
      served(3, usage(10, 5)),
      // c's was cut off too, but by a live process: nothing excuses the gap.
      served(4, usage(7, 1), { clientDisconnected: true }),
    ];
    const unitOf = new Map([
      [0, 'a'],
      [1, 'b'],
      [2, 'b'],
      [3, 'c'],
      [4, 'c'],
    ]);
    const ledger = checkLedger(units, requests, unitOf, new Map([['soak-brain-2.1', 200]]));
    expect(ledger.unitsExact).toBe(1);
    expect(ledger.unitsExplainedByKills.map((u) => u.unit)).toEqual(['b']);
    expect(ledger.lostWithKilledBrains).toEqual({ input: 12, cacheWrite: 0, cacheRead: 0, output: 1 });
    expect(ledger.mismatches.map((u) => u.unit)).toEqual(['c']);
    expect(ledger.exact).toBe(false);
  });

  it('accepts as taken by a killed brain its last answers for a unit, written whole but never recorded, and no earlier one', () => {
    const killed = { apiKey: 'soak-brain-1.3' };
    const units = [
      // d's last answer was written whole to the socket of a brain killed before it reported it.
      unit({ id: 'd', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 }, endedAt: 300 }),
      // e is short by the answer the killed brain got three answers before its last: that one was recorded.
      unit({ id: 'e', usage: { input: 25, cacheWrite: 0, cacheRead: 0, output: 10 }, endedAt: 300 }),
    ];
    const requests = [
      served(0, usage(10, 5), { ...killed, receivedAt: 100 }),
      served(1, usage(11, 2), { ...killed, receivedAt: 150 }),
      served(2, usage(3, 1), { ...killed, receivedAt: 100 }),
      served(3, usage(10, 4), { ...killed, receivedAt: 110 }),
      served(4, usage(8, 3), { ...killed, receivedAt: 120 }),
      served(5, usage(6, 2), { ...killed, receivedAt: 130 }),
      // After the kill, on the restarted brain: never excused.
      served(6, usage(1, 1), { apiKey: 'soak-brain-1.4', receivedAt: 300 }),
    ];
    const unitOf = new Map([
      [0, 'd'],
      [1, 'd'],
      [2, 'e'],
      [3, 'e'],
      [4, 'e'],
      [5, 'e'],
      [6, 'e'],
    ]);
    const ledger = checkLedger(units, requests, unitOf, new Map([['soak-brain-1.3', 200]]));
    expect(ledger.unitsExplainedByKills.map((u) => u.unit)).toEqual(['d']);
    expect(ledger.lostWithKilledBrains).toEqual({ input: 11, cacheWrite: 0, cacheRead: 0, output: 2 });
    expect(ledger.mismatches.map((u) => u.unit)).toEqual(['e']);
    /** e alone, short by its last answer of the killed brain (6 in, 2 out), ended at `endedAt`. */
    const shortByLast = (endedAt: number) =>
      checkLedger(
        [unit({ id: 'e', usage: { input: 22, cacheWrite: 0, cacheRead: 0, output: 9 }, endedAt })],
        requests,
        unitOf,
        new Map([['soak-brain-1.3', 200]]),
      );
    expect(shortByLast(300).unitsExplainedByKills.map((u) => u.unit)).toEqual(['e']);
    // The same shortfall of a unit that had ended before the kill: nothing was in flight for it.
    expect(shortByLast(150).mismatches.map((u) => u.unit)).toEqual(['e']);
  });

  it("reads a refused completion from a brain's log line: the workflow and activity its task token names", () => {
    // As the SDK writes it (colours and all), for the model step of soak-hvaqmi-4-289.
    const line =
      '\u001b[2m2026-12-04T16:07:32.758766Z\u001b[0m \u001b[33m WARN\u001b[0m \u001b[2mtemporalio_sdk_core::worker::activities\u001b[0m\u001b[2m:\u001b[0m ' +
      'Activity not found on completion. This may happen if the activity has already been cancelled but completed anyway. ' +
      '\u001b[3mtask_token\u001b[0m\u001b[2m=\u001b[0mTaskToken(CiQyYTliMWFkMC0wMDcyLTRlMDMtODE2NS04NTdhZGQxNTM1MDcSEXNvYWstaHZhcW1pLTQtMjg5GiQwMWEyNDFjZi0zNjM2LTczZjYtYTBhNC01MDc4ZmM2MWFjNjQgRigBMgxtb2RlbC10dXJuLTNCCW1vZGVsU3RlcEoJCAQQoePAFRgB) ' +
      '\u001b[3mdetails\u001b[0m\u001b[2m=\u001b[0mStatus { code: NotFound }';
    // eslint-disable-next-line no-control-regex
    expect(parseRefusal(line.replace(/\u001b\[[0-9;]*m/g, ''), 'soak-brain-1.2')).toEqual({
      apiKey: 'soak-brain-1.2',
      workflowId: 'soak-hvaqmi-4-289',
      activityType: 'modelStep',
      at: Date.parse('2026-12-04T16:07:32.758Z'),
    });
    expect(parseRefusal('2026-12-04T16:07:32.758766Z  WARN retried 5 times', 'soak-brain-1.2')).toBeUndefined();
  });

  it("accepts a shortfall as answers whose completion the server refused only for the unit and brain the logs name, from that brain's last answers", () => {
    const units = [
      // f's second answer reached its brain, which reported it after the server had timed the attempt out.
      unit({ id: 'f', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 } }),
      // g is short by an answer too, but no refusal names it.
      unit({ id: 'g', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 } }),
      // h's refusal was of a tool call: no model answer was in it.
      unit({ id: 'h', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 } }),
    ];
    const requests = [
      served(0, usage(10, 5), { apiKey: 'soak-brain-2.1', receivedAt: 100 }),
      served(1, usage(12, 1), { apiKey: 'soak-brain-2.1', receivedAt: 110 }),
      served(2, usage(10, 5), { apiKey: 'soak-brain-2.1', receivedAt: 100 }),
      served(3, usage(12, 1), { apiKey: 'soak-brain-2.1', receivedAt: 110 }),
      served(4, usage(10, 5), { apiKey: 'soak-brain-2.1', receivedAt: 100 }),
      served(5, usage(12, 1), { apiKey: 'soak-brain-2.1', receivedAt: 110 }),
    ];
    const unitOf = new Map([
      [0, 'f'],
      [1, 'f'],
      [2, 'g'],
      [3, 'g'],
      [4, 'h'],
      [5, 'h'],
    ]);
    const refused = [
      { apiKey: 'soak-brain-2.1', workflowId: 'f.a1', activityType: 'modelStep', at: 120 },
      { apiKey: 'soak-brain-2.1', workflowId: 'h', activityType: 'runTool', at: 120 },
      // Named by another brain: its answers for g came from soak-brain-2.1.
      { apiKey: 'soak-brain-1.1', workflowId: 'g', activityType: 'modelStep', at: 120 },
    ];
    const ledger = checkLedger(units, requests, unitOf, new Map(), refused);
    expect(ledger.refusedModelCompletions).toBe(2);
    expect(ledger.unitsExplainedByRefusals.map((u) => u.unit)).toEqual(['f']);
    expect(ledger.refusedByServer).toEqual({ input: 12, cacheWrite: 0, cacheRead: 0, output: 1 });
    expect(ledger.mismatches.map((u) => u.unit)).toEqual(['g', 'h']);
    expect(ledger.exact).toBe(false);
    // An answer received after the refusal was logged is not the refused one.
    const early = [{ apiKey: 'soak-brain-2.1', workflowId: 'f', activityType: 'modelStep', at: 105 }];
    expect(checkLedger([units[0]!], requests, unitOf, new Map(), early).mismatches.map((u) => u.unit)).toEqual(['f']);
    const exact = checkLedger([units[0]!], requests.slice(0, 2), unitOf, new Map(), refused);
    expect(exact.exact).toBe(true);
  });

  it('accepts a shortfall as earlier answers to a request the unit sent again, no more of them than its histories show retried attempts', () => {
    // k's step was asked three times (attempts 1 and 2 timed out on the server, answered all the
    // same); only the third answer was recorded. m sent two different requests: nothing was retried.
    const units = [
      unit({ id: 'k', usage: { input: 0, cacheWrite: 0, cacheRead: 30, output: 2 } }),
      unit({ id: 'm', usage: { input: 10, cacheWrite: 0, cacheRead: 0, output: 5 } }),
    ];
    const requests = [
      served(0, usage(30, 2), { bodyHash: 'k-turn-3', receivedAt: 100 }),
      served(1, { ...usage(0, 2), cache_read_input_tokens: 30 }, { bodyHash: 'k-turn-3', receivedAt: 110 }),
      served(2, { ...usage(0, 2), cache_read_input_tokens: 30 }, { bodyHash: 'k-turn-3', receivedAt: 120 }),
      served(3, usage(10, 5), { bodyHash: 'm-turn-1', receivedAt: 100 }),
      served(4, usage(12, 1), { bodyHash: 'm-turn-2', receivedAt: 110 }),
    ];
    const unitOf = new Map([
      [0, 'k'],
      [1, 'k'],
      [2, 'k'],
      [3, 'm'],
      [4, 'm'],
    ]);
    const ledger = checkLedger(
      units,
      requests,
      unitOf,
      new Map(),
      [],
      new Map([
        ['k', 2],
        ['m', 3],
      ]),
    );
    expect(ledger.unitsExplainedByRetries.map((u) => u.unit)).toEqual(['k']);
    expect(ledger.paidForRetriedAttempts).toEqual({ input: 30, cacheWrite: 0, cacheRead: 30, output: 4 });
    expect(ledger.mismatches.map((u) => u.unit)).toEqual(['m']);
    // The histories show one retried attempt: two earlier answers are more than it explains.
    const fewer = checkLedger([units[0]!], requests.slice(0, 3), unitOf, new Map(), [], new Map([['k', 1]]));
    expect(fewer.mismatches.map((u) => u.unit)).toEqual(['k']);
    // Without histories read, nothing is explained by retries.
    expect(checkLedger([units[0]!], requests.slice(0, 3), unitOf, new Map()).exact).toBe(false);
    expect(checkLedger([units[0]!], requests.slice(0, 3), unitOf, new Map(), [], new Map([['k', 2]])).exact).toBe(true);
  });

  it("counts a history's retried model-call attempts: the last attempt of each model activity, less one", () => {
    const E = temporal.api.enums.v1.EventType;
    const scheduled = (id: number, type: string) => ({
      eventId: id,
      eventType: E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
      activityTaskScheduledEventAttributes: { activityType: { name: type } },
    });
    const started = (id: number, of: number, attempt: number) => ({
      eventId: id,
      eventType: E.EVENT_TYPE_ACTIVITY_TASK_STARTED,
      activityTaskStartedEventAttributes: { scheduledEventId: of, attempt },
    });
    // As the server sends it: int64 ids decode to Long (`fromObject` converts the numbers).
    const history = temporal.api.history.v1.History.fromObject({
      events: [
        scheduled(5, 'modelStep'),
        started(6, 5, 3),
        scheduled(9, 'runTool'),
        started(10, 9, 4),
        scheduled(13, 'compactContext'),
        started(14, 13, 2),
        scheduled(17, 'modelStep'),
        started(18, 17, 1),
      ],
    });
    expect(retriedModelAttemptsOf(history)).toBe(3);
    expect(unitWorkflowsQuery('soak-x-4-28')).toBe(
      "WorkflowId = 'soak-x-4-28' OR WorkflowId STARTS_WITH 'soak-x-4-28.' OR WorkflowId STARTS_WITH 'op-soak-x-4-28.'",
    );
  });

  it('passes only when every check passes', () => {
    const base = {
      work: countWork([unit({})]),
      effects: countEffects([unit({})], [], new Map()),
      ledger: { exact: true },
      leaks: { total: 0 },
      faults: { byKind: Object.fromEntries(FAULT_KINDS.map((k) => [k, { planned: 1, injected: 1, noTarget: 0 }])) },
      restarts: [{ cause: 'fault brain-kill #1' }],
    } as unknown as Parameters<typeof verdictOf>[0];
    expect(verdictOf(base).passed).toBe(true);
    // Effects counted in no workspace prove nothing: one found and not read fails the check.
    const unread = { ...base, effects: countEffects([unit({})], [], new Map(), 1) } as typeof base;
    expect(verdictOf(unread)).toMatchObject({ noDuplicateEffects: false, passed: false });
    expect(verdictOf({ ...base, restarts: [{ cause: 'exited unexpectedly (code 1)' }] } as typeof base)).toMatchObject({
      noUnexpectedExit: false,
      passed: false,
    });
  });
});
