/**
 * This release reads the step inputs the next one writes (`test/support/compact-step-workflows.ts`):
 * a model step without operationId, lane and maxTokens, and a tool call without toolCallId,
 * sessionId, timeoutMs and `checkpoint.exclude`, on the real dev server, brain and hands workers,
 * Docker and the scripted Messages API. Each is what every step's history repeats, or holds
 * elsewhere (the activity id); the next release leaves them out.
 */
import { randomUUID } from 'node:crypto';
import { rebuildContextFromHistory } from '../../activities/brain/history-context';
import { fingerprintOf } from '../../activities/brain/context-assembly';
import { contextKey } from '../../activities/brain/context-cache';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../../common/hands';
import { DEFAULT_MAX_TOKENS_PER_TURN } from '../../common/model-step';
import { sandboxResourcesOf } from '../support/bad-input';
import type { CompactStepsResult } from '../support/compact-step-workflows';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

const COMMAND =
  'mkdir -p node_modules/dep .venv && echo dep > node_modules/dep/index.js && echo v > .venv/x && echo kept > kept.txt && ' +
  "tr '\\0' ' ' < /proc/$PPID/cmdline";

describe('compact step inputs', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness([{ toolCalls: [{ name: 'bash', input: { command: COMMAND } }] }, { text: 'done' }]);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("fill in the operation's id, lane and max_tokens, the tool call's id, session, budget and checkpoint excludes", async () => {
    const workflowId = `compact-${randomUUID().slice(0, 8)}`;
    h.removeOnClose(workflowId);
    const handle = await h.temporal.client.workflow.start('compactStepsOnce', {
      taskQueue: h.brainQueue,
      workflowId,
      args: [{ handsTaskQueue: h.handsQueue, system: 'You are terse.', goal: 'Make kept.txt.' }],
    });
    const result: CompactStepsResult = await handle.result();
    h.model.assertScriptFinished();

    // The brain: the requests carry the operations' default max_tokens, and the second step found the
    // first one's context under the operation's id and the main lane.
    expect(h.model.requests.map((request) => request.messagesRequest?.max_tokens)).toEqual([
      DEFAULT_MAX_TOKENS_PER_TURN,
      DEFAULT_MAX_TOKENS_PER_TURN,
    ]);
    expect(result.replies.map((reply) => reply.rebuilt)).toEqual([undefined, undefined]);
    const cached = h.cache.get(contextKey(workflowId, 'main'));
    expect(cached && fingerprintOf(cached)).toMatchObject({ messages: 4, lastReplyId: result.replies[1]!.message.id });

    // A cold brain rebuilds the same context from the history of compact inputs.
    const rebuilt = await rebuildContextFromHistory(h.temporal.client, workflowId, handle.firstExecutionRunId);
    expect(fingerprintOf(rebuilt)).toEqual(cached && fingerprintOf(cached));

    // The hands: the call ran under the id its activity id holds, with the operations' default time
    // budget (the command printed its wrapper's command line: run directory, output file, timeout in
    // seconds), in the sandbox of the calling workflow's id; its checkpoint left out the default
    // excludes.
    const toolUse = result.replies[0]!.message.content.find((block) => block.type === 'tool_use');
    const toolCallId = toolUse?.type === 'tool_use' ? toolUse.id : 'none';
    expect(result.tool.exitCode).toBe(0);
    expect(result.tool.content).toContain(
      ` run /var/lib/agent-journal/run/${toolCallId} /workspace/.agent/out/${toolCallId}.txt ${(DEFAULT_TOOL_TIMEOUT_MS / 1000).toFixed(3)} `,
    );
    const changed = result.tool.checkpoint && 'changed' in result.tool.checkpoint ? result.tool.checkpoint.changed : [];
    expect(changed).toContain('kept.txt');
    expect(changed?.filter((file) => /^(node_modules|\.venv)\//.test(file))).toEqual([]);
    expect(await sandboxResourcesOf(workflowId)).toEqual(
      expect.arrayContaining([`/agent-sbx-${workflowId}`, `agent-ws-${workflowId}`]),
    );
  });
});
