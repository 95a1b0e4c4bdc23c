/**
 * Approvals on the real Temporal server, Docker and the scripted model: `ask` calls wait durably
 * (status, search attribute, memo, current details) for `approve`; a denial — by a person, by the
 * policy or by the timeout — is the tool result the model sees and the call never runs; bad
 * decisions are refused by name; a wait survives a worker killed with SIGKILL; a session's
 * defaults apply to its operations.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { operationResult } from '../../client/operation-result';
import { decideToolCall } from '../../client/approvals';
import { OPERATION_WORKFLOW_TYPE, statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import type { ScriptedRequest } from '../../scripted-model/script';
import { startScriptedModelServer } from '../../scripted-model/server';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';
import { startWorkerProcess } from '../support/worker-process';
import { WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { approveUpdate } from '../../common/approvals';

const decide = (handle: WorkflowHandle, toolCallId: string, approve: boolean, reason?: string) =>
  decideToolCall(handle.client, { operationId: handle.workflowId, toolCallId, approve, reason });
const waitingCall = (handle: WorkflowHandle) =>
  waitFor(
    async () => (await handle.query(statusQuery).catch(() => undefined))?.waitingApproval,
    'a call to wait for approval',
  );
const fileInSandbox = (sessionId: string, file: string): string | undefined => {
  try {
    return execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'cat', `/workspace/${file}`], {
      encoding: 'utf8',
    });
  } catch {
    return undefined;
  }
};
/** The last turn answers with the tool result it received, so the test can read what the model saw. */
const echoResult = { respond: (request: ScriptedRequest) => ({ text: JSON.stringify(request.toolResults) }) };

describe('approvals', () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it('waits for approval in state waiting-approval, then runs the call once approved', async () => {
    s.h.model.setScript([
      {
        toolCalls: [
          {
            id: 'toolu_ap_push',
            name: 'bash',
            input: { command: 'echo git push simulated > /workspace/pushed.txt; cat /workspace/pushed.txt' },
          },
        ],
      },
      echoResult,
    ]);
    const handle = await s.h.start({ goal: 'push it', approvals: { 'bash:/git push/': 'ask', write_file: 'auto' } });
    const waiting = await waitingCall(handle);
    expect(waiting).toMatchObject({ toolCallId: 'toolu_ap_push', tool: 'bash', rule: 'bash:/git push/' });
    expect(waiting.summary).toContain('bash: echo git push simulated');
    expect((await handle.query(statusQuery)).state).toBe('waiting-approval');
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status)).toBe('waiting-approval');
    expect(description.memo?.approval).toMatchObject({ toolCallId: 'toolu_ap_push', state: 'waiting' });
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain('**waiting for approval:** `bash: echo git push simulated');
    expect(metadata.currentDetails).toContain(`agent approve ${handle.workflowId} toolu_ap_push`);
    // Nothing ran yet.
    expect(fileInSandbox(handle.workflowId, 'pushed.txt')).toBeUndefined();

    expect(await decide(handle, 'toolu_ap_push', true)).toEqual({ toolCallId: 'toolu_ap_push', decision: 'approved' });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(JSON.parse(result.finalText)).toEqual([
      expect.objectContaining({
        toolCallId: 'toolu_ap_push',
        content: 'git push simulated\n[exit code 0]',
        isError: false,
      }),
    ]);
    const after = await handle.describe();
    expect(after.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status)).toBe('completed');
    expect(after.memo?.approval).toMatchObject({ toolCallId: 'toolu_ap_push', state: 'approved', by: 'person' });
  });

  it('sends a denial to the model as the tool result, and never runs the call', async () => {
    s.h.model.setScript([
      { toolCalls: [{ id: 'toolu_ap_deny', name: 'bash', input: { command: 'touch /workspace/should-not-exist' } }] },
      echoResult,
    ]);
    const handle = await s.h.start({ goal: 'deny me', approvals: { bash: 'ask' }, eagerSandbox: true });
    await waitingCall(handle);
    expect(await decide(handle, 'toolu_ap_deny', false, 'not on a Friday')).toMatchObject({ decision: 'denied' });
    const result = await operationResult(handle);
    const [seen] = JSON.parse(result.finalText) as Array<{ content: string; isError: boolean }>;
    expect(seen.isError).toBe(true);
    expect(seen.content).toContain('denied by a person: not on a Friday');
    expect(seen.content).toContain('The call was not run');
    expect(fileInSandbox(handle.workflowId, 'should-not-exist')).toBeUndefined();
  });

  it('denies by policy without asking, and by the timeout when nobody decides', async () => {
    s.h.model.setScript([
      {
        toolCalls: [
          { id: 'toolu_ap_rm', name: 'bash', input: { command: 'rm -rf /workspace/src' } },
          { id: 'toolu_ap_slow', name: 'write_file', input: { path: 'late.txt', content: 'late' } },
        ],
      },
      echoResult,
    ]);
    const handle = await s.h.start({
      goal: 'policies',
      approvals: { 'bash:/rm -rf/': 'deny', bash: 'auto', '*': 'ask' },
      approvalTimeoutMs: 1_000,
    });
    const result = await operationResult(handle);
    const [rm, slow] = JSON.parse(result.finalText) as Array<{ content: string; isError: boolean }>;
    expect(rm.isError).toBe(true);
    expect(rm.content).toContain(`the operation's approval policy refuses this call (rule "bash:/rm -rf/")`);
    expect(slow.isError).toBe(true);
    expect(slow.content).toContain('denied (the approval timed out): nobody decided within 1 s');
    expect((await handle.describe()).memo?.approval).toMatchObject({
      toolCallId: 'toolu_ap_slow',
      state: 'denied',
      by: 'timeout',
    });
  });

  it('refuses decisions for unknown calls, calls not waiting, decided calls and ended operations, by name', async () => {
    s.h.model.setScript([
      {
        toolCalls: [
          { id: 'toolu_ap_auto', name: 'bash', input: { command: 'echo auto' } },
          { id: 'toolu_ap_ask', name: 'bash', input: { command: 'echo git push' } },
        ],
      },
      { text: 'done' },
    ]);
    const handle = await s.h.start({ goal: 'bad decisions', approvals: { 'bash:/git push/': 'ask' } });
    await waitingCall(handle);
    await expect(decide(handle, 'toolu_nope', true)).rejects.toMatchObject({
      type: 'UnknownToolCall',
      message: expect.stringContaining('this operation has no tool call toolu_nope (waiting now: toolu_ap_ask'),
    });
    await expect(decide(handle, 'toolu_ap_auto', true)).rejects.toMatchObject({ type: 'ApprovalNotWaiting' });
    await expect(decide(handle, '', true)).rejects.toMatchObject({
      type: 'InvalidApproval',
      message: 'toolCallId: must be a non-empty string',
    });
    await decide(handle, 'toolu_ap_ask', true);
    await expect(decide(handle, 'toolu_ap_ask', false)).rejects.toMatchObject({
      type: 'ApprovalAlreadyDecided',
      message: 'tool call toolu_ap_ask was already approved',
    });
    expect((await operationResult(handle)).state).toBe('completed');
    await expect(decide(handle, 'toolu_ap_ask', true)).rejects.toMatchObject({
      type: 'OperationEnded',
      message: `operation ${handle.workflowId} has already ended (completed); nothing waits for approval`,
    });
    await expect(
      decideToolCall(handle.client, { operationId: 'no-such-operation', toolCallId: 'x', approve: true }),
    ).rejects.toMatchObject({ type: 'UnknownOperation' });
  });

  it('keeps a decision for a call of the batch that has not asked yet until it asks', async () => {
    s.h.model.setScript([
      {
        toolCalls: [
          { id: 'toolu_ap_first', name: 'bash', input: { command: 'echo git push first' } },
          { id: 'toolu_ap_second', name: 'bash', input: { command: 'echo git push second' } },
        ],
      },
      echoResult,
    ]);
    const handle = await s.h.start({ goal: 'decide ahead', approvals: { 'bash:/git push/': 'ask' } });
    expect((await waitingCall(handle)).toolCallId).toBe('toolu_ap_first');
    // Accepted while the first call waits; answered once the second asks.
    const early = await handle.startUpdate(approveUpdate, {
      args: [{ toolCallId: 'toolu_ap_second', approve: true }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    await expect(decide(handle, 'toolu_ap_second', false)).rejects.toMatchObject({ type: 'ApprovalAlreadyDecided' });
    await decide(handle, 'toolu_ap_first', true);
    expect(await early.result()).toEqual({ toolCallId: 'toolu_ap_second', decision: 'approved' });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(JSON.parse(result.finalText)).toEqual([
      expect.objectContaining({ toolCallId: 'toolu_ap_first', content: 'git push first\n[exit code 0]' }),
      expect.objectContaining({ toolCallId: 'toolu_ap_second', content: 'git push second\n[exit code 0]' }),
    ]);
  });

  it("applies a session's approval defaults to its operations", async () => {
    s.h.model.setScript([
      { toolCalls: [{ id: 'toolu_ap_sess', name: 'bash', input: { command: 'echo hi' } }] },
      echoResult,
    ]);
    const sessionId = s.newSession();
    const accepted = await s.submit(sessionId, 'session approvals', { defaults: { approvals: { bash: 'ask' } } });
    const handle = s.operation(accepted.operationId);
    await waitingCall(handle);
    await decide(handle, 'toolu_ap_sess', true);
    expect((await s.result(accepted.operationId)).state).toBe('completed');
  });
});

describe('an approval survives a worker killed with SIGKILL', () => {
  it('keeps waiting across the crash and completes once approved on a new worker', async () => {
    const { connectTestTemporal } = await import('../support/temporal');
    const temporal = await connectTestTemporal();
    const model = await startScriptedModelServer({
      script: [
        {
          toolCalls: [
            {
              id: 'toolu_kill_ask',
              name: 'bash',
              input: { command: 'echo approved-run >> /workspace/runs.log; cat /workspace/runs.log' },
            },
          ],
        },
        echoResult,
      ],
    });
    const id = `approval-kill-${randomUUID().slice(0, 8)}`;
    const queues = { brainQueue: `${id}-brain`, handsQueue: `${id}-hands`, modelUrl: model.url };
    let worker = startWorkerProcess(queues);
    try {
      const handle = await temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: queues.brainQueue,
        workflowId: id,
        args: [{ goal: 'ask across a crash', approvals: { bash: 'ask' }, handsTaskQueue: queues.handsQueue }],
      });
      await waitingCall(handle);
      await worker.kill();
      worker = startWorkerProcess(queues);
      // The new worker rebuilds the wait from history: same call waiting, same deadline.
      const again = await waitingCall(handle);
      expect(again.toolCallId).toBe('toolu_kill_ask');
      await decide(handle, 'toolu_kill_ask', true);
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      const [seen] = JSON.parse(result.finalText) as Array<{ content: string }>;
      expect(seen.content).toBe('approved-run\n[exit code 0]');
    } finally {
      await worker.stop();
      await model.stop();
      await removeSandboxes([id]);
      await temporal.close();
    }
  });
});
