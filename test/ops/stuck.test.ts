/**
 * Stuck detection end to end (real Temporal, Docker, scripted model): an activity on a queue nobody
 * polls becomes `stuck` within the configured limit and recovers when a worker starts; the three
 * loop patterns get a note first and then end the operation `stuck: …`.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { operationResult } from '../../client/operation-result';
import { statusQuery } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { createHandsWorker } from '../../workers/workers';
import { isCompactionRequest } from '../support/context-scripts';
import { testPlatform } from '../support/env';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';

const NOTE = '[harness] You seem to be stuck';

/** Every value `AgentStatus` took, in history order. */
async function agentStatusHistory(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const payload = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.AgentStatus;
    return payload ? [String(defaultPayloadConverter.fromPayload(payload))] : [];
  });
}

async function agentStatusNow(handle: WorkflowHandle): Promise<string | undefined> {
  const description = await handle.describe();
  return description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status);
}

describe('stuck detection (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('reports a tool queue nobody polls as stuck within the limit, and recovers when a worker starts', async () => {
    const lonelyQueue = `hands-nobody-${randomUUID().slice(0, 8)}`;
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'echo hello from the late worker' } }] },
      { respond: (request) => ({ text: `got: ${request.toolResults[0]?.content.trim()}` }) },
    ]);
    const handle = await h.start({
      goal: 'say hello',
      handsTaskQueue: lonelyQueue,
      stuck: { notStartedMs: 1_000, recheckMs: 500 },
    });
    const stuck = await waitFor(async () => {
      const status = await handle.query(statusQuery);
      return status.stuck;
    }, 'the operation to report itself stuck');
    expect(stuck.reason).toBe(`stuck: no worker polls ${lonelyQueue}`);
    expect(stuck.waitingOn).toBe('a hands host');
    expect(await agentStatusNow(handle)).toBe('stuck');

    const { namespace, sandboxImage } = testPlatform();
    const late: Worker = await createHandsWorker({
      connection: h.temporal.nativeConnection,
      namespace,
      taskQueue: lonelyQueue,
      docker: h.docker,
      image: sandboxImage,
    });
    const running = late.run();
    try {
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      expect(result.finalText).toContain('got: hello from the late worker');
      expect(result.details).toContain('**completed**');
    } finally {
      late.shutdown();
      await running;
    }
    const statuses = await agentStatusHistory(handle);
    const firstStuck = statuses.indexOf('stuck');
    expect(firstStuck).toBeGreaterThan(0);
    expect(statuses.slice(firstStuck + 1)).toContain('running');
    expect(statuses[statuses.length - 1]).toBe('completed');
    expect(await agentStatusNow(handle)).toBe('completed');
    // The closed run's details stay readable without a worker: in its memo.
    expect(String((await handle.describe()).memo?.details)).toContain('**completed**');
  });

  it('reports a model step retrying past the attempts with its last failure, and clears when a retry succeeds', async () => {
    h.model.setScript([
      { fault: { type: 'server_error', status: 503 } },
      { fault: { type: 'server_error', status: 503 } },
      { text: 'third time lucky' },
    ]);
    const handle = await h.start({
      goal: 'ride out a flaky API',
      stuck: { notStartedMs: 1_000, recheckMs: 500, retryAttempts: 1 },
    });
    const stuck = await waitFor(async () => (await handle.query(statusQuery)).stuck, 'the retrying step to be stuck');
    expect(stuck.reason).toMatch(/^stuck: model turn 1 retrying \(attempt [23]\): /);
    expect(stuck.lastFailure).toBeDefined();
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('third time lucky');
    const statuses = await agentStatusHistory(handle);
    expect(statuses.indexOf('stuck')).toBeGreaterThan(0);
    expect(statuses.slice(statuses.indexOf('stuck') + 1)).toEqual(expect.arrayContaining(['running', 'completed']));
  });

  it('watches a compaction too: a summary call retrying past the attempts is stuck, and clears when it succeeds', async () => {
    const bash = (command: string): ScriptedTurn => ({ toolCalls: [{ name: 'bash', input: { command } }] });
    let summaryCalls = 0;
    let turns = 0;
    let release = (): void => undefined;
    const stuckSeen = new Promise<void>((resolve) => (release = resolve));
    const script: ScriptedTurn[] = [
      bash(`printf 'one %03000d\\n' 0`),
      bash(`printf 'two %03000d\\n' 0`),
      bash(`printf 'three %03000d\\n' 0`),
      { text: 'compacted and done' },
    ];
    h.model.setScript((request) => {
      if (isCompactionRequest(request)) {
        summaryCalls += 1;
        // The third attempt answers once the test has seen the stuck state: it lasts while that
        // attempt runs, which a delay would make a race on a loaded machine.
        return summaryCalls <= 2
          ? { fault: { type: 'server_error', status: 503 } }
          : { respond: () => stuckSeen.then(() => ({ text: 'the summary' })) };
      }
      return script[turns++];
    });
    const handle = await h.start({
      goal: 'compact through a flaky API',
      context: { windowTokens: 5_000, keepTurns: 1, editing: { enabled: false } },
      stuck: { notStartedMs: 1_000, recheckMs: 500, retryAttempts: 1 },
    });
    const whereItStands = async (): Promise<string> => {
      const status = await handle.query(statusQuery);
      const pending = (await handle.describe()).raw.pendingActivities?.map(
        (a) => `${a.activityId} (${a.activityType?.name}) attempt ${a.attempt} state ${a.state}`,
      );
      const events = (await handle.fetchHistory()).events ?? [];
      const kinds = new Map<string, number>();
      for (const e of events) kinds.set(String(e.eventType), (kinds.get(String(e.eventType)) ?? 0) + 1);
      return (
        `${summaryCalls} summary call(s), ${turns} turn(s) answered; pending ${JSON.stringify(pending)}; ` +
        `events ${JSON.stringify(Object.fromEntries(kinds))}; status ${JSON.stringify(status).slice(0, 1500)}`
      );
    };
    const stuck = await waitFor(async () => {
      const status = await handle.query(statusQuery);
      if (status.stuck) return status.stuck;
      // A run that ended, or went past its compaction, without it will never be: say where it stood.
      if ((await handle.describe()).status.name !== 'RUNNING' || turns > 3)
        throw new Error(`never stuck: ${await whereItStands()}`);
      return undefined;
    }, 'the retrying compaction to be stuck')
      .catch(async (err: Error) => {
        const where = await whereItStands().catch((e: Error) => e.message);
        // Its later model calls would reach the next test's script.
        await handle.terminate('the test failed').catch(() => undefined);
        throw new Error(`${err.message}: ${where}`);
      })
      .finally(release);
    expect(stuck.reason).toMatch(/^stuck: compaction 1 retrying \(attempt [23]\): /);
    expect(stuck.waitingOn).toBe('compaction 1');
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.tokens.compactions).toBeGreaterThanOrEqual(1);
    expect((await handle.query(statusQuery)).stuck).toBeUndefined();
  });

  it('looks at a step begun during a long, calm wait within its own limit, not when that wait ends', async () => {
    const probesDone = async (handle: WorkflowHandle): Promise<number> => {
      const events = (await handle.fetchHistory()).events ?? [];
      const probes = new Set(
        events
          .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'probePendingActivity')
          .map((e) => String(e.eventId)),
      );
      return events.filter((e) => probes.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId))).length;
    };
    const started: { handle?: WorkflowHandle } = {};
    // The first step lasts until the watchdog looked at it four times: its next look is far off.
    h.model.setScript([
      {
        respond: async () => {
          await waitFor(
            async () => started.handle && (await probesDone(started.handle)) >= 4,
            'four looks at the first step',
          );
          return { toolCalls: [{ name: 'bash', input: { command: 'echo thought' } }] };
        },
      },
      { fault: { type: 'server_error', status: 503 } },
      { fault: { type: 'server_error', status: 503 } },
      { text: 'done' },
    ]);
    const handle = await h.start({
      goal: 'think long, then ride out a flaky API',
      stuck: { notStartedMs: 1_000, recheckMs: 500, retryAttempts: 1 },
    });
    started.handle = handle;
    const stuck = await waitFor(async () => (await handle.query(statusQuery)).stuck, 'the retrying step to be stuck');
    expect(stuck.reason).toMatch(/^stuck: model turn 2 retrying \(attempt [23]\): /);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    // The long wait's timer was cancelled when the second step began: it was not slept out.
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.some((e) => e.timerCanceledEventAttributes)).toBe(true);
  });

  const noteSeen = (request: ScriptedRequest): boolean => request.lastUserText.includes(NOTE);

  /** Runs a looping script and returns the result and what the model saw. */
  async function runLoop(turn: (i: number) => ScriptedTurn, expectedNoteAt: number) {
    const seenNotes: number[] = [];
    h.model.setScript((request) => {
      if (noteSeen(request)) seenNotes.push(request.turnIndex);
      return request.turnIndex < 20 ? turn(request.turnIndex) : { text: 'giving up' };
    });
    const result = await operationResult(await h.start({ goal: 'loop', budget: { maxTurns: 20 } }));
    expect(seenNotes).toEqual([expectedNoteAt]);
    expect(result.state).toBe('failed');
    expect(result.turns).toBe(expectedNoteAt + 1);
    return result;
  }

  it('repeating the same call with the same result: a note after 3, stuck after the 4th', async () => {
    const result = await runLoop(() => ({ toolCalls: [{ name: 'bash', input: { command: 'echo same' } }] }), 3);
    expect(result.reason).toBe('stuck: repeated the same call with the same result 3 times (bash: echo same)');
  });

  it('alternating between two calls: a note after 6, stuck after the 7th', async () => {
    const result = await runLoop(
      (i) => ({ toolCalls: [{ name: 'bash', input: { command: i % 2 === 0 ? 'echo ping' : 'echo pong' } }] }),
      6,
    );
    expect(result.reason).toBe('stuck: alternated between two calls 6 times (bash: echo pong / bash: echo ping)');
  });

  it('only errors for 5 turns: a note after 5, stuck after the 6th', async () => {
    const result = await runLoop(
      (i) => ({ toolCalls: [{ name: 'bash', input: { command: `echo attempt ${i}; exit 3` } }] }),
      5,
    );
    expect(result.reason).toBe('stuck: only errors for 6 turns');
  });

  it('a loop the model breaks after the note goes on normally', async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'echo same' } }] },
      { toolCalls: [{ name: 'bash', input: { command: 'echo same' } }] },
      { toolCalls: [{ name: 'bash', input: { command: 'echo same' } }] },
      {
        expect: (request) => expect(request.lastUserText).toContain(NOTE),
        toolCalls: [{ name: 'bash', input: { command: 'echo something else' } }],
      },
      { text: 'done differently' },
    ]);
    const result = await operationResult(await h.start({ goal: 'loop, then stop' }));
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('done differently');
    h.model.assertScriptFinished();
  });

  it('a cancelled run ends with AgentStatus "aborted", never left "running"', async () => {
    h.model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }] }]);
    const handle = await h.start({ goal: 'be cancelled' });
    await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'the tool to run');
    await handle.cancel();
    await handle.result().catch(() => undefined);
    expect(await agentStatusNow(handle)).toBe('aborted');
  });

  it('rejects bad stuck limits naming the field, and a rejected input is findable by AgentStatus', async () => {
    const handle = await h.start({ goal: 'x', stuck: { notStartedMs: 'soon' as unknown as number } });
    await expect(handle.result()).rejects.toThrow();
    const description = await handle.describe();
    expect(description.status.name).toBe('FAILED');
    expect(await agentStatusNow(handle)).toBe('failed');
    const history = await handle.fetchHistory();
    const failure = history.events?.find((e) => e.workflowExecutionFailedEventAttributes)
      ?.workflowExecutionFailedEventAttributes?.failure?.message;
    expect(failure).toContain('stuck.notStartedMs');
  });
});
