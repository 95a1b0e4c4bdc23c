/**
 * Bad tool calls from the model, in one real operation (scripted model, real Docker): each refused
 * call comes back to the model as an error result that names the field, runs nothing, and the
 * operation goes on; invalid UTF-8 and binary output arrive as readable text with nothing lost.
 * What the Messages API never sends (a call to a tool it was not offered, 10 MB of arguments) is
 * refused by the hands themselves.
 */
import { execFileSync } from 'node:child_process';
import { createHandsActivities } from '../../activities/hands/activities';
import { recordsOf } from '../../activities/hands/journal-store';
import { operationResult } from '../../client/operation-result';
import type { OperationResult } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import type { ScriptedRequest, ScriptedToolCall, ScriptedTurn } from '../../scripted-model/script';
import { handsFixture, readOutcome } from '../support/hands';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

interface ToolCase {
  name: string;
  call: Omit<ScriptedToolCall, 'id'>;
  /** A fragment of the result the model gets. */
  expect: string | RegExp;
  isError: boolean;
  /** True when the workflow refuses the call before any activity (no intent recorded). */
  refusedBeforeRunning: boolean;
}

const SETUP: Omit<ScriptedToolCall, 'id'> = {
  name: 'bash',
  input: { command: 'ln -s /etc etc-link && ln -s /tmp tmp-link && echo hello > a.txt && echo ready' },
};

const CASES: ToolCase[] = [
  {
    name: 'an invented field',
    call: { name: 'edit_file', input: { path: 'a.txt', old_text: 'hello', new_text: 'bye', oldText2: 'x' } },
    expect: 'unknown field "oldText2" is not allowed (allowed: path, old_text, new_text)',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a field of the wrong type',
    call: { name: 'bash', input: { command: 'ls', timeout_ms: 'fast' } },
    expect: 'field "timeout_ms" must be a number, got a string',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a missing required field',
    call: { name: 'write_file', input: { path: 'b.txt' } },
    expect: 'required field "content" is missing',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a null where a string belongs',
    call: { name: 'read_file', input: { path: null } },
    expect: 'field "path" must be a string, got null',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a NUL byte in a command',
    call: { name: 'bash', input: { command: 'echo a\u0000b' } },
    expect: 'field "command": contains a NUL byte (\\u0000), which no command line can carry',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a NUL byte in a path',
    call: { name: 'read_file', input: { path: 'a\u0000.txt' } },
    expect: 'field "path": contains a NUL byte',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a command over 100,000 bytes',
    call: { name: 'bash', input: { command: `echo ${'x'.repeat(150_000)}` } },
    expect: 'field "command": is 150005 bytes, more than the 100000 allowed: put a long script in a file',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'an empty old_text',
    call: { name: 'edit_file', input: { path: 'a.txt', old_text: '', new_text: 'x' } },
    expect: 'field "old_text": must not be empty',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a read that climbs out of /workspace with ..',
    call: { name: 'read_file', input: { path: '../etc/passwd' } },
    expect: 'field "path": resolves to /etc/passwd, outside /workspace and /var/lib/agent-journal',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a write to an absolute path outside /workspace',
    call: { name: 'write_file', input: { path: '/etc/cron.d/planted', content: 'x' } },
    expect: 'field "path": resolves to /etc/cron.d/planted, outside /workspace',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a write that climbs out with ..',
    call: { name: 'write_file', input: { path: 'src/../../tmp/planted', content: 'x' } },
    expect: 'field "path": resolves to /tmp/planted, outside /workspace',
    isError: true,
    refusedBeforeRunning: true,
  },
  {
    name: 'a read through a symbolic link out of /workspace',
    call: { name: 'read_file', input: { path: 'etc-link/passwd' } },
    expect: 'etc-link/passwd resolves to /etc/passwd through a symbolic link, outside /workspace',
    isError: true,
    refusedBeforeRunning: false,
  },
  {
    name: 'a write through a symbolic link out of /workspace',
    call: { name: 'write_file', input: { path: 'tmp-link/planted.txt', content: 'x' } },
    expect: 'tmp-link/planted.txt resolves to /tmp/planted.txt through a symbolic link, outside /workspace',
    isError: true,
    refusedBeforeRunning: false,
  },
  {
    name: 'an edit through a symbolic link out of /workspace',
    call: { name: 'edit_file', input: { path: 'etc-link/hostname', old_text: 'a', new_text: 'b' } },
    expect: 'etc-link/hostname resolves to /etc/hostname through a symbolic link',
    isError: true,
    refusedBeforeRunning: false,
  },
  {
    name: 'a listing through a symbolic link out of /workspace',
    call: { name: 'list_files', input: { path: 'etc-link' } },
    expect: 'etc-link resolves to /etc through a symbolic link, outside /workspace',
    isError: true,
    refusedBeforeRunning: false,
  },
  {
    name: 'a search through a symbolic link out of /workspace',
    call: { name: 'grep', input: { pattern: 'root', path: 'etc-link' } },
    expect: 'etc-link resolves to /etc through a symbolic link, outside /workspace',
    isError: true,
    refusedBeforeRunning: false,
  },
  {
    name: 'output that is not valid UTF-8',
    call: { name: 'bash', input: { command: "printf 'caf\\xe9 ok\\n'" } },
    expect: 'caf\uFFFD ok\n[exit code 0]',
    isError: false,
    refusedBeforeRunning: false,
  },
  {
    name: 'binary output',
    call: { name: 'bash', input: { command: 'head -c 3000 /dev/urandom; printf "\\0"' } },
    expect:
      /^\[binary output: 3001 bytes that are not text, not shown\. It is kept whole in \/workspace\/\.agent\/out\/toolu_bad_18\.txt/,
    isError: false,
    refusedBeforeRunning: false,
  },
];

const idOf = (index: number) => `toolu_bad_${String(index).padStart(2, '0')}`;

/** Turn k asks for call k (turn 0 sets the stage), then the model finishes. */
function script(request: ScriptedRequest): ScriptedTurn | undefined {
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) return { toolCalls: [{ ...SETUP, id: idOf(0) }] };
  if (turn <= CASES.length) return { toolCalls: [{ ...CASES[turn - 1].call, id: idOf(turn) }] };
  if (turn === CASES.length + 1) return { text: 'done' };
  return undefined;
}

interface SeenResult {
  content: string;
  isError: boolean;
}

describe('bad tool calls', () => {
  let h: OperationHarness;
  let result: OperationResult;
  const seen = new Map<string, SeenResult>();
  const scheduled = new Set<string>();
  let sessionId = '';

  beforeAll(async () => {
    h = await startOperationHarness(script);
    // One refused call per turn, every one an error: far more error turns in a row than the loop
    // detector allows by default (it would rightly end such a run as stuck), so this run allows them.
    const handle = await h.start({
      goal: 'try every bad call',
      maxTokensPerTurn: 128_000,
      keepContainer: true,
      stuck: { errorTurns: 100 },
    });
    sessionId = handle.workflowId;
    result = await operationResult(handle);
    for (const request of h.model.requests) {
      const messages = (request.body as { messages?: Array<{ role: string; content: unknown }> } | null)?.messages;
      const last = messages?.at(-1);
      if (last?.role !== 'user' || !Array.isArray(last.content)) continue;
      for (const block of last.content as Array<{
        type: string;
        tool_use_id?: string;
        content?: unknown;
        is_error?: boolean;
      }>) {
        if (block.type !== 'tool_result' || !block.tool_use_id) continue;
        const content = typeof block.content === 'string' ? block.content : JSON.stringify(block.content);
        seen.set(block.tool_use_id, { content, isError: block.is_error === true });
      }
    }
    for (const event of (await handle.fetchHistory()).events ?? []) {
      const id = event.activityTaskScheduledEventAttributes?.activityId;
      if (id) scheduled.add(id);
    }
  }, 600_000);
  afterAll(async () => h?.close());

  it('the operation goes on after every refused call and completes', () => {
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('done');
    expect(seen.get(idOf(0))?.content).toBe('ready\n[exit code 0]');
  });

  it.each(CASES.map((c, i) => [c.name, c, i + 1] as const))('%s', (_name, c, index) => {
    const got = seen.get(idOf(index));
    expect(got).toBeDefined();
    if (typeof c.expect === 'string') expect(got!.content).toContain(c.expect);
    else expect(got!.content).toMatch(c.expect);
    expect(got!.isError).toBe(c.isError);
    // A call refused by the workflow records no intent: no activity was scheduled for it.
    expect(scheduled.has(`tool-${idOf(index)}`)).toBe(!c.refusedBeforeRunning);
  });

  it('left nothing outside /workspace and kept binary output whole', () => {
    const inSandbox = (command: string) =>
      execFileSync('docker', ['exec', containerNameOf(sessionId), 'bash', '-c', command], { encoding: 'utf8' });
    expect(inSandbox('ls /tmp/planted.txt /tmp/planted /etc/cron.d/planted 2>&1 || true')).not.toMatch(
      /^\/(tmp|etc)\//m,
    );
    expect(inSandbox('cat a.txt')).toBe('hello\n');
    const binary = idOf(CASES.findIndex((c) => c.name === 'binary output') + 1);
    expect(inSandbox(`wc -c < /workspace/.agent/out/${binary}.txt`).trim()).toBe('3001');
  });
});

describe('tool calls a model cannot send, sent to the hands directly', () => {
  const fx = handsFixture();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  afterAll(() => fx.cleanup());

  it('a call to an unknown tool is refused, naming the tools there are', async () => {
    const outcome = await hands.runTool({
      sessionId: fx.sessionId('unknown-tool'),
      toolCallId: 'toolu_unknown_tool',
      name: 'delete_everything',
      input: {},
    });
    expect(readOutcome(outcome)).toEqual({
      content:
        'Unknown tool "delete_everything". Available tools: bash, read_file, write_file, edit_file, list_files, grep.',
      isError: true,
      synthetic: false,
    });
  });

  it.each([
    [
      'write_file content',
      'write_file',
      { path: 'big.txt', content: 'x'.repeat(10 * 1024 * 1024) },
      'field "content": is 10485760 bytes, more than the 1048576 allowed',
    ],
    [
      'a bash command',
      'bash',
      { command: 'x'.repeat(10 * 1024 * 1024) },
      'field "command": is 10485760 bytes, more than the 100000 allowed',
    ],
  ] as const)('%s of 10 MB is refused, naming the field, and nothing runs', async (_what, name, input, message) => {
    const sessionId = fx.sessionId('ten-mb');
    const toolCallId = `toolu_tenmb_${name}`;
    const outcome = await hands.runTool({ sessionId, toolCallId, name, input });
    expect(readOutcome(outcome)).toMatchObject({ isError: true, synthetic: false });
    expect(outcome.content).toContain(message);
    expect(outcome.content).toContain('Nothing was run.');
    // No sandbox was even needed: nothing was written, no journal entry exists.
    await fx.sandboxes.lifecycle.ensure(sessionId);
    expect(await fx.sh(sessionId, `ls ${recordsOf(toolCallId).journalPath} big.txt 2>/dev/null | wc -l`)).toBe('0\n');
  });
});
