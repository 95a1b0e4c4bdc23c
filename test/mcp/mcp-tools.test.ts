/**
 * MCP tools as activities, end to end: real Temporal, the scripted Messages API over HTTP through
 * the real Anthropic SDK, and a real stdio MCP server (`test/support/mcp-test-server.ts`) started by
 * the brain worker.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { secretStore } from '../../activities/secrets/store';
import { operationResult } from '../../client/operation-result';
import type { McpCatalogue, McpServerInput } from '../../common/mcp';
import { PROJECT_ROOT } from '../../platform/paths';
import { OperationHarness, startOperationHarness } from '../support/operation-harness';

const SERVER_SCRIPT = path.join(PROJECT_ROOT, 'test', 'support', 'mcp-test-server.ts');
const TOKEN = 'mcp-test-token-5f1c9a7e';

function notesServer(notesFile: string, extra: Partial<McpServerInput> = {}): McpServerInput {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', SERVER_SCRIPT],
    env: { NOTES_FILE: notesFile, SERVICE_TOKEN: { secret: 'NOTES_TOKEN' } },
    ...extra,
  };
}

interface HistoryEvent {
  activityTaskScheduledEventAttributes?: { activityId?: string; activityType?: { name?: string } } | null;
}

async function scheduledActivities(handle: WorkflowHandle): Promise<Array<{ id: string; type: string }>> {
  const history = await handle.fetchHistory();
  return ((history.events ?? []) as HistoryEvent[])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter((a): a is NonNullable<typeof a> => !!a)
    .map((a) => ({ id: a.activityId ?? '', type: a.activityType?.name ?? '' }));
}

describe('MCP tools as activities (real Temporal, a real stdio MCP server, the scripted model)', () => {
  let h: OperationHarness;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-test-'));
    h = await startOperationHarness([], {
      brain: {
        mcp: { allowedCommands: new Set([process.execPath, 'no-such-mcp-server']) },
        secrets: secretStore(new Map([['NOTES_TOKEN', TOKEN]])),
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('offers the server tools, runs a call as the activity mcp-<tool_use_id> and returns its result to the model', async () => {
    const notes = path.join(dir, 'call.txt');
    h.model.setScript([
      {
        respond: (request) => {
          const tools = (request.body.tools ?? []) as Array<{ name: string; input_schema: { required?: string[] } }>;
          const addNote = tools.find((tool) => tool.name === 'mcp__notes__add_note');
          if (!addNote || !addNote.input_schema.required?.includes('text')) throw new Error('add_note not offered');
          if (!tools.some((tool) => tool.name === 'bash')) throw new Error('own tools missing');
          return { toolCalls: [{ name: 'mcp__notes__add_note', input: { text: 'buy milk', tags: ['home'] } }] };
        },
      },
      { toolCalls: [{ name: 'mcp__notes__search_notes', input: { query: 'milk' } }] },
      { respond: (request) => ({ text: `found: ${request.toolResults[0]?.content}` }) },
    ]);
    const handle = await h.start({ goal: 'note it', mcpServers: { notes: notesServer(notes) } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('found: buy milk #home');
    expect(fs.readFileSync(notes, 'utf8')).toBe('buy milk #home\n');
    h.model.assertScriptFinished();

    const requests = h.model.requests.filter((r) => r.status === 200);
    const firstResult = JSON.parse(requests[1].rawBody) as {
      messages: Array<{ content: Array<{ type: string; tool_use_id?: string; content?: unknown }> }>;
    };
    const answered = firstResult.messages.at(-1)!.content.find((block) => block.type === 'tool_result')!;
    expect(JSON.stringify(answered.content)).toContain('noted: buy milk');

    const activities = await scheduledActivities(handle);
    const toolUseIds = h.model.requests
      .filter((r) => r.status === 200)
      .flatMap((r) => (JSON.parse(r.rawBody) as { messages: Array<{ role: string; content: unknown }> }).messages)
      .filter((m) => m.role === 'assistant' && Array.isArray(m.content))
      .flatMap((m) => (m.content as Array<{ type: string; id?: string }>).filter((b) => b.type === 'tool_use'))
      .map((b) => b.id!);
    const mcpCalls = activities.filter((a) => a.type === 'mcpCallTool').map((a) => a.id);
    expect(mcpCalls).toEqual([...new Set(toolUseIds)].map((id) => `mcp-${id}`));
    // Listed once, before the first model step.
    expect(activities.filter((a) => a.type === 'mcpListTools')).toEqual([{ id: 'mcp-list', type: 'mcpListTools' }]);
    expect(activities[0].type).toBe('mcpListTools');

    // The listing and each call's result (with its summary) are in the history.
    const history = JSON.stringify(await handle.fetchHistory());
    const completed = (await handle.fetchHistory()).events!.flatMap(
      (e) => e.activityTaskCompletedEventAttributes?.result?.payloads ?? [],
    );
    const results = completed.map((p) => JSON.parse(Buffer.from(p.data!).toString('utf8')) as Record<string, unknown>);
    const catalogue = results.find((r) => 'tools' in r) as unknown as McpCatalogue;
    expect(catalogue.tools.find((t) => t.tool === 'search_notes')?.replayPolicy).toBe('safe');
    expect(catalogue.tools.find((t) => t.tool === 'add_note')?.replayPolicy).toBe('never');
    expect(results).toContainEqual({ content: 'noted: buy milk', isError: false, summary: 'ok · 1 block · 15 chars' });
    expect(history).not.toContain(TOKEN);
  });

  it('refuses a call whose arguments do not match the tool schema, by name, without running it', async () => {
    const notes = path.join(dir, 'refused.txt');
    h.model.setScript([
      { toolCalls: [{ name: 'mcp__notes__add_note', input: { text: 42, colour: 'red' } }] },
      { respond: (request) => ({ text: JSON.stringify(request.toolResults[0]) }) },
    ]);
    const handle = await h.start({ goal: 'note it', mcpServers: { notes: notesServer(notes) } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const toolResult = JSON.parse(result.finalText) as { content: string; isError: boolean };
    expect(toolResult.isError).toBe(true);
    expect(toolResult.content).toContain('Invalid arguments for mcp__notes__add_note');
    expect(toolResult.content).toContain('unknown field "colour"');
    expect(toolResult.content).toContain('field "text" must be a string, got a number');
    expect(fs.existsSync(notes)).toBe(false);
    expect((await scheduledActivities(handle)).filter((a) => a.type === 'mcpCallTool')).toEqual([]);
  });

  it('times out a call the server never answers, naming the timeout in the result the model reads', async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'mcp__notes__hang', input: {} }] },
      { respond: (request) => ({ text: JSON.stringify(request.toolResults[0]) }) },
    ]);
    const handle = await h.start({
      goal: 'wait',
      mcpServers: { notes: notesServer(path.join(dir, 'hang.txt'), { timeoutMs: 1_500 }) },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const toolResult = JSON.parse(result.finalText) as { content: string; isError: boolean };
    expect(toolResult.isError).toBe(true);
    expect(toolResult.content).toContain('[McpToolTimeout]');
    expect(toolResult.content).toContain('MCP server "notes" did not answer hang within 1500 ms');
  });

  it('fails the operation with a named error when a server fails to start, before any model call', async () => {
    const requestsBefore = h.model.requests.length;
    h.model.setScript([]);
    const exits = await operationResult(
      await h.start({
        goal: 'never runs',
        mcpServers: {
          notes: notesServer(path.join(dir, 'x.txt'), { args: ['--import', 'tsx', SERVER_SCRIPT, '--fail-at-start'] }),
        },
      }),
    );
    expect(exits.state).toBe('failed');
    expect(exits.reason).toContain('[McpServerFailedToStart]');
    expect(exits.reason).toContain('MCP server "notes"');
    expect(exits.reason).toContain('cannot open database');

    const missing = await operationResult(
      await h.start({ goal: 'never runs', mcpServers: { gone: { command: 'no-such-mcp-server' } } }),
    );
    expect(missing.state).toBe('failed');
    expect(missing.reason).toMatch(
      /\[McpServerFailedToStart\]: MCP server "gone" \("no-such-mcp-server"\) failed to start: .*ENOENT/,
    );

    const refused = await operationResult(
      await h.start({ goal: 'never runs', mcpServers: { sh: { command: '/bin/sh', args: ['-c', 'id'] } } }),
    );
    expect(refused.state).toBe('failed');
    expect(refused.reason).toContain('[McpServerNotAllowed]');
    expect(h.model.requests.length).toBe(requestsBefore);
  });

  it('gives a server its token from the host store while the input, history and results never hold it', async () => {
    h.model.setScript([
      { toolCalls: [{ name: 'mcp__notes__token_check', input: {} }] },
      { respond: (request) => ({ text: request.toolResults[0]?.content ?? '' }) },
    ]);
    const input = { goal: 'check the token', mcpServers: { notes: notesServer(path.join(dir, 'tok.txt')) } };
    const handle = await h.start(input);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const sha = createHash('sha256').update(TOKEN).digest('hex');
    // The server received the token (its hash matches); its echo of the token was masked.
    expect(result.finalText).toBe(`token sha256 ${sha}; token [secret NOTES_TOKEN]`);
    expect(JSON.stringify(input)).not.toContain(TOKEN);
    expect(JSON.stringify(await handle.fetchHistory())).not.toContain(TOKEN);
    for (const r of h.model.requests) expect(r.rawBody).not.toContain(TOKEN);
  });

  it("gives a subagent the parent's MCP servers", async () => {
    const notes = path.join(dir, 'subagent.txt');
    h.model.setScript([
      { toolCalls: [{ name: 'task', input: { description: 'take a note', prompt: 'note "from the subagent"' } }] },
      { toolCalls: [{ name: 'mcp__notes__add_note', input: { text: 'from the subagent' } }] },
      { respond: (request) => ({ text: `subagent: ${request.toolResults[0]?.content}` }) },
      { respond: (request) => ({ text: `parent: ${request.toolResults[0]?.content}` }) },
    ]);
    const result = await operationResult(
      await h.start({ goal: 'delegate', mcpServers: { notes: notesServer(notes) } }),
    );
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('parent: subagent: noted: from the subagent');
    expect(fs.readFileSync(notes, 'utf8')).toBe('from the subagent\n');
  });

  it('refuses malformed mcpServers input with a message naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ 'bad name': { command: 'x' } }, 'mcpServers.bad name'],
      [{ a: { command: 'x', url: 'https://example.com/mcp' } }, 'mcpServers.a: must have exactly one of "command"'],
      [{ a: { url: 'ftp://example.com' } }, 'mcpServers.a.url'],
      [{ a: { url: 'https://u:p@example.com/mcp' } }, 'must not carry credentials'],
      [{ a: { command: 'x', env: { T: { secret: 'no such!' } } } }, 'mcpServers.a.env.T'],
      [{ a: { command: 'x', headers: { A: 'b' } } }, 'mcpServers.a.headers: is for HTTP servers'],
    ];
    for (const [mcpServers, message] of cases) {
      const handle = await h.start({ goal: 'g', mcpServers } as never);
      const failure = await handle.result().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause?.message).toContain('invalid operation input');
      expect((failure as WorkflowFailedError).cause?.message).toContain(message);
    }
  });
});
