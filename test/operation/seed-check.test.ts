/**
 * A repository the hands host refuses ends the operation with the check's error, before any tool runs
 * and without a sandbox, even when the model asks for a tool at once. (The check runs before the
 * first model request: it also brings the repository's own hooks, which the first request may need.)
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sandboxResourcesOf } from '../support/bad-input';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

describe("an operation's repository check", () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
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
    expect(h.model.requests).toHaveLength(0);
  });
});
