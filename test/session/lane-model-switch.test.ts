/**
 * A lane's next operation on another model with a smaller window, on the real Temporal server,
 * Docker and the scripted model: the context the lane carries would not fit the new window, so the
 * new operation compacts it — with the new model — before its first model request, which then
 * starts from the summary and fits.
 */
import type { ContextPolicyInput } from '../../common/context';
import type { ScriptedTurn } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { isCompactionBody, isCompactionRequest, recordedStepsOf } from '../support/context-scripts';
import type { RequestBody } from '../support/conversations';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const print = (n: number): ScriptedTurn => ({
  toolCalls: [{ name: 'bash', input: { command: `printf 'out ${n} %08000d' 0` } }],
});

const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200 && r.path === '/v1/messages');
const modelOf = (r: RecordedRequest) => (r.body as { model: string }).model;

describe("a lane's next operation on a model with a smaller window", () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it('compacts the context it takes over before its first request', async () => {
    const turns: ScriptedTurn[] = [print(1), print(2), print(3), { text: 'one done' }, { text: 'two done' }];
    let next = 0;
    s.h.model.setScript((request) =>
      isCompactionRequest(request) ? { text: 'Summary: printed three outputs.' } : turns[next++],
    );
    const sessionId = s.newSession('model-switch');
    const first = s.h.model.requests.length;
    const one = await s.submit(sessionId, 'switch one');
    const r1 = await s.result(one.operationId);
    expect(r1.state).toBe('completed');
    expect(r1.tokens.compactions).toBe(0);
    const carried = r1.context!.tokens!;

    // A window the carried context overfills (past the 70% threshold), on another model.
    const context: ContextPolicyInput = { windowTokens: Math.max(4_096, Math.ceil(carried * 1.1)) };
    expect(carried).toBeGreaterThan(0.7 * context.windowTokens!);
    const two = await s.submit(sessionId, { prompt: 'switch two', model: 'scripted-small-model', context });
    const r2 = await s.result(two.operationId);
    expect(r2.state).toBe('completed');
    expect(r2.finalText).toBe('two done');
    s.h.model.assertScriptFinished();

    // Its first step is a compaction of the context it took over, asked of the new model.
    const steps = await recordedStepsOf(s.operation(two.operationId));
    expect(steps[0]).toMatchObject({ kind: 'compaction', input: { continues: one.operationId, compaction: 1 } });
    expect(steps[1]).toMatchObject({ kind: 'model' });
    const requests = answered(s.h.model.requests.slice(first));
    const ofTwo = requests.slice(requests.findIndex((r) => isCompactionBody(r.body)));
    expect(ofTwo).toHaveLength(2);
    expect(ofTwo.map(modelOf)).toEqual(['scripted-small-model', 'scripted-small-model']);
    expect(requests.slice(0, -2).map(modelOf)).toEqual(Array(4).fill('scripted-model'));
    // The first model request starts from the summary and fits the new window.
    const [firstOfTwo] = ofTwo.slice(1);
    const messages = (firstOfTwo!.body as RequestBody).messages;
    expect(JSON.stringify(messages[0])).toContain('[context compacted by the harness (compaction 1');
    expect(JSON.stringify(messages.at(-1))).toContain('switch two');
    expect(r2.tokens.peakContextPct).toBeLessThan(100);
  });

  it('compacts a reduced copy when the context it takes over is larger than the whole window', async () => {
    const turns: ScriptedTurn[] = [print(1), print(2), print(3), print(4), { text: 'one done' }, { text: 'two done' }];
    let next = 0;
    s.h.model.setScript((request) =>
      isCompactionRequest(request) ? { text: 'Summary: printed four outputs.' } : turns[next++],
    );
    const sessionId = s.newSession('over-window');
    const first = s.h.model.requests.length;
    const one = await s.submit(sessionId, 'over one');
    const r1 = await s.result(one.operationId);
    expect(r1.state).toBe('completed');
    const carried = r1.context!.tokens!;

    // A window the carried context does not fit at all: a summary call carrying it would be refused.
    const windowTokens = Math.max(4_096, Math.floor(carried * 0.8));
    expect(carried).toBeGreaterThan(windowTokens);
    const two = await s.submit(sessionId, { prompt: 'over two', context: { windowTokens } });
    const r2 = await s.result(two.operationId);
    expect(r2).toMatchObject({ state: 'completed', finalText: 'two done' });
    s.h.model.assertScriptFinished();

    const steps = await recordedStepsOf(s.operation(two.operationId));
    expect(steps[0]).toMatchObject({ kind: 'compaction', input: { continues: one.operationId, reduced: true } });
    // No request was refused, and every request of the second operation fit its window.
    const requests = s.h.model.requests.slice(first).filter((r) => r.path === '/v1/messages');
    expect(requests.every((r) => r.status === 200)).toBe(true);
    const ofTwo = answered(requests).slice(answered(requests).findIndex((r) => isCompactionBody(r.body)));
    for (const request of ofTwo) {
      const u = request.usage!;
      expect(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens).toBeLessThanOrEqual(
        windowTokens,
      );
    }
  });
});
