/**
 * The hooks contract (`common/hooks.ts`) on its own, no server: the input's schema and its
 * field-naming messages, matchers, what an exit code and a JSON decision mean for each event, and
 * the decision a failing hook's `onError` makes.
 */
import {
  hookDecisionOf,
  hookRunIdOf,
  interpretHookRun,
  matchingHooks,
  mergeHooks,
  parseHooks,
  toolHooksOf,
  type HookEventName,
  type HookRunOutput,
  type HookSettings,
} from '../../common/hooks';
import { parseOperationInput } from '../../common/operation';
import { parseCodingTaskInput } from '../../common/coding-task';
import { parsePrompt } from '../../common/session';

const cmd = (command: string) => ({ type: 'command' as const, command });
const run = (over: Partial<HookRunOutput>): HookRunOutput => ({
  exitCode: 0,
  stdout: '',
  stderr: '',
  timeoutS: 60,
  ...over,
});
const settings = (raw: unknown): HookSettings => {
  const parsed = parseHooks(raw);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

describe('the hooks input', () => {
  it('takes the shape users know and fills the defaults', () => {
    const hooks = settings({
      PreToolUse: [{ matcher: 'bash', hooks: [{ type: 'command', command: './check.sh', timeout: 30 }] }],
      Stop: [{ hooks: [cmd('npm test >&2 || exit 2')] }],
      SessionStart: [{ matcher: 'startup', hooks: [{ type: 'host', name: 'ticket' }] }],
    });
    expect(hooks.PreToolUse?.[0]?.hooks[0]).toEqual({
      type: 'command',
      command: './check.sh',
      timeout: 30,
      replay: 'safe',
      onError: 'allow',
    });
    expect(hooks.SessionStart?.[0]?.hooks[0]).toEqual({ type: 'host', name: 'ticket', onError: 'allow' });
  });

  it.each([
    [{ BeforeTool: [] }, 'BeforeTool: unknown field (not allowed)'],
    [{ PreToolUse: [{ hooks: [cmd('  ')] }] }, 'PreToolUse.0.hooks.0.command: must be a non-empty shell command'],
    [{ PreToolUse: [{ hooks: [] }] }, 'PreToolUse.0.hooks: must list at least one hook'],
    [{ PreToolUse: [{ matcher: '(bash', hooks: [cmd('x')] }] }, 'PreToolUse.0.matcher: invalid regular expression'],
    [{ Stop: [{ inputMatcher: 'x', hooks: [cmd('x')] }] }, 'Stop.0.inputMatcher: only tool events have one'],
    [{ Stop: [{ hooks: [{ ...cmd('x'), timeout: 601 }] }] }, 'Stop.0.hooks.0.timeout: must be at most 600 seconds'],
    [{ Stop: [{ hooks: [{ ...cmd('x'), replay: 'twice' }] }] }, 'Stop.0.hooks.0.replay: must be "safe" or "never"'],
    [{ Stop: [{ hooks: [{ ...cmd('x'), onError: 'ignore' }] }] }, 'Stop.0.hooks.0.onError: must be "allow" or "deny"'],
    [{ Stop: [{ hooks: [{ type: 'http', url: 'x' }] }] }, 'Stop.0.hooks.0.type: must be "command"'],
    [{ Stop: [{ hooks: [{ type: 'host', name: '../x' }] }] }, 'Stop.0.hooks.0.name: must be 1-64 letters'],
    [{ Stop: [{ hooks: [{ ...cmd('x'), shell: 'zsh' }] }] }, 'Stop.0.hooks.0.shell: unknown field (not allowed)'],
  ])('refuses %j naming the field', (raw, message) => {
    const parsed = parseHooks(raw);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.error).toContain(message);
  });

  it('is a field of operations, prompts, session defaults and coding tasks, checked by the same schema', () => {
    const bad = { Stop: [{ hooks: [cmd('')] }] };
    const op = parseOperationInput({ goal: 'x', hooks: bad });
    expect(!op.ok && op.error).toContain('hooks.Stop.0.hooks.0.command: must be a non-empty shell command');
    const prompt = parsePrompt({ prompt: 'x', hooks: bad });
    expect(!prompt.ok && prompt.error).toContain('hooks.Stop.0.hooks.0.command');
    const task = parseCodingTaskInput({ repo: { kind: 'local', path: '/r' }, hooks: bad });
    expect(!task.ok && task.error).toContain('hooks.Stop.0.hooks.0.command');
    const good = parseOperationInput({ goal: 'x', hooks: { Stop: [{ hooks: [cmd('true')] }] } });
    expect(good.ok && good.value.maxStopBlocks).toBe(3);
    expect(parseOperationInput({ goal: 'x', maxStopBlocks: -1 }).ok).toBe(false);
  });

  it('merges sources event by event, first before second, and keeps the tool events for subagents', () => {
    const a = { PreToolUse: [{ hooks: [cmd('a')] }], Stop: [{ hooks: [cmd('s')] }] };
    const b = { PreToolUse: [{ hooks: [cmd('b')] }] };
    expect(mergeHooks(a, b)).toEqual({ PreToolUse: [...a.PreToolUse, ...b.PreToolUse], Stop: a.Stop });
    expect(mergeHooks(undefined, b)).toBe(b);
    expect(mergeHooks(undefined, undefined)).toBeUndefined();
    expect(toolHooksOf(a)).toEqual({ PreToolUse: a.PreToolUse });
    expect(toolHooksOf({ Stop: a.Stop })).toBeUndefined();
  });
});

describe('matchers', () => {
  const hooks = settings({
    PreToolUse: [
      { matcher: 'bash', hooks: [cmd('bash only')] },
      { matcher: 'write_file|edit_file', hooks: [cmd('writes')] },
      { matcher: '*', inputMatcher: 'git push', hooks: [cmd('pushes')] },
      { hooks: [cmd('everything')] },
    ],
    SessionStart: [{ matcher: 'startup', hooks: [cmd('fresh')] }],
    Stop: [{ matcher: 'anything', hooks: [cmd('stop')] }],
  });
  const names = (event: HookEventName, name?: string, mainArgument?: string) =>
    matchingHooks(hooks, event, { name, mainArgument }).map((hook) => (hook.type === 'command' ? hook.command : ''));

  it('matches a tool name exactly or by a regular expression over the whole name, in order', () => {
    expect(names('PreToolUse', 'bash', 'ls')).toEqual(['bash only', 'everything']);
    expect(names('PreToolUse', 'bash_other', 'ls')).toEqual(['everything']);
    expect(names('PreToolUse', 'edit_file', 'src/a.js')).toEqual(['writes', 'everything']);
    expect(names('PreToolUse', 'bash', 'git push --force origin main')).toEqual(['bash only', 'pushes', 'everything']);
  });

  it("matches SessionStart's source, and ignores the matcher of Stop", () => {
    expect(names('SessionStart', 'startup')).toEqual(['fresh']);
    expect(names('SessionStart', 'resume')).toEqual([]);
    expect(names('Stop')).toEqual(['stop']);
  });
});

describe('what a hook run says', () => {
  it('exit 0 goes on; plain stdout is context only where the event takes it', () => {
    expect(interpretHookRun('PreToolUse', run({ stdout: 'checked' }))).toEqual({ kind: 'go' });
    expect(interpretHookRun('SessionStart', run({ stdout: 'ticket ABC-1\n' }))).toEqual({
      kind: 'go',
      context: 'ticket ABC-1',
    });
    expect(interpretHookRun('UserPromptSubmit', run({ stdout: 'note' }))).toEqual({ kind: 'go', context: 'note' });
  });

  it('exit 2 blocks with stderr where the event can block, and is an error where it cannot', () => {
    expect(interpretHookRun('Stop', run({ exitCode: 2, stderr: 'tests fail\n' }))).toEqual({
      kind: 'block',
      reason: 'tests fail',
    });
    expect(interpretHookRun('PostToolUse', run({ exitCode: 2, stderr: '' })).kind).toBe('block');
    expect(interpretHookRun('PreCompact', run({ exitCode: 2, stderr: 'no' }))).toEqual({
      kind: 'error',
      error: 'exit 2 (a PreCompact hook cannot block): no',
    });
  });

  it('any other exit, a timeout and an interrupted run are errors', () => {
    expect(interpretHookRun('Stop', run({ exitCode: 1, stderr: 'boom' }))).toEqual({
      kind: 'error',
      error: 'exit 1: boom',
    });
    expect(interpretHookRun('Stop', run({ exitCode: 143, timedOut: true, timeoutS: 5 }))).toEqual({
      kind: 'error',
      error: 'timed out after 5 s',
    });
    expect(interpretHookRun('Stop', run({ interrupted: 'interrupted: x' }))).toEqual({
      kind: 'error',
      error: 'interrupted: x',
    });
  });

  it('reads the JSON decisions of each event', () => {
    const json = (value: unknown) => run({ stdout: JSON.stringify(value) });
    const pre = (decision: string, more: object = {}) =>
      json({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: decision, ...more } });
    expect(interpretHookRun('PreToolUse', pre('deny', { permissionDecisionReason: 'no' }))).toEqual({
      kind: 'block',
      reason: 'no',
    });
    expect(interpretHookRun('PreToolUse', pre('ask', { permissionDecisionReason: 'sure?' }))).toEqual({
      kind: 'go',
      ask: true,
      reason: 'sure?',
    });
    expect(interpretHookRun('PreToolUse', pre('allow', { updatedInput: { command: 'ls' } }))).toEqual({
      kind: 'go',
      updatedInput: { command: 'ls' },
    });
    expect(interpretHookRun('PreToolUse', json({ decision: 'block', reason: 'legacy' }))).toEqual({
      kind: 'block',
      reason: 'legacy',
    });
    expect(
      interpretHookRun('Stop', json({ decision: 'block', reason: 'not yet', systemMessage: 'sent back' })),
    ).toEqual({ kind: 'block', reason: 'not yet', systemMessage: 'sent back' });
    expect(
      interpretHookRun('PostToolUse', json({ hookSpecificOutput: { additionalContext: ' lint: 2 warnings ' } })),
    ).toEqual({ kind: 'go', context: 'lint: 2 warnings' });
    expect(interpretHookRun('PreCompact', json({ hookSpecificOutput: { additionalContext: 'keep X' } }))).toEqual({
      kind: 'go',
      context: 'keep X',
    });
  });

  it('names the field of a JSON decision it cannot take', () => {
    const json = (value: unknown) => run({ stdout: JSON.stringify(value) });
    const error = (event: HookEventName, value: unknown) => {
      const verdict = interpretHookRun(event, json(value));
      return verdict.kind === 'error' ? verdict.error : `not an error: ${JSON.stringify(verdict)}`;
    };
    expect(error('PreToolUse', { hookSpecificOutput: { permissionDecision: 'maybe' } })).toContain(
      'hookSpecificOutput.permissionDecision: must be "allow", "deny" or "ask"',
    );
    expect(error('PreToolUse', { decision: 'yes' })).toContain('decision: must be "block" or "approve"');
    expect(error('Stop', { hookSpecificOutput: { permissionDecision: 'allow' } })).toContain(
      'hookSpecificOutput.permissionDecision: only PreToolUse hooks decide that',
    );
    expect(error('SessionStart', { decision: 'block' })).toContain('a SessionStart hook cannot block');
    expect(error('Stop', { hookSpecificOutput: { hookEventName: 'PreToolUse' } })).toContain(
      'is "PreToolUse" in a Stop hook',
    );
    expect(interpretHookRun('Stop', run({ stdout: '{not json' })).kind).toBe('error');
  });
});

describe('decisions', () => {
  const failed = { kind: 'error' as const, error: 'exit 1: boom' };

  it("applies a failing hook's onError: allow goes on, deny refuses where the event can", () => {
    expect(hookDecisionOf('PreToolUse', failed, 'allow')).toEqual({ decision: 'allow', error: 'exit 1: boom' });
    expect(hookDecisionOf('PreToolUse', failed, 'deny')).toEqual({
      decision: 'deny',
      reason: 'a PreToolUse hook failed: exit 1: boom',
      error: 'exit 1: boom',
    });
    expect(hookDecisionOf('Stop', failed, 'deny').decision).toBe('block');
    expect(hookDecisionOf('SessionStart', failed, 'deny').decision).toBe('block');
    expect(hookDecisionOf('PreCompact', failed, 'deny')).toEqual({ decision: 'continue', error: 'exit 1: boom' });
  });

  it('words PreToolUse as allow, deny, ask and the other events as continue, block', () => {
    expect(hookDecisionOf('PreToolUse', { kind: 'block', reason: 'r' }, 'allow').decision).toBe('deny');
    expect(hookDecisionOf('PreToolUse', { kind: 'go', ask: true }, 'allow').decision).toBe('ask');
    expect(hookDecisionOf('Stop', { kind: 'block', reason: 'r' }, 'allow').decision).toBe('block');
    expect(hookDecisionOf('PostToolUse', { kind: 'go', context: 'c' }, 'allow')).toEqual({
      decision: 'continue',
      context: 'c',
    });
  });

  it('keys hook runs by letters, digits and a few marks, hashing any other key', () => {
    expect(hookRunIdOf('pre', 'toolu_01ab', 2)).toBe('hook-pre-toolu_01ab-2');
    expect(hookRunIdOf('stop', 'op:with/slashes', 0)).toMatch(/^hook-stop-h[0-9a-f]{8}-0$/);
  });
});
