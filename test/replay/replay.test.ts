/**
 * Determinism: recorded histories of representative operations replay against the current workflow
 * code. A workflow change that would break running operations fails here. To change workflow code
 * compatibly use `patched()`; re-record (`npm run fixtures:record`) only for intended breaks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { testPlatform } from '../support/env';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'histories');

describe('recorded histories replay without non-determinism', () => {
  const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

  it('has fixtures to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });

  it.each(files)('%s', async (file) => {
    const history = historyFromJSON(JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')));
    expect(history.events?.length).toBeGreaterThan(0);
    // Replay under the recorded workflow id: workflows that derive ids from it (child workflows) must see the same one.
    const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || file;
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: testPlatform().workflowBundlePath } },
      history,
      workflowId,
    );
  });
});

/**
 * A worker that caches a run applies new events to it when a query reaches it through the normal
 * queue (after the run lost its sticky queue); the workflow code then runs with the clock of the
 * workflow task before. Whatever the code decides must not depend on that clock, or the history it
 * writes differs from what a replay decides (a non-determinism error no retry clears). Each history
 * replayed with every workflow task seeing its predecessor's clock checks exactly that.
 */
describe('recorded histories replay when each workflow task sees the clock of the task before it', () => {
  const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));
  /** Recorded before the stuck watchdog stopped deciding from the clock (patch `stuck-watchdog-clock-free`). */
  const clockBound = ['stuck-then-recovered.json'];

  const replayOneTaskBehind = async (file: string): Promise<void> => {
    const raw = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as {
      events: { eventType: string; eventTime?: unknown }[];
    };
    let before: unknown;
    for (const event of raw.events) {
      if (event.eventType !== 'EVENT_TYPE_WORKFLOW_TASK_STARTED') continue;
      const own = event.eventTime;
      if (before !== undefined) event.eventTime = before;
      before = own;
    }
    const history = historyFromJSON(raw);
    const workflowId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || file;
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: testPlatform().workflowBundlePath } },
      history,
      workflowId,
    );
  };

  it.each(files.filter((f) => !clockBound.includes(f)))('%s', async (file) => {
    await replayOneTaskBehind(file);
  });

  it.each(clockBound)(
    '%s (recorded with the watchdog that decided from the clock) does not: the check has teeth',
    async (file) => {
      await expect(replayOneTaskBehind(file)).rejects.toThrow(/nondeterminism/i);
    },
  );
});
