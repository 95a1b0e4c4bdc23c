/**
 * The `task` tool on the real Temporal server, Docker and the scripted model: a forked subagent lane
 * runs an operation whose final text arrives as the tool result, in the same workspace, with its
 * tokens in the parent's ledger; depth and count limits refuse further subagents.
 */
import { operationResult } from '../../client/operation-result';
import { subagentOperationIdOf } from '../../common/lanes';
import { totalTokens } from '../../common/model-types';
import { SUBAGENT_SYSTEM_PROMPT } from '../../common/prompts';
import type { ScriptedRequest } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { conversations, type RequestBody } from '../support/conversations';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const echoResults = { respond: (request: ScriptedRequest) => ({ text: JSON.stringify(request.toolResults) }) };
const answered = (requests: RecordedRequest[]) => requests.filter((r) => r.status === 200);
const bodyOf = (r: RecordedRequest) => r.body as RequestBody & { system: Array<{ text: string }> | string };
const servedTokens = (requests: RecordedRequest[]) =>
  requests.reduce(
    (sum, r) =>
      sum +
      (r.usage
        ? r.usage.input_tokens +
          r.usage.cache_creation_input_tokens +
          r.usage.cache_read_input_tokens +
          r.usage.output_tokens
        : 0),
    0,
  );

describe('subagents (the task tool)', () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it("runs a forked lane's operation and returns its answer as the tool result", async () => {
    s.h.model.setScript(
      conversations({
        'parent goal: survey the workspace': [
          {
            toolCalls: [
              {
                id: 'toolu_task_1',
                name: 'task',
                input: { description: 'write a marker', prompt: 'child prompt: write the marker file' },
              },
            ],
          },
          { toolCalls: [{ id: 'toolu_parent_read', name: 'read_file', input: { path: 'child.txt' } }] },
          echoResults,
        ],
        'child prompt: write the marker file': [
          { toolCalls: [{ name: 'write_file', input: { path: 'child.txt', content: 'written by the subagent\n' } }] },
          { text: 'child answer: the marker is in child.txt' },
        ],
      }),
    );
    const sessionId = s.newSession();
    const first = s.h.model.requests.length;
    const accepted = await s.submit(sessionId, 'parent goal: survey the workspace');
    const parent = await s.result(accepted.operationId);
    expect(parent.state).toBe('completed');
    s.h.model.assertScriptFinished();

    // The parent saw the child's answer as the task call's result, and the child's file.
    const requests = answered(s.h.model.requests.slice(first));
    const afterTask = requests.find((r) =>
      bodyOf(r)
        .messages.at(-1)!
        .content.some((b) => b.type === 'tool_result' && b.tool_use_id === 'toolu_task_1'),
    )!;
    const taskResult = bodyOf(afterTask).messages.at(-1)!.content[0];
    expect(taskResult).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_task_1' });
    expect(taskResult.is_error).toBeUndefined();
    expect(JSON.stringify(taskResult.content)).toContain('child answer: the marker is in child.txt');
    expect(JSON.parse(parent.finalText)[0].content).toContain('written by the subagent');

    // The child started from a fresh context: the subagent system prompt, a handoff and the prompt.
    const childFirst = bodyOf(requests.find((r) => JSON.stringify(r.body).includes('child prompt: write'))!);
    expect(JSON.stringify(childFirst.system)).toContain(SUBAGENT_SYSTEM_PROMPT.slice(-60));
    expect(childFirst.messages).toHaveLength(1);
    expect(childFirst.messages[0].content[0].text).toContain(
      `[handoff from lane main, operation ${accepted.operationId}]`,
    );
    expect(childFirst.messages[0].content[1].text).toBe('child prompt: write the marker file');

    // The child's tokens are in the parent's ledger: the parent counted every request served.
    const child = await operationResult(s.operation(subagentOperationIdOf(accepted.operationId, 'toolu_task_1')));
    expect(child).toMatchObject({ state: 'completed', lane: 'subagent:toolu_task_1' });
    expect(totalTokens(parent.usage)).toBe(servedTokens(requests));
    expect(totalTokens(parent.usage)).toBeGreaterThan(totalTokens(child.usage));

    // The session lists the forked lane and its operation (it records an operation's end in its own
    // next workflow task, after the operation's result is readable).
    const status = await waitFor(async () => {
      const now = await s.status(sessionId);
      const entry = now.operations.find((o) => o.lane === 'subagent:toolu_task_1');
      return entry && entry.state !== 'running' && entry.state !== 'queued' ? now : undefined;
    }, 'the session to record the subagent ended');
    expect(status.lanes.find((l) => l.name === 'subagent:toolu_task_1')).toMatchObject({
      forkedFrom: { lane: 'main', operationId: accepted.operationId, toolCallId: 'toolu_task_1' },
    });
    expect(status.operations.find((o) => o.lane === 'subagent:toolu_task_1')).toMatchObject({
      operationId: child ? subagentOperationIdOf(accepted.operationId, 'toolu_task_1') : '',
      state: 'completed',
      parentOperationId: accepted.operationId,
    });
  });

  it('refuses subagents beyond the depth and count limits', async () => {
    s.h.model.setScript(
      conversations({
        'limited parent': [
          {
            toolCalls: [
              { id: 'toolu_lim_1', name: 'task', input: { description: 'first', prompt: 'limited child' } },
              { id: 'toolu_lim_2', name: 'task', input: { description: 'second', prompt: 'never started' } },
            ],
          },
          echoResults,
        ],
        'limited child': [
          { toolCalls: [{ id: 'toolu_lim_3', name: 'task', input: { description: 'deeper', prompt: 'too deep' } }] },
          echoResults,
        ],
      }),
    );
    const handle = await s.h.start({ goal: 'limited parent', subagents: { maxDepth: 1, maxPerOperation: 1 } });
    const parent = await operationResult(handle);
    const [first, second] = JSON.parse(parent.finalText) as Array<{ content: string; isError: boolean }>;
    // The child's own task call was refused at depth 1; its answer says so.
    expect(first.isError).toBe(false);
    expect(first.content).toContain('subagents may nest at most 1 deep');
    expect(second).toMatchObject({ isError: true });
    expect(second.content).toContain('this operation has already started 1 subagents');
  });
});
