/**
 * Bad Updates: steer and abort sent to operations that ended (completed, failed, aborted) or never
 * existed, through the Temporal client and through the `agent` CLI, and malformed payloads sent to a
 * running operation. Each is refused with one error that says why; an ended operation's result is
 * unchanged and a running one queues nothing and completes as if nothing had been sent.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { operationResult } from '../../client/operation-result';
import { sendUntilAdmitted } from '../../client/update-admission';
import { abortUpdate, statusQuery, steerUpdate, type OperationResult } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { agentInProcess, runCommand, useTestServerEnv } from '../support/bad-input';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';

/** Each operation's goal picks its script. */
function script(request: ScriptedRequest): ScriptedTurn | undefined {
  const first = request.body.messages[0]?.content;
  const goal = typeof first === 'string' ? first : JSON.stringify(first);
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
  if (goal.includes('complete')) return turn === 0 ? { text: 'done' } : undefined;
  if (goal.includes('fail'))
    return turn === 0 ? { toolCalls: [{ name: 'bash', input: { command: 'true' } }] } : undefined;
  if (goal.includes('abort'))
    return turn === 0 ? { toolCalls: [{ name: 'bash', input: { command: 'sleep 600' } }] } : undefined;
  if (goal.includes('keep running')) {
    if (turn === 0) {
      const wait = 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released';
      return { toolCalls: [{ name: 'bash', input: { command: wait } }] };
    }
    return turn === 1 ? { text: request.lastUserText || 'no steering' } : undefined;
  }
  return undefined;
}

type Ended = 'completed' | 'failed' | 'aborted';

describe('bad Updates', () => {
  let h: OperationHarness;
  const ended = new Map<Ended, { handle: WorkflowHandle; result: OperationResult }>();
  let running: WorkflowHandle;
  let restoreEnv: () => void = () => undefined;
  const unknownId = `no-such-operation-${process.pid}`;

  beforeAll(async () => {
    h = await startOperationHarness(script);
    restoreEnv = useTestServerEnv();
    const completed = await h.start({ goal: 'complete at once' });
    ended.set('completed', { handle: completed, result: await operationResult(completed) });
    const failed = await h.start({ goal: 'fail on the turn budget', budget: { maxTurns: 1 } });
    ended.set('failed', { handle: failed, result: await operationResult(failed) });
    const aborted = await h.start({ goal: 'abort me' });
    await waitFor(async () => (await aborted.query(statusQuery)).phase === 'tools', 'the abort case to run its tool');
    // As every client of the harness sends it: the server refuses an Update for a moment while the
    // workflow's task is failing (a busy worker let it time out), and the same id is sent again.
    await sendUntilAdmitted((updateId) =>
      aborted.executeUpdate(abortUpdate, { args: [{ reason: 'the test' }], updateId }),
    );
    ended.set('aborted', { handle: aborted, result: await operationResult(aborted) });
    running = await h.start({ goal: 'keep running until released' });
    await waitFor(async () => (await running.query(statusQuery)).phase === 'tools', 'the running case to run its tool');
  });
  afterAll(async () => {
    restoreEnv();
    await h?.close();
  });

  const ENDED: Ended[] = ['completed', 'failed', 'aborted'];

  it('the ended operations ended as planned', () => {
    expect(ended.get('completed')!.result.state).toBe('completed');
    expect(ended.get('failed')!.result).toMatchObject({ state: 'failed', reason: 'budget: turns (1 used)' });
    expect(ended.get('aborted')!.result).toMatchObject({ state: 'aborted', reason: 'aborted: the test' });
  });

  describe.each(ENDED)('a %s operation', (state) => {
    it.each([
      ['steer', () => ended.get(state)!.handle.executeUpdate(steerUpdate, { args: [{ text: 'also this' }] })],
      ['abort', () => ended.get(state)!.handle.executeUpdate(abortUpdate, { args: [{ reason: 'again' }] })],
    ] as const)('refuses %s (Temporal client) and keeps its result', async (_update, send) => {
      const refused = await send().catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(WorkflowNotFoundError);
      expect((refused as Error).message).toBe('workflow execution already completed');
      expect(await operationResult(ended.get(state)!.handle)).toEqual(ended.get(state)!.result);
    });
  });

  it.each([
    ['steer', 'completed', ['steer', '{id}', 'also this'], 'it takes no more steering'],
    ['abort', 'failed', ['abort', '{id}'], 'there is nothing to abort'],
    ['steer', 'aborted', ['steer', '{id}', 'also this'], 'it takes no more steering'],
  ] as const)('agent %s on a %s operation says it has ended', async (_cmd, state, argv, what) => {
    const id = ended.get(state)!.handle.workflowId;
    const outcome = await agentInProcess(argv.map((a) => a.replace('{id}', id)));
    expect(outcome).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: operation ${id} has already ended (${state}): ${what}`,
    });
  });

  it.each([
    [
      'steer (Temporal client)',
      () => h.temporal.client.workflow.getHandle(unknownId).executeUpdate(steerUpdate, { args: [{ text: 'x' }] }),
    ],
    [
      'abort (Temporal client)',
      () => h.temporal.client.workflow.getHandle(unknownId).executeUpdate(abortUpdate, { args: [{}] }),
    ],
  ] as const)('an unknown operation refuses %s', async (_what, send) => {
    const refused = await send().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WorkflowNotFoundError);
    expect((refused as Error).message).toContain(`workflow not found for ID: ${unknownId}`);
  });

  it.each([
    ['steer', ['steer', unknownId, 'x']],
    ['abort', ['abort', unknownId]],
    ['status', ['status', unknownId]],
    ['diff', ['diff', unknownId]],
  ] as const)('agent %s on an unknown operation names it', async (_cmd, argv) => {
    expect(await agentInProcess([...argv])).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: no operation with id ${unknownId}`,
    });
  });

  it.each([
    [
      'steer with empty text',
      () => running.executeUpdate(steerUpdate, { args: [{ text: '' }] }),
      'text: must be a non-empty string',
    ],
    [
      'steer with blank text',
      () => running.executeUpdate(steerUpdate, { args: [{ text: ' \n ' }] }),
      'text: must be a non-empty string',
    ],
    [
      'steer with text of the wrong type',
      // A payload as another client could send it: not what the Update's type allows.
      () => running.executeUpdate(steerUpdate, { args: [{ text: 42 } as unknown as { text: string }] }),
      'text: must be a non-empty string',
    ],
    [
      'steer without a payload',
      () => running.executeUpdate(steerUpdate, { args: [undefined as unknown as { text: string }] }),
      'text: must be a non-empty string',
    ],
    [
      'steer with text over 256 KiB',
      () => running.executeUpdate(steerUpdate, { args: [{ text: 's'.repeat(300 * 1024) }] }),
      'text: must be at most 262144 bytes (got 307200)',
    ],
    [
      'abort with a reason of the wrong type',
      () => running.executeUpdate(abortUpdate, { args: [{ reason: ['why'] as unknown as string }] }),
      'reason: must be a string',
    ],
  ] as const)('a running operation refuses %s, naming the field, and queues nothing', async (_what, send, message) => {
    const refused = await send().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((refused as WorkflowUpdateFailedError).cause?.message).toBe(message);
    expect(await running.query(statusQuery)).toMatchObject({ state: 'running', pendingSteering: 0 });
  });

  it('the running operation then completes as if nothing had been sent', async () => {
    const released = await runCommand('docker', [
      'exec',
      '-u',
      AGENT_USER,
      containerNameOf(running.workflowId),
      'touch',
      '/workspace/release',
    ]);
    expect({ code: released.code, stderr: released.stderr }).toEqual({ code: 0, stderr: '' });
    const result = await operationResult(running);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('no steering'); // no steering reached the context
  });
});
