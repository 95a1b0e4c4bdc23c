/**
 * PreToolUse and PostToolUse hooks on the real Temporal server, Docker and the scripted model: a
 * hook in the sandbox allows, denies (exit 2, or JSON with a reason the model sees), asks a person
 * through the approval flow, or replaces a call's input; a PostToolUse lint hook's word reaches the
 * model in the call's result; a failing hook decides by its `onError`; matchers pick tools by name,
 * by regular expression and by input pattern; every run is a `runHook` activity and its decision a
 * `hook.decided` event; a repository's `.agent/hooks.json` applies where the hands worker allows it.
 */
import { operationResult } from '../../client/operation-result';
import { decideToolCall } from '../../client/approvals';
import { statusQuery } from '../../common/operation';
import { conversations } from '../support/conversations';
import { removeRepositories } from '../support/repositories';
import { startSessionHarnessOn } from '../support/session-harness';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';
import {
  answered,
  bodyOf,
  echoResults,
  hook,
  hookDecisions,
  hookRepository,
  hookRuns,
  messageText,
  seenResults,
  workspaceFile,
} from './fixtures';

const GIT = '-c user.email=agent@example.invalid -c user.name=agent';
const SET_UP_REMOTE =
  `git init -q --bare /tmp/origin.git && git init -q -b main && git add -A && git ${GIT} commit -qm init && ` +
  'git remote add origin /tmp/origin.git && echo ready';

describe('tool hooks (PreToolUse, PostToolUse)', () => {
  let h: OperationHarness;
  let repo: string;
  beforeAll(async () => {
    h = await startOperationHarness([], { hands: { hooks: { repositoryHooks: true, hostHooks: {} } } });
    repo = hookRepository({ 'src/app.js': 'const a = 1;\n' });
  });
  afterAll(async () => {
    await h.close();
    removeRepositories();
  });

  it('denies `git push --force` (exit 2, stderr the reason the model sees) and lets other pushes run', async () => {
    h.model.setScript([
      { toolCalls: [{ id: 'toolu_setup', name: 'bash', input: { command: SET_UP_REMOTE } }] },
      { toolCalls: [{ id: 'toolu_force', name: 'bash', input: { command: 'git push --force origin main' } }] },
      { toolCalls: [{ id: 'toolu_f', name: 'bash', input: { command: 'git push -f origin main' } }] },
      { toolCalls: [{ id: 'toolu_push', name: 'bash', input: { command: 'git push -q origin main && echo pushed' } }] },
      { respond: (request) => ({ text: JSON.stringify(request.body.messages) }) },
    ]);
    const handle = await h.start({
      goal: 'push the work',
      repo: { kind: 'local', path: repo },
      hooks: { PreToolUse: [{ matcher: 'bash', hooks: [hook('no-force-push')] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const requests = answered(h.model.requests);
    const resultOf = (index: number) => messageText(bodyOf(requests[index]!).messages.at(-1)!);
    expect(resultOf(1)).toContain('ready');
    for (const index of [2, 3]) {
      expect(resultOf(index)).toContain('denied by a PreToolUse hook: force pushes are not allowed here');
      expect(resultOf(index)).not.toContain('[exit code');
    }
    expect(resultOf(4)).toContain('pushed');
    expect(resultOf(4)).toContain('[exit code 0]');
    // Four calls, four hook runs, each its own activity keyed by the call.
    expect(await hookRuns(handle)).toEqual([
      'hook-pre-toolu_setup-0',
      'hook-pre-toolu_force-0',
      'hook-pre-toolu_f-0',
      'hook-pre-toolu_push-0',
    ]);
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.toolCallId, e.data.decision])).toEqual([
      ['toolu_setup', 'allow'],
      ['toolu_force', 'deny'],
      ['toolu_f', 'deny'],
      ['toolu_push', 'allow'],
    ]);
    // The Web UI's details show the last decision (kept in the result once the run closed).
    expect(result.details).toContain(
      "last hook: `hook PreToolUse: python3 hooks/hook.py no-force-push ''` (toolu_push) → allow",
    );
    expect(decided[1]!.data).toMatchObject({
      event: 'PreToolUse',
      tool: 'bash',
      hook: "hook PreToolUse: python3 hooks/hook.py no-force-push ''",
      reason: expect.stringContaining('force pushes are not allowed'),
      exitCode: 2,
    });
  });

  it('allows with JSON, denies with JSON, and replaces a call’s input (the replaced call runs)', async () => {
    h.model.setScript([
      {
        toolCalls: [
          { id: 'toolu_allowed', name: 'bash', input: { command: 'echo allowed > allowed.txt; echo allowed' } },
          { id: 'toolu_denied', name: 'bash', input: { command: 'echo denied > denied.txt' } },
          { id: 'toolu_replaced', name: 'bash', input: { command: 'echo original > replaced.txt' } },
        ],
      },
      echoResults,
    ]);
    const handle = await h.start({
      goal: 'three calls',
      repo: { kind: 'local', path: repo },
      keepContainer: true,
      hooks: {
        PreToolUse: [
          { matcher: 'bash', inputMatcher: 'allowed', hooks: [hook('allow', 'fine')] },
          { matcher: 'ba.*', inputMatcher: 'denied', hooks: [hook('deny', 'no denied.txt, please')] },
          {
            matcher: '*',
            inputMatcher: 'original',
            hooks: [hook('replace', 'echo replaced > replaced.txt; echo swapped')],
          },
        ],
      },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const [allowed, denied, replaced] = seenResults(result.finalText);
    expect(allowed).toMatchObject({ toolCallId: 'toolu_allowed', isError: false });
    expect(allowed!.content).toContain('allowed');
    expect(denied).toMatchObject({ toolCallId: 'toolu_denied', isError: true });
    expect(denied!.content).toContain('denied by a PreToolUse hook: no denied.txt, please');
    expect(replaced!.content).toContain('swapped');
    expect(replaced!.content).toContain("a PreToolUse hook replaced this call's input");
    const sessionId = result.sessionId;
    expect(workspaceFile(sessionId, 'allowed.txt')).toBe('allowed\n');
    expect(workspaceFile(sessionId, 'denied.txt')).toBeUndefined();
    expect(workspaceFile(sessionId, 'replaced.txt')).toBe('replaced\n');
    // Only the matching group's hook ran for each call (input patterns).
    expect(await hookRuns(handle)).toEqual([
      'hook-pre-toolu_allowed-0',
      'hook-pre-toolu_denied-0',
      'hook-pre-toolu_replaced-0',
    ]);
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => e.data.decision)).toEqual(['allow', 'deny', 'allow']);
    expect(decided[2]!.data.updatedInput).toEqual({ command: 'echo replaced > replaced.txt; echo swapped' });
  });

  it('asks a person through the approval flow: approved runs, refused does not', async () => {
    h.model.setScript([
      { toolCalls: [{ id: 'toolu_ask_yes', name: 'bash', input: { command: 'echo yes > yes.txt; echo ran' } }] },
      { toolCalls: [{ id: 'toolu_ask_no', name: 'bash', input: { command: 'echo no > no.txt; echo ran' } }] },
      { respond: (request) => ({ text: JSON.stringify(request.body.messages) }) },
    ]);
    const handle = await h.start({
      goal: 'two calls a person decides',
      repo: { kind: 'local', path: repo },
      keepContainer: true,
      hooks: { PreToolUse: [{ matcher: 'bash', hooks: [hook('ask', 'a person checks writes')] }] },
    });
    const decide = async (toolCallId: string, approve: boolean) => {
      const waiting = await waitFor(
        async () => (await handle.query(statusQuery).catch(() => undefined))?.waitingApproval,
        `${toolCallId} to wait for approval`,
      );
      expect(waiting.toolCallId).toBe(toolCallId);
      expect(waiting.rule).toContain('PreToolUse hook: a person checks writes');
      await decideToolCall(handle.client, { operationId: handle.workflowId, toolCallId, approve, reason: 'not now' });
    };
    await decide('toolu_ask_yes', true);
    await decide('toolu_ask_no', false);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(workspaceFile(result.sessionId, 'yes.txt')).toBe('yes\n');
    expect(workspaceFile(result.sessionId, 'no.txt')).toBeUndefined();
    expect((await hookDecisions(h.temporal.client, handle)).map((e) => e.data.decision)).toEqual(['ask', 'ask']);
  });

  it('a PostToolUse lint hook’s output reaches the model in the result of the edit', async () => {
    h.model.setScript([
      {
        toolCalls: [
          {
            id: 'toolu_write',
            name: 'write_file',
            input: { path: 'src/new.js', content: 'var x = 1;\nconst y = 2;\n' },
          },
        ],
      },
      {
        toolCalls: [
          { id: 'toolu_fix', name: 'edit_file', input: { path: 'src/new.js', old_text: 'var x', new_text: 'let x' } },
        ],
      },
      { toolCalls: [{ id: 'toolu_ls', name: 'bash', input: { command: 'ls src' } }] },
      { text: 'linted' },
    ]);
    const handle = await h.start({
      goal: 'write and lint',
      repo: { kind: 'local', path: repo },
      hooks: { PostToolUse: [{ matcher: 'write_file|edit_file', hooks: [hook('lint')] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const requests = answered(h.model.requests).slice(-3);
    const lastMessage = (index: number) => messageText(bodyOf(requests[index]!).messages.at(-1)!);
    expect(lastMessage(0)).toContain('[PostToolUse hook] lint: src/new.js:1: use let or const, not var');
    expect(lastMessage(1)).toContain('[PostToolUse hook] lint: clean');
    // The regular expression is matched against the whole name: bash has no lint.
    expect(lastMessage(2)).not.toContain('PostToolUse hook');
    expect(await hookRuns(handle)).toEqual(['hook-post-toolu_write-0', 'hook-post-toolu_fix-0']);
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.event, e.data.decision, e.data.context])).toEqual([
      ['PostToolUse', 'continue', 'lint: src/new.js:1: use let or const, not var'],
      ['PostToolUse', 'continue', 'lint: clean'],
    ]);
  });

  it('a PostToolUse block adds its reason to the result (the call already ran)', async () => {
    h.model.setScript([
      { toolCalls: [{ id: 'toolu_post_block', name: 'bash', input: { command: 'echo ran > post.txt; echo ran' } }] },
      echoResults,
    ]);
    const result = await operationResult(
      await h.start({
        goal: 'one call',
        repo: { kind: 'local', path: repo },
        keepContainer: true,
        hooks: { PostToolUse: [{ matcher: 'bash', hooks: [hook('block-json', 'that output looks wrong')] }] },
      }),
    );
    const [seen] = seenResults(result.finalText);
    expect(seen!.content).toContain('ran');
    expect(seen!.content).toContain('[PostToolUse hook] that output looks wrong');
    expect(workspaceFile(result.sessionId, 'post.txt')).toBe('ran\n');
  });

  it('a failing or timed-out hook decides by its onError: deny refuses the call, allow lets it run', async () => {
    h.model.setScript([
      {
        toolCalls: [
          { id: 'toolu_err_deny', name: 'bash', input: { command: 'echo one > err-deny.txt' } },
          { id: 'toolu_err_allow', name: 'bash', input: { command: 'echo two > err-allow.txt; echo two' } },
          { id: 'toolu_timeout', name: 'read_file', input: { path: 'README.md' } },
        ],
      },
      echoResults,
    ]);
    const handle = await h.start({
      goal: 'failing hooks',
      repo: { kind: 'local', path: repo },
      keepContainer: true,
      hooks: {
        PreToolUse: [
          { matcher: 'bash', inputMatcher: 'err-deny', hooks: [hook('fail', '', { onError: 'deny' })] },
          { matcher: 'bash', inputMatcher: 'err-allow', hooks: [hook('fail', '', { onError: 'allow' })] },
          {
            matcher: 'read_file',
            hooks: [{ type: 'command', command: 'while :; do sleep 0.1; done', timeout: 1, onError: 'deny' }],
          },
        ],
      },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const [deny, allow, timedOut] = seenResults(result.finalText);
    expect(deny).toMatchObject({ isError: true });
    expect(deny!.content).toContain('denied by a PreToolUse hook: a PreToolUse hook failed: exit 1: the hook broke');
    expect(allow!.content).toContain('two');
    expect(timedOut!.content).toContain('a PreToolUse hook failed: timed out after 1 s');
    expect(workspaceFile(result.sessionId, 'err-deny.txt')).toBeUndefined();
    expect(workspaceFile(result.sessionId, 'err-allow.txt')).toBe('two\n');
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.decision, e.data.onError])).toEqual([
      ['deny', 'deny'],
      ['allow', 'allow'],
      ['deny', 'deny'],
    ]);
    expect(decided[1]!.data.error).toBe('exit 1: the hook broke');
  });

  it("applies a repository's .agent/hooks.json where the hands worker allows it (after the input's)", async () => {
    const withHooks = hookRepository({
      '.agent/hooks.json': JSON.stringify({
        PreToolUse: [
          {
            matcher: 'write_file|edit_file',
            inputMatcher: '^migrations/',
            hooks: [{ type: 'command', command: "echo 'migrations are written by hand' >&2; exit 2" }],
          },
        ],
      }),
    });
    h.model.setScript([
      {
        toolCalls: [
          {
            id: 'toolu_mig',
            name: 'write_file',
            input: { path: 'migrations/001.sql', content: 'drop table users;\n' },
          },
          { id: 'toolu_src', name: 'write_file', input: { path: 'src/ok.js', content: 'const ok = true;\n' } },
        ],
      },
      echoResults,
    ]);
    const handle = await h.start({
      goal: 'write two files',
      repo: { kind: 'local', path: withHooks },
      keepContainer: true,
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const [migration, source] = seenResults(result.finalText);
    expect(migration!.content).toContain('denied by a PreToolUse hook: migrations are written by hand');
    expect(source).toMatchObject({ isError: false });
    expect(workspaceFile(result.sessionId, 'migrations/001.sql')).toBeUndefined();
    expect(workspaceFile(result.sessionId, 'src/ok.js')).toBe('const ok = true;\n');
    // The input pattern picks the call: the other write runs no hook.
    expect(await hookRuns(handle)).toEqual(['hook-pre-toolu_mig-0']);
  });

  it("a repository's SessionStart hook voids the first reply, asked before the check, and the turn is asked again", async () => {
    const withStartHook = hookRepository({
      '.agent/hooks.json': JSON.stringify({
        SessionStart: [{ hooks: [{ type: 'command', command: "echo 'the repository says: run make check'" }] }],
      }),
    });
    h.model.setScript([{ text: 'asked too early' }, { text: 'asked with the rules' }]);
    const before = h.model.requests.length;
    const handle = await h.start({ goal: 'read the rules', repo: { kind: 'local', path: withStartHook } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('asked with the rules');
    const requests = answered(h.model.requests.slice(before));
    expect(requests).toHaveLength(2);
    // The first request did not wait for the repository's check, so it lacks the hook's word; the second has it.
    expect(messageText(bodyOf(requests[0]!).messages[0]!)).not.toContain('run make check');
    expect(messageText(bodyOf(requests[1]!).messages[0]!)).toContain(
      '[SessionStart hook] the repository says: run make check',
    );
    // The void reply is billed: the operation's output tokens are both replies'.
    const outputs = requests.map((request) => request.usage?.output_tokens ?? 0);
    expect(result.usage.output).toBe(outputs[0]! + outputs[1]!);
    const history = (await handle.fetchHistory()).events ?? [];
    const modelSteps = history.flatMap((event) => {
      const scheduled = event.activityTaskScheduledEventAttributes;
      return scheduled?.activityType?.name === 'modelStep' ? [scheduled.activityId] : [];
    });
    expect(modelSteps).toEqual(['model-turn-1', 'model-turn-1-asked-again-1']);
  });

  it("a subagent keeps its parent's tool hooks, not its conversation's", async () => {
    const s = startSessionHarnessOn(h);
    const sessionId = s.newSession('hooks-subagent');
    h.model.setScript(
      conversations({
        'parent: hand the push to a subagent': [
          {
            toolCalls: [
              { id: 'toolu_hook_task', name: 'task', input: { description: 'push', prompt: 'child: force the push' } },
            ],
          },
          echoResults,
        ],
        'child: force the push': [
          {
            toolCalls: [{ id: 'toolu_child_force', name: 'bash', input: { command: 'git push --force origin main' } }],
          },
          { respond: (request) => ({ text: `child saw: ${request.toolResults[0]?.content}` }) },
        ],
      }),
    );
    const accepted = await s.submit(
      sessionId,
      {
        prompt: 'parent: hand the push to a subagent',
        hooks: {
          PreToolUse: [{ matcher: 'bash', hooks: [hook('no-force-push')] }],
          SessionStart: [{ hooks: [hook('plain', 'for the parent only')] }],
        },
      },
      { repo: { kind: 'local', path: repo } },
    );
    const parent = await s.result(accepted.operationId);
    expect(parent.state).toBe('completed');
    const [task] = seenResults(parent.finalText);
    expect(task!.content).toContain('child saw: denied by a PreToolUse hook: force pushes are not allowed here');
    const childFirst = answered(h.model.requests).find((r) =>
      messageText(bodyOf(r).messages[0]!).includes('child: force the push'),
    );
    expect(messageText(bodyOf(childFirst!).messages[0]!)).not.toContain('for the parent only');
    await s.close();
  });
});
