/**
 * A lane's next operation continues the context its previous operation left — after that
 * operation's compactions and clear batches — on the real Temporal server, Docker and the scripted
 * Messages API: its first request extends the previous operation's last request as an exact prefix;
 * it can still clear the tool results the context carries from before it; a compaction can be its
 * very first step; a cold worker rebuilds every one of these requests, from the histories of the
 * lane's operations alone, into the same bytes. And the session sends the next operation to the
 * hands host the first one used.
 */
import { execFileSync } from 'node:child_process';
import { defaultPayloadConverter } from '@temporalio/common';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import type { ContextPolicyInput } from '../../common/context';
import { CLAIM_HOST_ACTIVITY } from '../../common/hands-route';
import { compactUpdate, statusQuery, type OperationResult } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { prefixViolation } from '../../scripted-model/prefix';
import type { ScriptFunction, ScriptedTurn } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { isCompactionBody, isCompactionRequest, recordedStepsOf } from '../support/context-scripts';
import type { RequestBody } from '../support/conversations';
import { startOperationHarness, waitFor } from '../support/operation-harness';
import { startSessionHarnessOn, type SessionHarness } from '../support/session-harness';

/** Small enough that three printed outputs fill it: clear batches early, a compaction when asked. */
const POLICY: ContextPolicyInput = {
  windowTokens: 6_000,
  compactAtPct: 90,
  keepTurns: 1,
  editing: { atPct: 25, keepTurns: 1, minClearTokens: 700 },
};

const print = (n: number): ScriptedTurn => ({
  label: `print ${n}`,
  toolCalls: [{ name: 'bash', input: { command: `printf 'out ${n} %03000d' 0` } }],
});
const waitForRelease = 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released';

/** The lane's three operations, in order (one lane: its requests come one at a time); summaries for compactions. */
function laneScript(): ScriptFunction {
  const turns: ScriptedTurn[] = [
    print(1),
    print(2),
    print(3),
    { label: 'wait', toolCalls: [{ name: 'bash', input: { command: waitForRelease } }] },
    print(5),
    { label: 'one', text: 'one done' },
    print(6),
    print(7),
    { label: 'two', text: 'two done' },
    { label: 'three', text: 'three done' },
  ];
  let next = 0;
  let summaries = 0;
  return (request) => {
    if (isCompactionRequest(request)) {
      summaries += 1;
      return { label: `summary ${summaries}`, text: `Summary ${summaries}: printed outputs, waited once.` };
    }
    return turns[next++];
  };
}

const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200 && r.path === '/v1/messages');
const messagesOf = (r: RecordedRequest) => (r.body as RequestBody).messages;
const lastUserText = (r: RecordedRequest) =>
  (messagesOf(r).at(-1)?.content ?? []).map((block) => (block.type === 'text' ? String(block.text) : '')).join('\n');

interface LaneRun {
  requests: RecordedRequest[];
  results: OperationResult[];
  operationIds: string[];
}

describe("a lane's context across operations, compactions and clear batches", () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = startSessionHarnessOn(await startOperationHarness(), { closeHarness: true });
  });
  afterAll(async () => {
    await s.close();
  });

  /** Three operations in one lane; `cold` drops the brain's cache before every step that could use it. */
  async function runLane(cold: boolean): Promise<LaneRun> {
    s.h.model.setScript(laneScript());
    const sessionId = s.newSession(cold ? 'lane-ctx-cold' : 'lane-ctx-warm');
    const first = s.h.model.requests.length;
    const dropCache = () => {
      if (cold) s.h.cache.clear();
    };

    // The container stays between operations: whether an idle session's teardown finishes before the
    // next prompt arrives is a race, and a removed container shows in the next tool result's bytes.
    const one = await s.submit(sessionId, { prompt: 'lane context one', context: POLICY }, { keepContainer: true });
    const handle = s.operation(one.operationId);
    await waitFor(async () => {
      const status = await handle.query(statusQuery).catch(() => undefined);
      return status?.phase === 'tools' && status.turn === 4;
    }, 'the waiting tool call of the first operation');
    await handle.executeUpdate(compactUpdate, { args: [{}] });
    dropCache();
    execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/release']);
    const r1 = await s.result(one.operationId);
    dropCache();

    const two = await s.submit(sessionId, { prompt: 'lane context two', context: POLICY });
    const r2 = await s.result(two.operationId);
    dropCache();

    // A lower threshold: the third operation compacts the context it takes over before its first model request.
    const three = await s.submit(sessionId, { prompt: 'lane context three', context: { ...POLICY, compactAtPct: 30 } });
    const r3 = await s.result(three.operationId);
    return {
      requests: answered(s.h.model.requests.slice(first)),
      results: [r1, r2, r3],
      operationIds: [one.operationId, two.operationId, three.operationId],
    };
  }

  it('continues the compacted and cleared context as an exact prefix, and rebuilds it cold into the same bytes', async () => {
    const warm = await runLane(false);
    s.h.model.assertScriptFinished();
    const [r1, r2, r3] = warm.results;
    const [, twoId, threeId] = warm.operationIds;
    expect(warm.results.map((r) => r.state)).toEqual(['completed', 'completed', 'completed']);

    // The first operation cleared old tool results and was compacted (asked for by Update).
    expect(r1!.tokens.compactions).toBe(1);
    expect(r1!.tokens.editBatches).toBeGreaterThanOrEqual(1);
    expect(r1!.context).toMatchObject({ compactions: 1 });
    expect(r1!.context!.edits).toBeGreaterThanOrEqual(1);

    // The second operation's first request extends the first one's last request: the compacted context.
    const firstOfTwo = warm.requests.findIndex((r) => lastUserText(r).includes('lane context two'));
    expect(firstOfTwo).toBeGreaterThan(0);
    const lastOfOne = warm.requests[firstOfTwo - 1]!;
    const startOfTwo = warm.requests[firstOfTwo]!;
    expect(isCompactionBody(lastOfOne.body)).toBe(false);
    expect(prefixViolation(messagesOf(lastOfOne), messagesOf(startOfTwo))).toBeNull();
    expect(messagesOf(startOfTwo)).toHaveLength(messagesOf(lastOfOne).length + 2);
    expect(JSON.stringify(messagesOf(startOfTwo)[0])).toContain('[context compacted by the harness (compaction 1');

    // The second operation cleared a tool result its context carried from the first operation.
    const stepsOfTwo = await recordedStepsOf(s.operation(twoId!));
    const cleared = stepsOfTwo.flatMap((step) => (step.kind === 'model' ? (step.input.clear?.toolUseIds ?? []) : []));
    const callsOfTwo = stepsOfTwo.flatMap((step) =>
      step.kind === 'model' && step.result
        ? step.result.message.content.flatMap((block) => (block.type === 'tool_use' ? [block.id] : []))
        : [],
    );
    expect(cleared.some((id) => !callsOfTwo.includes(id))).toBe(true);
    expect(r2!.context!.edits).toBeGreaterThan(r1!.context!.edits ?? 0);
    expect(r2!.context!.compactions).toBe(1);

    // The session learnt the hands host from the first operation and sent the second one there: it claimed none.
    expect(r1!.handsRoute).toBeDefined();
    const historyOfTwo = await s.operation(twoId!).fetchHistory();
    const grants = (historyOfTwo.events ?? []).flatMap((event) => {
      const signal = event.workflowExecutionSignaledEventAttributes;
      const payload = signal?.input?.payloads?.[0];
      return signal?.signalName === 'sandboxLeaseGranted' && payload
        ? [defaultPayloadConverter.fromPayload(payload)]
        : [];
    });
    expect(grants[0]).toEqual({ handsHost: r1!.handsRoute });
    const claims = (historyOfTwo.events ?? []).filter(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === CLAIM_HOST_ACTIVITY,
    );
    expect(claims).toHaveLength(0);

    // The third operation's first step is a compaction of the context it took over.
    const stepsOfThree = await recordedStepsOf(s.operation(threeId!));
    expect(stepsOfThree[0]).toMatchObject({ kind: 'compaction', input: { continues: twoId, compaction: 2 } });
    expect(stepsOfThree[0]!.result).toBeDefined();
    expect(r3!.context).toMatchObject({ compactions: 2 });

    // A cold worker rebuilds each request from the lane's histories alone into the same bytes.
    const rebuildsBefore = s.h.cache.stats.rebuilds;
    const cold = await runLane(true);
    s.h.model.assertScriptFinished();
    expect(cold.results.map((r) => r.state)).toEqual(['completed', 'completed', 'completed']);
    expect(s.h.cache.stats.rebuilds).toBeGreaterThanOrEqual(rebuildsBefore + 3);
    expect(cold.requests.map((r) => r.rawBody)).toEqual(warm.requests.map((r) => r.rawBody));
  });
});
