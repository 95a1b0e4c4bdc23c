/**
 * Cancelling a running tool call through Temporal leaves nothing running in the sandbox; an attempt
 * the server gives up (heartbeat timeout) or a worker shutdown leaves the command running, and the
 * next attempt returns its result.
 */
import { randomUUID } from 'node:crypto';
import { ActivityCancellationDetails, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createHandsActivities } from '../../activities/hands/activities';
import { parseJournal } from '../../activities/hands/journal';
import { recordsOf } from '../../activities/hands/journal-store';
import type { ToolOutcome } from '../../common/hands';
import { handsFixture, readOutcome } from '../support/hands';
import { connectTestTemporal, createTestWorker, uniqueQueue, type TestTemporal } from '../support/temporal';
import { handsRunToolOnce } from '../support/hands-workflows';

describe('runTool cancellation through Temporal (real Docker, real server)', () => {
  const fx = handsFixture();
  let temporal: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueQueue('hands-cancel');

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    worker = await createTestWorker(temporal, {
      taskQueue,
      activities: createHandsActivities({ sandboxes: fx.sandboxes, heartbeatIntervalMs: 200 }),
    });
    running = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await temporal?.close();
    await fx.cleanup();
  });

  it('kills the process group, journals the cancellation and reports the activity cancelled', async () => {
    const sessionId = fx.sessionId('cancel');
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    const handle = await temporal.client.workflow.start(handsRunToolOnce, {
      taskQueue,
      workflowId: `hands-cancel-${toolCallId}`,
      args: [
        {
          sessionId,
          toolCallId,
          name: 'bash',
          input: { command: 'echo started; sleep 300 & sleep 301; echo never' },
          timeoutMs: 600_000,
        },
      ],
    });

    const seen = async () =>
      (await fx.sh(sessionId, 'ps -eo args= | grep -cE "^sleep 30[01]$" || true').catch(() => '0')).trim();
    for (let i = 0; (await seen()) !== '2'; i++) {
      if (i > 300) throw new Error('the command never started');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await handle.cancel();
    expect(await handle.result()).toBe('cancelled');

    expect(await seen()).toBe('0');
    const journal = parseJournal(await fx.sh(sessionId, `cat ${recordsOf(toolCallId).journalPath}`));
    const finished = journal!.events.find((e) => e.type === 'finished');
    expect(finished).toMatchObject({ result: { cancelled: true, timedOut: false } });
    expect(await fx.sh(sessionId, `cat .agent/out/${toolCallId}.txt`)).toBe('started\n');
  });

  it.each([
    ['its heartbeat timed out', 'TIMED_OUT', { timedOut: true }],
    ['the worker shuts down', 'WORKER_SHUTDOWN', { workerShutdown: true }],
  ] as const)(
    'an attempt given up because %s leaves the command running for the next attempt',
    async (_, reason, details) => {
      const sessionId = fx.sessionId('abandon');
      const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
      const { runTool } = createHandsActivities({ sandboxes: fx.sandboxes, heartbeatIntervalMs: 200 });
      const input = {
        sessionId,
        toolCallId,
        name: 'bash',
        input: { command: 'echo waiting; while [ ! -f /workspace/release ]; do sleep 0.1; done; echo released' },
        timeoutMs: 600_000,
      };
      const waiting = async () =>
        (await fx.sh(sessionId, 'ps -eo args= | grep -c "sleep 0.1" || true').catch(() => '0')).trim() !== '0';

      const first = new MockActivityEnvironment({ attempt: 1 });
      const firstRun = first.run(runTool, input);
      for (let i = 0; !(await waiting()); i++) {
        if (i > 300) throw new Error('the command never started');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      first.cancel(reason, new ActivityCancellationDetails(details));
      await expect(firstRun).rejects.toBeInstanceOf(CancelledFailure);
      expect(await waiting()).toBe(true);

      const secondRun = new MockActivityEnvironment({ attempt: 2 }).run(runTool, input);
      await fx.sh(sessionId, 'touch /workspace/release');
      expect(readOutcome((await secondRun) as ToolOutcome)).toMatchObject({
        content: 'waiting\nreleased\n[exit code 0]',
        isError: false,
        exitCode: 0,
      });
      const journal = parseJournal(await fx.sh(sessionId, `cat ${recordsOf(toolCallId).journalPath}`));
      expect(journal!.events.filter((e) => e.type === 'started')).toHaveLength(1);
    },
  );
});
