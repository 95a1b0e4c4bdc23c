/**
 * A hands activity whose attempt the server gave up on creates no sandbox (real server, real Docker):
 * the activity asks the server before a container is created. The tool call of a workflow stays
 * pending at attempt 1 (no worker runs its activities); `runTool` is then run as that activity at
 * attempt 2 (a stale attempt 1 would look the same to the server: not the current one), as one that
 * is no longer pending, and as attempt 1 after the workflow ended — each refused, with no container
 * left — and as the current attempt, which runs.
 */
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type Worker } from '@temporalio/worker';
import type { temporal as proto } from '@temporalio/proto';
import { createHandsActivities } from '../../activities/hands/activities';
import type { RunToolInput, ToolOutcome } from '../../common/hands';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture, readOutcome } from '../support/hands';
import { handsRunToolOnce } from '../support/hands-workflows';
import { connectTestTemporal, createTestWorker, uniqueQueue, type TestTemporal } from '../support/temporal';

describe('a stale hands attempt creates no sandbox (real server, real Docker)', () => {
  const fx = handsFixture();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  let temporal: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = uniqueQueue('stale-attempt');

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    // Workflows only: the tool call it schedules stays pending, at attempt 1, for the test to act as.
    worker = await createTestWorker(temporal, { taskQueue });
    running = worker.run();
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await temporal?.close();
    await fx.cleanup();
  });

  const containerExists = (sessionId: string) =>
    dockerClient()
      .getContainer(containerNameOf(sessionId))
      .inspect()
      .then(
        () => true,
        (err: { statusCode?: number }) => {
          if (err.statusCode === 404) return false;
          throw err;
        },
      );

  const call = (sessionId: string): RunToolInput => ({
    sessionId,
    toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
    name: 'bash',
    input: { command: 'echo ran' },
    timeoutMs: 60_000,
  });

  /** What the activities logged at WARN and above (the worker's log, where an operator sees a refusal). */
  const logged: string[] = [];
  const logger = new DefaultLogger('WARN', (entry) => logged.push(entry.message));

  /** Runs `runTool` as the given attempt of the workflow's activity. */
  const runAs =
    (workflowExecution: { workflowId: string; runId: string }, activityId: string, attempt: number) =>
    (input: RunToolInput) =>
      new MockActivityEnvironment(
        { workflowExecution, activityId, attempt, activityType: 'runTool' },
        { client: temporal.client, logger },
      ).run(hands.runTool, input);

  it('refuses a later attempt, a finished activity and a closed workflow, and runs the current attempt', async () => {
    const handle = await temporal.client.workflow.start(handsRunToolOnce, {
      taskQueue,
      workflowId: `stale-attempt-${randomUUID().slice(0, 8)}`,
      args: [call(fx.sessionId('stale-wf'))],
    });
    let pending: proto.api.workflow.v1.IPendingActivityInfo | undefined;
    for (let i = 0; !pending; i++) {
      if (i > 200) throw new Error('the workflow never scheduled its tool call');
      pending = (await handle.describe()).raw.pendingActivities?.[0];
      if (!pending) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pending.attempt).toBe(1);
    const execution = { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
    const activityId = pending.activityId!;

    const later = fx.sessionId('stale-later');
    await expect(runAs(execution, activityId, 2)(call(later))).rejects.toThrow(
      /attempt 2 of runTool .* started after the server gave up on it: attempt 1 is the current one; no sandbox is created for it/,
    );
    expect(await containerExists(later)).toBe(false);
    expect(logged).toContainEqual(expect.stringMatching(/^attempt 2 of runTool .* no sandbox is created for it$/));

    const gone = fx.sessionId('stale-gone');
    await expect(runAs(execution, 'not-pending', 1)(call(gone))).rejects.toThrow(/the activity is no longer pending/);
    expect(await containerExists(gone)).toBe(false);

    const current = fx.sessionId('stale-current');
    const outcome = readOutcome((await runAs(execution, activityId, 1)(call(current))) as ToolOutcome);
    expect(outcome).toMatchObject({ content: 'ran\n[exit code 0]', isError: false });
    expect(await containerExists(current)).toBe(true);

    await handle.terminate('the operation ended');
    const closed = fx.sessionId('stale-closed');
    await expect(runAs(execution, activityId, 1)(call(closed))).rejects.toThrow(/the workflow is terminated/);
    expect(await containerExists(closed)).toBe(false);
    // A call whose container runs asks nothing: the closed workflow's attempt still reaches it.
    expect(readOutcome((await runAs(execution, activityId, 1)(call(current))) as ToolOutcome).content).toBe(
      'ran\n[exit code 0]',
    );
  });
});
