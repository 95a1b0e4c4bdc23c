import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { ServiceError, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { sendUntilAdmitted } from '../../client/update-admission';
import { operationResult } from '../../client/operation-result';
import { MODEL_STEP_ACTIVITY } from '../../common/model-step';
import { OperationResult, abortUpdate, statusQuery, steerUpdate } from '../../common/operation';
import { defaultPayloadConverter } from '@temporalio/common';
import { PROJECT_ROOT } from '../../platform/paths';
import { assertRequestsExtendPrefix } from '../../scripted-model/prefix';
import type { RecordedRequest } from '../../scripted-model/server';
import { testPlatform } from '../support/env';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';

const CALCULATOR = path.join(PROJECT_ROOT, 'examples', 'calculator');

function dockerExec(container: string, script: string): string {
  return execFileSync('docker', ['exec', '-u', AGENT_USER, container, 'bash', '-c', script], { encoding: 'utf8' });
}

interface Body {
  messages: Array<{ role: string; content: Array<{ type: string; id?: string; text?: string }> }>;
}
const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200);
const bodyOf = (r: RecordedRequest) => r.body as Body;

describe('the operation workflow (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('edits a file and runs a command in the container, and every request extends the previous one', async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'read_file', input: { path: 'src/math.js' } }] },
      {
        toolCalls: [
          {
            name: 'edit_file',
            input: {
              path: 'src/math.js',
              old_text: 'sum(values) / (values.length - 1)',
              new_text: 'sum(values) / values.length',
            },
          },
        ],
      },
      { toolCalls: [{ name: 'bash', input: { command: 'npm test 2>&1 | grep -E "^# (pass|fail)"' } }] },
      { respond: (request) => ({ text: `tests: ${request.toolResults[0]?.content.trim()}` }) },
    ]);
    const handle = await h.start({ goal: 'fix the failing test', repo: { kind: 'local', path: CALCULATOR } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toContain('# pass 4');
    expect(result.finalText).toContain('# fail 0');
    expect(result.turns).toBe(4);
    h.model.assertScriptFinished();

    const requests = answered(h.model.requests);
    expect(requests).toHaveLength(4);
    assertRequestsExtendPrefix(requests);
    requests
      .slice(1)
      .forEach((r, i) => expect(bodyOf(r).messages).toHaveLength(bodyOf(requests[i]).messages.length + 2));
    // Each tool call ran as the activity `tool-<tool_use_id>`.
    const toolCallIds = bodyOf(requests[3])
      .messages.filter((m) => m.role === 'assistant')
      .flatMap((m) => m.content.filter((b) => b.type === 'tool_use').map((b) => `tool-${b.id}`));
    const history = await handle.fetchHistory();
    const toolActivityIds = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a?.activityType?.name === 'runTool')
      .map((a) => a!.activityId);
    expect(toolActivityIds).toEqual(toolCallIds);
    expect(toolActivityIds).toHaveLength(3);
    // The container is removed when the operation ends; the workspace volume is kept.
    await expect(h.docker.getContainer(containerNameOf(result.sessionId)).inspect()).rejects.toThrow();
    await expect(h.docker.getVolume(result.workspaceVolume).inspect()).resolves.toBeDefined();
  });

  it('returns a strict-schema violation to the model as an error naming the field, without running it', async () => {
    h.model.setScript([
      {
        toolCalls: [{ name: 'edit_file', input: { path: 'src/math.js', old_text: 'a', new_text: 'b', oldText2: 'c' } }],
      },
      { respond: (request) => ({ text: JSON.stringify(request.toolResults[0]) }) },
    ]);
    const result = await operationResult(await h.start({ goal: 'edit something' }));
    expect(result.state).toBe('completed');
    const toolResult = JSON.parse(result.finalText) as { content: string; isError: boolean };
    expect(toolResult.isError).toBe(true);
    expect(toolResult.content).toContain('oldText2');
    expect(result.steps).toBe(2); // two model steps, no tool step
  });

  it('aborts during a long bash: ends aborted and the process is gone from the container', async () => {
    h.model.setScript([
      {
        toolCalls: [
          {
            name: 'bash',
            input: { command: 'echo started > /workspace/long.txt; sleep 600; echo finished >> /workspace/long.txt' },
          },
        ],
      },
    ]);
    const handle = await h.start({ goal: 'run something long', keepContainer: true });
    const container = containerNameOf(handle.workflowId);
    await waitFor(async () => {
      try {
        return dockerExec(container, 'pgrep -f "sleep 60[0]" || true').trim() !== '';
      } catch {
        return false;
      }
    }, 'the long command to start');
    await sendUntilAdmitted((updateId) =>
      handle.executeUpdate(abortUpdate, { args: [{ reason: 'test abort' }], updateId }),
    );
    const result = await operationResult(handle);
    expect(result.state).toBe('aborted');
    expect(result.reason).toContain('test abort');
    // The cut-off call keeps a (synthetic) answer, recorded in the result for the next operation.
    expect(result.openToolResults).toHaveLength(1);
    expect(result.openToolResults[0]).toMatchObject({ is_error: true });
    expect(String(result.openToolResults[0].content)).toContain('interrupted');
    expect(dockerExec(container, 'pgrep -f "sleep 60[0]" || echo none').trim()).toBe('none');
    expect(dockerExec(container, 'cat /workspace/long.txt').trim()).toBe('started');
  });

  /** An operation whose one tool call waits for `release`, started and in its tool batch. */
  async function startWaitingForRelease(): Promise<WorkflowHandle> {
    h.model.setScript([
      {
        toolCalls: [
          { name: 'bash', input: { command: 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released' } },
        ],
      },
      { text: 'done' },
    ]);
    const handle = await h.start({ goal: 'wait for release' });
    await waitFor(async () => (await handle.query(statusQuery)).phase === 'tools', 'the tool batch');
    return handle;
  }

  /** Lets the waiting tool call of `startWaitingForRelease` finish. */
  async function release(handle: WorkflowHandle): Promise<void> {
    await waitFor(async () => {
      try {
        dockerExec(containerNameOf(handle.workflowId), 'touch /workspace/release');
        return true;
      } catch {
        return false;
      }
    }, 'the container');
  }

  it('puts steering sent during a tool batch at the tail of the next request', async () => {
    const handle = await startWaitingForRelease();
    const accepted = await handle.executeUpdate(steerUpdate, { args: [{ text: 'please also say hello' }] });
    expect(accepted).toEqual({ accepted: true, position: 1 });
    await release(handle);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const tail = bodyOf(answered(h.model.requests).at(-1)!).messages.at(-1)!.content;
    expect(tail.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(tail[1].text).toContain('please also say hello');
  });

  it('enters steering once when its request is re-sent after the server refused a re-send of it', async () => {
    // The shape of a crash during a tool call: the server admits the steering, then refuses the
    // client's re-send of it (the workflow task is failing); the client sends again. Every attempt
    // carries the same Update id, so the server applies it once.
    const handle = await startWaitingForRelease();
    const refusal = new ServiceError('Update refused', {
      cause: Object.assign(new Error('9 FAILED_PRECONDITION: Workflow Task in failed state'), {
        code: 9,
        details: 'Unable to perform workflow execution update due to Workflow Task in failed state.',
        metadata: {},
      }),
    });
    const ids: string[] = [];
    const answer = await sendUntilAdmitted(async (updateId) => {
      ids.push(updateId);
      if (ids.length > 1) return handle.executeUpdate(steerUpdate, { args: [{ text: 'say it once' }], updateId });
      await handle.executeUpdate(steerUpdate, { args: [{ text: 'say it once' }], updateId });
      throw refusal;
    });
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(ids[0]);
    expect(answer).toEqual({ accepted: true, position: 1 });
    expect(await handle.query(statusQuery)).toMatchObject({ pendingSteering: 1 });
    await release(handle);
    expect((await operationResult(handle)).state).toBe('completed');
    const tail = bodyOf(answered(h.model.requests).at(-1)!).messages.at(-1)!.content;
    expect(tail.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(tail.filter((b) => b.text?.includes('say it once'))).toHaveLength(1);
  });

  it('replaces a sandbox killed between two tool calls, on the same workspace', async () => {
    let sessionContainer = '';
    h.model.setScript([
      { toolCalls: [{ name: 'write_file', input: { path: 'notes.txt', content: 'kept across containers\n' } }] },
      {
        respond: async () => {
          await dockerClient().getContainer(sessionContainer).kill();
          return { toolCalls: [{ name: 'read_file', input: { path: 'notes.txt' } }] };
        },
      },
      { respond: (request) => ({ text: request.toolResults[0]?.content ?? '' }) },
    ]);
    const handle = await h.start({ goal: 'survive a dead container' });
    sessionContainer = containerNameOf(handle.workflowId);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toContain('kept across containers');
    expect(result.finalText).toMatch(/sandbox restarted/i);
  });

  it('rebuilds a cold context cache from history into a byte-identical request', async () => {
    const script = () => [
      { toolCalls: [{ name: 'bash', input: { command: 'echo one' } }] },
      {
        toolCalls: [
          { name: 'bash', input: { command: 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo two' } },
        ],
      },
      { toolCalls: [{ name: 'bash', input: { command: 'echo three' } }] },
      { text: 'finished' },
    ];
    /** Runs the script; while the second tool call waits, `duringTools` runs (e.g. dropping the cache). */
    const run = async (sessionId: string, duringTools: () => void): Promise<string[]> => {
      h.model.setScript(script());
      const first = h.model.requests.length;
      const handle = await h.start({ goal: 'cache test', sessionId });
      await waitFor(async () => {
        const st = await handle.query(statusQuery);
        return st.phase === 'tools' && st.turn === 2;
      }, 'the second tool call');
      duringTools();
      dockerExec(containerNameOf(sessionId), 'touch /workspace/release');
      expect((await operationResult(handle)).state).toBe('completed');
      return answered(h.model.requests.slice(first)).map((r) => JSON.stringify(r.body));
    };
    const warm = await run('cache-warm', () => undefined);
    const rebuildsBefore = h.cache.stats.rebuilds;
    const cold = await run('cache-cold', () => h.cache.clear());
    expect(h.cache.stats.rebuilds).toBe(rebuildsBefore + 1);
    expect(cold).toHaveLength(4);
    expect(cold).toEqual(warm);
  });

  it('keeps each model step input free of earlier messages over a 30-step run', async () => {
    const turns = Array.from({ length: 29 }, (_, i) => ({
      toolCalls: [{ name: 'bash', input: { command: `echo step-${i}` } }],
    }));
    h.model.setScript([...turns, { text: 'all steps done' }]);
    const handle = await h.start({ goal: 'take thirty steps', budget: { maxTurns: 40 } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.turns).toBe(30);
    const history = await handle.fetchHistory();
    const inputs = (history.events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a?.activityType?.name === MODEL_STEP_ACTIVITY)
      .map((a) =>
        defaultPayloadConverter.fromPayload<{ tail: unknown[]; base: { messages: number } }>(a!.input!.payloads![0]),
      );
    expect(inputs).toHaveLength(30);
    inputs.forEach((input, i) => {
      expect(input.base.messages).toBe(2 * i);
      expect(input.tail).toHaveLength(1); // one tool result (or the goal): never earlier messages
    });
    const sizes = inputs.map((input) => JSON.stringify(input).length);
    expect(Math.max(...sizes.slice(1))).toBeLessThan(2 * Math.min(...sizes.slice(1)));
  });

  it('fails on bad input from `temporal workflow start` with a message naming the field', async () => {
    const { temporalCli, temporalAddress, namespace } = testPlatform();
    const workflowId = `bad-input-${Date.now()}`;
    execFileSync(temporalCli, [
      'workflow',
      'start',
      '--address',
      temporalAddress,
      '--namespace',
      namespace,
      '--type',
      'operation',
      '--task-queue',
      h.brainQueue,
      '--workflow-id',
      workflowId,
      '--input',
      JSON.stringify({ goal: 'x', budget: { maxTurns: 'many' } }),
    ]);
    const error = await h.temporal.client.workflow
      .getHandle(workflowId)
      .result()
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause;
    expect(cause?.message).toContain('budget.maxTurns');
    expect((cause as { type?: string }).type).toBe('InvalidOperationInput');
  });

  it('counts the tokens of a model attempt that broke mid-stream and was re-requested', async () => {
    h.model.setScript([
      { text: 'a first answer that breaks off', fault: { type: 'stream_error', afterBlocks: 1 } },
      { text: 'second attempt' },
    ]);
    const first = h.model.requests.length;
    const result = await operationResult(await h.start({ goal: 'survive a broken stream' }));
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('second attempt');
    const served = h.model.requests.slice(first).filter((r) => r.status === 200 && r.usage && !r.error);
    const servedTokens = served.reduce(
      (sum, r) =>
        sum +
        r.usage!.input_tokens +
        r.usage!.cache_creation_input_tokens +
        r.usage!.cache_read_input_tokens +
        r.usage!.output_tokens,
      0,
    );
    const counted = result.usage.input + result.usage.cacheWrite + result.usage.cacheRead + result.usage.output;
    expect(h.model.requests.length - first).toBe(2);
    expect(counted).toBeGreaterThan(servedTokens); // the lost attempt's prompt tokens are in the ledger too
  });

  it('ends failed with an honest reason when the turn budget runs out', async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
      { toolCalls: [{ name: 'bash', input: { command: 'true' } }] },
    ]);
    const handle = await h.start({ goal: 'loop', budget: { maxTurns: 2 } });
    const result: OperationResult = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.reason).toBe('budget: turns (2 used)');
  });
});
