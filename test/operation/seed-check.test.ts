/**
 * The repository check runs once the first model call has answered (the first request never waits
 * for the hands host), and a repository the hands host refuses still ends the operation with the
 * check's error, before any tool runs and without a sandbox, even when the model asks for a tool at
 * once.
 */
import * as path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { operationResult } from '../../client/operation-result';
import { PROJECT_ROOT } from '../../platform/paths';
import { sandboxResourcesOf } from '../support/bad-input';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

/** The event ids of the first model step's scheduling and of the end of the repository's check. */
async function firstStepAndCheck(handle: WorkflowHandle): Promise<{ step: number; checked: number }> {
  const history = (await handle.fetchHistory()).events ?? [];
  const scheduled = new Map<string, string>();
  let step = 0;
  let checked = 0;
  for (const event of history) {
    const id = Number(event.eventId);
    const type = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type) scheduled.set(String(id), type);
    if (type === 'modelStep' && step === 0) step = id;
    const closed =
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes;
    if (closed && scheduled.get(String(closed.scheduledEventId)) === 'checkSeedSource') checked = id;
  }
  return { step, checked };
}

describe("an operation's repository check", () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('runs once the first model call has answered: the request does not wait for it', async () => {
    h.model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'ls README.md' } }] }, { text: 'done' }]);
    const handle = await h.start({
      goal: 'look at the repository',
      repo: { kind: 'local', path: path.join(PROJECT_ROOT, 'examples', 'calculator') },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const { step, checked } = await firstStepAndCheck(handle);
    expect(step).toBeGreaterThan(0);
    expect(checked).toBeGreaterThan(step);
  });

  it("a refused repository ends the operation with the check's error, and no tool runs", async () => {
    const workflowId = `lazy-refused-${process.pid}`;
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'touch /workspace/ran' } }] },
      { text: 'done' },
    ]);
    const before = h.model.requests.length;
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
    // The first request went out before the check (only that one: nothing acted on its reply).
    expect(h.model.requests.length - before).toBeLessThanOrEqual(1);
    const { step, checked } = await firstStepAndCheck(handle);
    expect(checked).toBeGreaterThan(step);
  });
});
