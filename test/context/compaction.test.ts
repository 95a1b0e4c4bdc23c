import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { operationResult } from '../../client/operation-result';
import { COMPACTION_REQUEST_MARKER } from '../../common/context';
import { statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { assertRequestsExtendPrefix } from '../../scripted-model/prefix';
import {
  isCompactionBody,
  longRunScript,
  promptOf,
  recordedStepsOf,
  segmentsBetweenCompactions,
} from '../support/context-scripts';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';
import { execFileSync } from 'node:child_process';

const answered = (h: OperationHarness, from = 0) =>
  h.model.requests.slice(from).filter((r) => r.path === '/v1/messages' && r.status === 200);

describe('compaction (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness([], { model: { contextWindowTokens: 50_000 } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('completes a 200-turn run under a 50k-token window, compacting as it goes', async () => {
    const turns = 200;
    h.model.setScript(
      longRunScript({
        turns,
        replyText: (turn) => `Turn ${turn}: looking at the output of the previous command. ${'reasoning '.repeat(150)}`,
        outputChars: 1200,
      }),
    );
    const first = h.model.requests.length;
    const handle = await h.start({
      goal: 'take two hundred small steps',
      budget: { maxTurns: turns + 5 },
      context: { windowTokens: 50_000, editing: { enabled: false } },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.turns).toBe(turns + 1);
    h.model.assertScriptFinished();

    const requests = answered(h, first);
    expect(h.model.requests.slice(first).every((r) => r.status === 200)).toBe(true);
    // Every prompt stayed under the window, the peak at most the 70% threshold plus one turn.
    const peak = Math.max(...requests.map(promptOf));
    expect(peak).toBeLessThan(50_000);
    expect(result.tokens.peakPromptTokens).toBe(peak);

    // Compactions are recorded steps, and between two of them every request extends the previous one.
    const steps = await recordedStepsOf(handle);
    const compactions = steps.filter((s) => s.kind === 'compaction');
    expect(compactions.length).toBeGreaterThanOrEqual(3); // ~700 tokens a turn, 35k between compactions
    expect(compactions.every((s) => s.result && s.input.reason === 'threshold')).toBe(true);
    expect(result.tokens.compactions).toBe(compactions.length);
    const segments = segmentsBetweenCompactions(requests);
    expect(segments).toHaveLength(compactions.length + 1);
    for (const segment of segments) assertRequestsExtendPrefix(segment);
    expect(requests.filter((r) => isCompactionBody(r.body))).toHaveLength(compactions.length);

    // After each compaction the context is system + goal and summary + the newest turns verbatim.
    for (const segment of segments.slice(1)) {
      const body = segment[0]!.body as { messages: Array<{ role: string; content: Array<{ text?: string }> }> };
      expect(body.messages[0]!.content[0]!.text).toContain('## Goal\ntake two hundred small steps');
      expect(body.messages[0]!.content[0]!.text).toMatch(/Summary \d+: \d+ turns done/);
      expect(body.messages[1]!.role).toBe('assistant');
      expect(body.messages).toHaveLength(2 * 2 + 1); // head, 2 kept turns (3 messages), the new tail
    }
    // The originals stay in history: every model step's tail and reply, before and after compactions.
    expect(steps.filter((s) => s.kind === 'model' && s.result)).toHaveLength(turns + 1);
  }, 900_000);

  it('rebuilds a cold cache after a compaction into byte-identical requests', async () => {
    const script = () =>
      longRunScript({
        turns: 8,
        replyText: (turn) => `Turn ${turn}. ${'words '.repeat(300)}`,
        outputChars: 3000,
        command: (turn) =>
          turn === 7
            ? 'while [ ! -f /workspace/release ]; do sleep 0.05; done; printf "released %03000d" 0'
            : undefined,
      });
    const run = async (sessionId: string, duringTools: () => void): Promise<string[]> => {
      h.model.setScript(script());
      const first = h.model.requests.length;
      const handle = await h.start({
        goal: 'cache test after compaction',
        sessionId,
        budget: { maxTurns: 20 },
        context: { windowTokens: 12_000, keepTurns: 1, editing: { enabled: false } },
      });
      await waitFor(async () => {
        const st = await handle.query(statusQuery);
        return st.phase === 'tools' && st.turn === 7;
      }, 'the waiting tool call of turn 7');
      expect((await handle.query(statusQuery)).context.compactions).toBeGreaterThanOrEqual(1);
      duringTools();
      execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/release']);
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      expect(result.tokens.compactions).toBeGreaterThanOrEqual(1);
      return answered(h, first).map((r) => r.rawBody);
    };
    const warm = await run('compaction-warm', () => undefined);
    const rebuildsBefore = h.cache.stats.rebuilds;
    const cold = await run('compaction-cold', () => h.cache.clear());
    expect(h.cache.stats.rebuilds).toBeGreaterThan(rebuildsBefore);
    expect(cold.length).toBe(warm.length);
    expect(cold).toEqual(warm);
    expect(warm.some((body) => body.includes(COMPACTION_REQUEST_MARKER))).toBe(true);
  });
});
