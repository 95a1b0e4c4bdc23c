/**
 * Lazy stays lazy: the first model request of an operation with a repository is sent while its hands
 * host has not answered anything yet — the repository's check runs alongside it, the container comes
 * with the first tool call — and a repository the hands host refuses still ends the operation with
 * the check's error before any tool runs.
 */
import * as path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { operationResult } from '../../client/operation-result';
import { containerNameOf } from '../../common/sandbox-names';
import { PROJECT_ROOT } from '../../platform/paths';
import { createHandsWorker } from '../../workers/workers';
import { sandboxResourcesOf } from '../support/bad-input';
import { testPlatform } from '../support/env';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';

const CALCULATOR = path.join(PROJECT_ROOT, 'examples', 'calculator');

describe('the first model request of a lazy operation', () => {
  let h: OperationHarness;
  let lateHands: Worker | undefined;
  let lateHandsRun: Promise<void> | undefined;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    if (lateHands?.getState() === 'RUNNING') lateHands.shutdown();
    await lateHandsRun;
    await h.close();
  });

  it('is sent before the hands host answers the repository check, and before any container exists', async () => {
    const workflowId = `lazy-first-${process.pid}`;
    const handsQueue = `${h.handsQueue}-late`;
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'test -f package.json && echo seeded' } }] },
      { respond: (request) => ({ text: `tool: ${request.toolResults[0]?.content.trim()}` }) },
    ]);
    const handle = await h.start(
      { goal: 'look at the project', repo: { kind: 'local', path: CALCULATOR }, handsTaskQueue: handsQueue },
      workflowId,
    );
    h.removeOnClose(workflowId);
    // Nothing polls the hands queue yet: the check cannot have run.
    await waitFor(async () => h.model.requests.length >= 1, 'the first model request');
    const history = (await handle.fetchHistory()).events ?? [];
    // The host claim (and then the check) waits on the hands queue: scheduled, never started.
    const handsCalls = history.filter((event) =>
      event.activityTaskScheduledEventAttributes?.taskQueue?.name?.startsWith(handsQueue),
    );
    expect(handsCalls.length).toBeGreaterThan(0);
    const started = new Set(
      history.map((event) => String(event.activityTaskStartedEventAttributes?.scheduledEventId ?? '')),
    );
    expect(handsCalls.filter((event) => started.has(String(event.eventId)))).toEqual([]);
    await expect(h.docker.getContainer(containerNameOf(workflowId)).inspect()).rejects.toThrow();

    const { namespace, sandboxImage } = testPlatform();
    lateHands = await createHandsWorker({
      connection: h.temporal.nativeConnection,
      namespace,
      taskQueue: handsQueue,
      docker: h.docker,
      image: sandboxImage,
    });
    lateHandsRun = lateHands.run();
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toMatch(/^tool: seeded\n/);
  });

  it("a refused repository ends the operation with the check's error, and no tool runs", async () => {
    const workflowId = `lazy-refused-${process.pid}`;
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'touch /workspace/ran' } }] },
      { text: 'done' },
    ]);
    const handle = await h.start({ goal: 'touch a file', repo: { kind: 'local', path: '/etc' } }, workflowId);
    const failure = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('OperationFailed');
    expect(cause.message).toMatch(/^InvalidSeedSource: seed source \/etc is outside the allowed roots/);
    const history = (await handle.fetchHistory()).events ?? [];
    const activities = history.map((event) => event.activityTaskScheduledEventAttributes?.activityType?.name);
    expect(activities).not.toContain('runTool');
    expect(await sandboxResourcesOf(workflowId)).toEqual([]);
  });
});
