/** The stuck verdicts and the loop patterns as pure functions (the end-to-end runs are in stuck.test.ts). */
import { stuckLimitsSchema } from '../../common/stuck';
import type { ToolUseBlock } from '../../common/model-types';
import { checkForLoop, detect, type LoopWindow } from '../../workflows/operation/loop-detector';
import { stuckReason, type WatchTarget } from '../../workflows/operation/stuck';

const limits = stuckLimitsSchema.parse({});
const tool: WatchTarget = {
  activityId: 'tool-1',
  taskQueue: 'agent-hands@host-a',
  waitingOn: 'tool bash: ls',
  host: 'host-a',
};

describe('stuck verdicts', () => {
  it('has the documented defaults', () => {
    expect(limits).toEqual({
      notStartedMs: 60_000,
      retryAttempts: 3,
      retryMs: 600_000,
      sameCallRepeats: 3,
      alternations: 6,
      errorTurns: 5,
    });
  });

  it('names the queue nobody polls, and the host when it is a host queue', () => {
    expect(stuckReason({ state: 'scheduled', attempt: 1, pollers: 0 }, tool, limits, 61_000)?.reason).toBe(
      'stuck: no worker polls agent-hands@host-a — hands host host-a lost? (runbook: replaceHandsHost)',
    );
    const shared = { ...tool, taskQueue: 'agent-hands', host: undefined };
    expect(
      stuckReason({ state: 'scheduled', attempt: 1, pollers: 2, lastPollAgoMs: 5_000 }, shared, limits, 61_000)?.reason,
    ).toBe('stuck: no worker polls agent-hands (2 workers polled it before: all busy, or gone)');
  });

  it('names the queue of a due retry no worker takes, even while the server still lists a killed poller', () => {
    const retry = {
      state: 'scheduled' as const,
      attempt: 2,
      pollers: 1,
      lastPollAgoMs: 50_000,
      lastFailure: 'timeout',
    };
    expect(stuckReason({ ...retry, scheduledAgoMs: 60_000 }, tool, limits, 1_000)?.reason).toBe(
      'stuck: no worker polls agent-hands@host-a (1 worker polled it before: all busy, or gone) — hands host host-a lost? (runbook: replaceHandsHost)',
    );
    // Not yet due long enough, or still in its backoff: a worker may yet take it.
    expect(stuckReason({ ...retry, scheduledAgoMs: 59_999 }, tool, limits, 1_000)).toBeUndefined();
    expect(stuckReason({ ...retry, scheduledAgoMs: -5_000 }, tool, limits, 1_000)).toBeUndefined();
    // Recorded before the probe said when the retry became due: the verdict it gave then.
    expect(stuckReason(retry, tool, limits, 1_000)).toBeUndefined();
  });

  it('reports retries past the attempts or the time, with the last failure', () => {
    const retrying = { state: 'scheduled' as const, attempt: 4, pollers: 1, lastFailure: 'docker is down' };
    expect(stuckReason(retrying, tool, limits, 1_000)).toEqual({
      reason: 'stuck: tool bash: ls retrying (attempt 4): docker is down',
      lastFailure: 'docker is down',
    });
    expect(stuckReason({ ...retrying, attempt: 2, state: 'started' }, tool, limits, 600_000)?.reason).toContain(
      'attempt 2',
    );
    expect(stuckReason({ ...retrying, attempt: 2, state: 'started' }, tool, limits, 1_000)).toBeUndefined();
  });

  it('is not stuck on a started first attempt or a finished activity', () => {
    expect(stuckReason({ state: 'started', attempt: 1, pollers: 1 }, tool, limits, 3_600_000)).toBeUndefined();
    expect(stuckReason({ state: 'absent', attempt: 0, pollers: 0 }, tool, limits, 3_600_000)).toBeUndefined();
  });
});

describe('loop patterns', () => {
  const call = (c: string, r = 'ok') => ({ call: c, result: r, label: c });
  const window = (calls: ReturnType<typeof call>[], errorTurns = 0): LoopWindow => ({ calls, errorTurns });

  it('finds a repeat only when call and result are both the same', () => {
    expect(detect(window([call('a'), call('a'), call('a')]), limits)?.pattern).toBe('repeat');
    expect(detect(window([call('a'), call('a', 'other'), call('a')]), limits)).toBeUndefined();
  });

  it('finds an alternation of two calls', () => {
    const ab = [call('a'), call('b'), call('a'), call('b'), call('a'), call('b')];
    expect(detect(window(ab), limits)?.pattern).toBe('alternate');
    expect(detect(window(ab.slice(1)), limits)).toBeUndefined();
  });

  it('carries two calls whatever the limits, and finds what counting every call finds', () => {
    // The rule over the whole sequence, as the detector applied it when it carried max(limits) calls.
    const reference = (seq: string[], repeats: number, alternations: number): string | undefined => {
      const lastN = seq.slice(-repeats);
      if (lastN.length === repeats && lastN.every((c) => c === lastN[0])) return `repeat ${lastN[0]}`;
      const lastM = seq.slice(-alternations);
      if (lastM.length === alternations && lastM[0] !== lastM[1] && lastM.every((c, i) => i < 2 || c === lastM[i - 2]))
        return `alternate ${lastM[0]} / ${lastM[1]}`;
      return undefined;
    };
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (const [sameCallRepeats, alternations] of [
      [3, 6],
      [4, 5],
      [2, 4],
      [1_000_000, 1_000_000],
    ]) {
      const these = { ...limits, sameCallRepeats, alternations, errorTurns: 1_000_000 };
      let window: LoopWindow | undefined;
      const seq: string[] = [];
      const patterns = new Set<string>();
      for (let i = 0; i < 400; i += 1) {
        // Runs of repeats and alternations among three commands, so that both patterns show.
        const command = i % 40 < 12 ? 'a' : i % 40 < 26 ? (i % 2 === 0 ? 'a' : 'b') : ['a', 'b', 'c'][random(3)];
        const call: ToolUseBlock = {
          type: 'tool_use',
          id: `t${i}`,
          name: 'bash',
          input: { command },
          caller: { type: 'direct' },
        };
        const verdict = checkForLoop(
          window,
          [call],
          [{ type: 'tool_result', tool_use_id: call.id, content: 'ok' }],
          these,
        );
        seq.push(command);
        window = { ...verdict.window, noted: undefined };
        expect(window.calls.length).toBeLessThanOrEqual(2);
        const found = detect(window, these);
        const expected = reference(seq, sameCallRepeats, alternations);
        const labels = found?.description.replaceAll('bash: ', '').match(/\(([^)]*)\)$/)?.[1];
        expect(found && `${found.pattern} ${labels}`).toEqual(expected);
        if (found) patterns.add(found.pattern);
      }
      expect([...patterns].sort()).toEqual(sameCallRepeats < 1_000_000 ? ['alternate', 'repeat'] : []);
    }
    // A window carried by an older run (every call up to the limits) is read the same way.
    const old = window([call('a'), call('b'), call('a'), call('b'), call('a'), call('b')]);
    const next = checkForLoop(
      old,
      [{ type: 'tool_use', id: 'n', name: 'x', input: {}, caller: { type: 'direct' } }],
      [],
      limits,
    );
    expect(next.window.calls).toHaveLength(2);
    expect(detect(old, limits)?.description).toContain('(a / b)');
  });

  it('finds turns of only errors', () => {
    expect(detect(window([call('a'), call('b')], 5), limits)?.pattern).toBe('errors');
    expect(detect(window([call('a'), call('b')], 4), limits)).toBeUndefined();
  });
});
