/**
 * A coding task's budgets for the whole run on the real Temporal server, Docker and the scripted
 * agent — tokens, cost and wall-clock time end the run with an honest reason; with
 * `budget.onExceeded: "ask"` the spent budget waits for `agent approve <task> budget-<n>` instead:
 * approving lets the next operation run, denying ends the run — and the task's own stuck detection:
 * a task waiting on a hands queue nobody polls shows `stuck` (its status, `AgentStatus`) and goes
 * back to `running` when a hands host starts polling.
 *
 * The repository already has its feature list (as an initializer would have left it), so every
 * operation of these runs is a feature's.
 */
import { sendUntilAdmitted } from '../../client/update-admission';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import Docker from 'dockerode';
import { decideToolCall } from '../../client/approvals';
import { taskStatusQuery } from '../../common/coding-task';
import { abortUpdate } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { createHandsHostWorkers } from '../../workers/workers';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { makeInitializedTextkitRemote, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

const agentStatus = async (handle: WorkflowHandle) =>
  (await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.status);

describe("a coding task's budgets and stuck detection", () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness({}, { remote: makeInitializedTextkitRemote });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('ends the run at maxTotalTokens, with the tokens of the whole run in the reason', async () => {
    const result = await taskResult(await h.start({ verify: 'npm test', budget: { maxTotalTokens: 100 } }));
    expect(result.initializer).toBe('not needed');
    expect(result.state).toBe('completed');
    expect(result.reason).toMatch(/^budget: tokens \(\d+ of 100\)$/);
    // The operation was given what the run had left and stopped after its first turn.
    expect(result.ledger).toHaveLength(1);
    expect(result.ledger[0]).toMatchObject({ kind: 'feature', featureId: 'slug', state: 'failed', turns: 1 });
    expect(result.ledger[0]!.reason).toMatch(/^budget: tokens \(\d+ of 100\)$/);
  });

  it('ends the run at maxCostUsd', async () => {
    const result = await taskResult(await h.start({ verify: 'npm test', budget: { maxCostUsd: 0.0001 } }));
    expect(result.state).toBe('completed');
    expect(result.reason).toMatch(/^budget: cost \(\$0\.\d{4} of \$0\.0001\)$/);
    expect(result.ledger).toHaveLength(1);
    expect(result.ledger[0]!.reason).toMatch(/^budget: cost /);
  });

  it('ends the run at maxDurationMs', async () => {
    // Preparing the workspace alone takes longer than this: the run ends at its first look at the clock.
    const result = await taskResult(await h.start({ verify: 'npm test', budget: { maxDurationMs: 1 } }));
    expect(result.state).toBe('completed');
    expect(result.reason).toBe('budget: deadline (1 ms)');
    expect(result.ledger).toEqual([]);
  });

  it('asks when its budget is spent: approved, the next operation runs; denied, the run ends', async () => {
    const handle = await h.start({
      verify: 'npm test',
      budget: { maxTotalTokens: 100, onExceeded: 'ask' },
    });
    const waitingBudget = (id: string) =>
      waitFor(async () => {
        const waiting = (await handle.query(taskStatusQuery).catch(() => undefined))?.waitingApproval;
        return waiting?.toolCallId === id ? waiting : undefined;
      }, `the task's budget approval ${id}`);
    const first = await waitingBudget('budget-1');
    expect(first.summary).toMatch(/^budget exceeded: [\d.]+k? of 100 tokens; approve to allow 25 more$/);
    const status = await handle.query(taskStatusQuery);
    expect(status.state).toBe('waiting-approval');
    expect(await agentStatus(handle)).toBe('waiting-approval');
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`agent approve ${handle.workflowId} budget-1`);

    const decide = (toolCallId: string, approve: boolean, reason?: string) =>
      decideToolCall(h.temporal.client.workflow, { operationId: handle.workflowId, toolCallId, approve, reason });
    await expect(decide('budget-7', true)).rejects.toMatchObject({ type: 'UnknownToolCall' });
    expect(await decide('budget-1', true)).toEqual({ toolCallId: 'budget-1', decision: 'approved' });
    const second = await waitingBudget('budget-2');
    expect(second.budget).toMatchObject({ name: 'tokens', limit: first.budget!.used + 25 });
    // The second operation ran on the extension (its tokens are the run's now).
    expect(second.budget!.used).toBeGreaterThan(first.budget!.used);
    await decide('budget-2', false, 'enough for tonight');

    const result = await taskResult(handle);
    expect(result.state).toBe('completed');
    expect(result.reason).toMatch(
      /^budget: tokens \(\d+ of \d+\); not extended: denied by a person: enough for tonight$/,
    );
    expect(result.ledger).toHaveLength(2);
    expect(await agentStatus(handle)).toBe('completed');
  });

  it('shows stuck while it waits on a hands queue nobody polls, and running once a host polls it', async () => {
    const lonelyQueue = `task-hands-nobody-${randomUUID().slice(0, 8)}`;
    const handle = await h.start({
      verify: 'npm test',
      handsTaskQueue: lonelyQueue,
      stuck: { notStartedMs: 1_000, recheckMs: 500 },
    });
    const stuck = await waitFor(async () => (await handle.query(taskStatusQuery)).stuck, 'the task to be stuck');
    expect(stuck.reason).toBe(`stuck: no worker polls ${lonelyQueue}`);
    expect(stuck.waitingOn).toBe('a hands host');
    expect(await agentStatus(handle)).toBe('stuck');
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`**stuck**`);
    expect(metadata.currentDetails).toContain(`⚠ **stuck: no worker polls ${lonelyQueue}**`);

    const { namespace, sandboxImage } = testPlatform();
    const late = await createHandsHostWorkers({
      connection: h.temporal.nativeConnection,
      namespace,
      taskQueue: lonelyQueue,
      host: `late-host-${randomUUID().slice(0, 8)}`,
      docker: new Docker(),
      image: sandboxImage,
      tasksDir: h.tasksDir,
    });
    const running = late.map((worker) => worker.run());
    try {
      await waitFor(
        async () => (await agentStatus(handle)) === 'running' && !(await handle.query(taskStatusQuery)).stuck,
        'the task to go back to running',
      );
      // As `agent abort` sends it: the server may refuse an Update for a moment while a workflow task fails.
      await sendUntilAdmitted((updateId) =>
        handle.executeUpdate(abortUpdate, { args: [{ reason: 'seen enough' }], updateId }),
      );
      const result = await taskResult(handle);
      expect(result.state).toBe('aborted');
    } finally {
      for (const worker of late) worker.shutdown();
      await Promise.all(running);
    }
  });
});
