/**
 * The conversation's hooks on the real Temporal server, Docker and the scripted model: SessionStart
 * (a sandbox hook's plain stdout, and a host hook the hands worker defines) and UserPromptSubmit add
 * context to the first message, or refuse the prompt; a Stop hook sends the agent back with its
 * reason until its check passes, at most `maxStopBlocks` times; a PreCompact hook's context is kept
 * across the compaction.
 */
import { execFileSync } from 'node:child_process';
import { operationResult } from '../../client/operation-result';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { compactUpdate, statusQuery } from '../../common/operation';
import { containerNameOf } from '../../common/sandbox-names';
import type { ScriptFunction, ScriptedTurn } from '../../scripted-model/script';
import { isCompactionBody, isCompactionRequest } from '../support/context-scripts';
import { removeRepositories } from '../support/repositories';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';
import { startSessionHarnessOn } from '../support/session-harness';
import {
  answered,
  bodyOf,
  echoResults as echoResultsTurn,
  hook,
  hookDecisions,
  hookRepository,
  hookRuns,
  messageText,
} from './fixtures';

describe('conversation hooks (SessionStart, UserPromptSubmit, Stop, PreCompact)', () => {
  let h: OperationHarness;
  let repo: string;
  beforeAll(async () => {
    h = await startOperationHarness([], {
      hands: {
        hooks: {
          repositoryHooks: false,
          hostHooks: { ticket: { command: 'echo "ticket ABC-123: the parser drops trailing commas"', replay: 'safe' } },
        },
      },
    });
    repo = hookRepository();
  });
  afterAll(async () => {
    await h.close();
    removeRepositories();
  });

  const firstUserMessage = () => {
    const [first] = answered(h.model.requests).slice(-1);
    return messageText(bodyOf(first!).messages[0]!);
  };

  it('SessionStart (sandbox and host hooks) and UserPromptSubmit add context to the first message', async () => {
    h.model.setScript([{ text: 'read it' }]);
    const handle = await h.start({
      goal: 'fix the parser',
      repo: { kind: 'local', path: repo },
      hooks: {
        SessionStart: [
          {
            matcher: 'startup',
            hooks: [hook('plain', 'the team writes tests first'), { type: 'host', name: 'ticket' }],
          },
          { matcher: 'resume', hooks: [hook('plain', 'not a resumed session')] },
        ],
        UserPromptSubmit: [{ hooks: [hook('context', 'the prompt came from the issue tracker')] }],
      },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const text = firstUserMessage();
    const at = (part: string) => {
      const index = text.indexOf(part);
      expect(index).toBeGreaterThanOrEqual(0);
      return index;
    };
    // SessionStart's context comes before the goal, UserPromptSubmit's after it.
    expect(at('[SessionStart hook] the team writes tests first')).toBeLessThan(at('fix the parser'));
    expect(at('[SessionStart hook] ticket ABC-123: the parser drops trailing commas')).toBeLessThan(
      at('fix the parser'),
    );
    expect(at('[UserPromptSubmit hook] the prompt came from the issue tracker')).toBeGreaterThan(at('fix the parser'));
    expect(text).not.toContain('not a resumed session');
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.event, e.data.decision, e.data.ranOn])).toEqual([
      ['SessionStart', 'continue', 'sandbox'],
      ['SessionStart', 'continue', 'host'],
      ['UserPromptSubmit', 'continue', 'sandbox'],
    ]);
  });

  it('a UserPromptSubmit hook that refuses the prompt ends the operation before any model request', async () => {
    h.model.setScript([]);
    const before = answered(h.model.requests).length;
    const handle = await h.start({
      goal: 'drop the production database',
      repo: { kind: 'local', path: repo },
      hooks: { UserPromptSubmit: [{ hooks: [hook('block', 'prompts about production go through the on-call')] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.reason).toContain('a UserPromptSubmit hook refused the prompt: prompts about production go through');
    expect(answered(h.model.requests)).toHaveLength(before);
    expect((await hookDecisions(h.temporal.client, handle)).map((e) => e.data.decision)).toEqual(['block']);
  });

  it('a failing SessionStart hook with onError deny fails the operation before any model request', async () => {
    h.model.setScript([]);
    const before = answered(h.model.requests).length;
    const handle = await h.start({
      goal: 'start without the ticket',
      repo: { kind: 'local', path: repo },
      hooks: { SessionStart: [{ hooks: [hook('fail', '', { onError: 'deny' })] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.reason).toContain('a SessionStart hook failed: exit 1: the hook broke');
    expect(answered(h.model.requests)).toHaveLength(before);
    const [decided] = await hookDecisions(h.temporal.client, handle);
    expect(decided!.data).toMatchObject({ event: 'SessionStart', decision: 'block', onError: 'deny', exitCode: 1 });
  });

  it('a Stop hook sends the agent back once with its reason, then lets it end when its check passes', async () => {
    h.model.setScript([
      { text: 'all done' },
      {
        expect: (request) => expect(request.lastUserText).toContain('checks.ok is missing: the checks do not pass yet'),
        toolCalls: [{ id: 'toolu_checks', name: 'bash', input: { command: 'touch checks.ok' } }],
      },
      { text: 'done, and the checks pass' },
    ]);
    const handle = await h.start({
      goal: 'make the checks pass',
      repo: { kind: 'local', path: repo },
      hooks: { Stop: [{ hooks: [hook('until', 'checks.ok')] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('done, and the checks pass');
    expect(result.turns).toBe(3);
    h.model.assertScriptFinished();
    const [refused] = answered(h.model.requests).slice(-2);
    expect(messageText(bodyOf(refused!).messages.at(-1)!)).toBe(
      '[a Stop hook refused the end of your turn] checks.ok is missing: the checks do not pass yet',
    );
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.event, e.data.decision])).toEqual([
      ['Stop', 'block'],
      ['Stop', 'continue'],
    ]);
    expect((await hookRuns(handle)).length).toBe(2);
  });

  it('Stop hooks refuse at most maxStopBlocks times per operation', async () => {
    h.model.setScript([{ text: 'done' }, { text: 'still done' }, { text: 'really done' }]);
    const handle = await h.start({
      goal: 'end',
      repo: { kind: 'local', path: repo },
      maxStopBlocks: 2,
      // The JSON form of a refusal (`decision: "block"`), where the test above used exit 2.
      hooks: { Stop: [{ hooks: [hook('block-json', 'never good enough')] }] },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('really done');
    expect((await hookDecisions(h.temporal.client, handle)).map((e) => e.data.decision)).toEqual(['block', 'block']);
  });

  it("a PreCompact hook's context is kept across the compaction", async () => {
    const turns: ScriptedTurn[] = [
      { toolCalls: [{ id: 'toolu_print', name: 'bash', input: { command: "printf 'out %03000d' 0" } }] },
      {
        toolCalls: [
          {
            id: 'toolu_wait',
            name: 'bash',
            input: { command: 'while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released' },
          },
        ],
      },
      { text: 'compacted and done' },
    ];
    let next = 0;
    const script: ScriptFunction = (request) =>
      isCompactionRequest(request) ? { text: 'Summary: printed once, waited once.' } : turns[next++];
    h.model.setScript(script);
    const first = h.model.requests.length;
    const handle = await h.start({
      goal: 'print and wait',
      repo: { kind: 'local', path: repo },
      context: { windowTokens: 50_000, keepTurns: 1 },
      hooks: { PreCompact: [{ matcher: 'manual', hooks: [hook('context', 'keep: ticket ABC-123 is the goal')] }] },
    });
    await waitFor(async () => {
      const status = await handle.query(statusQuery).catch(() => undefined);
      return status?.phase === 'tools' && status.turn === 2;
    }, 'the waiting tool call');
    await handle.executeUpdate(compactUpdate, { args: [{}] });
    execFileSync('docker', [
      'exec',
      '-u',
      AGENT_USER,
      containerNameOf(handle.workflowId),
      'touch',
      '/workspace/release',
    ]);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.tokens.compactions).toBe(1);
    const requests = answered(h.model.requests.slice(first));
    const compaction = requests.findIndex((r) => isCompactionBody(r.body));
    // The compaction's request sees the hook's context, and so does the first request after it.
    expect(messageText(bodyOf(requests[compaction]!).messages.at(-1)!)).toContain('[PreCompact hook] keep');
    expect(compaction).toBeGreaterThan(0);
    const after = requests[compaction + 1]!;
    expect(bodyOf(after).messages.map(messageText).join('\n')).toContain(
      '[PreCompact hook] keep: ticket ABC-123 is the goal',
    );
    const decided = await hookDecisions(h.temporal.client, handle);
    expect(decided.map((e) => [e.data.event, e.data.decision])).toEqual([['PreCompact', 'continue']]);
  });

  it("a session's default hooks run before a prompt's own, and the lane's next operation starts as `resume`", async () => {
    const s = startSessionHarnessOn(h);
    const sessionId = s.newSession('hooks-session');
    h.model.setScript([
      { toolCalls: [{ id: 'toolu_sess_1', name: 'bash', input: { command: 'echo one' } }] },
      echoResultsTurn,
      { text: 'two' },
    ]);
    const starts = {
      SessionStart: [
        { matcher: 'startup', hooks: [hook('plain', 'a new lane')] },
        { matcher: 'resume', hooks: [hook('plain', 'the lane goes on')] },
      ],
    };
    const one = await s.submit(
      sessionId,
      {
        prompt: 'first prompt',
        hooks: { ...starts, PreToolUse: [{ matcher: 'bash', hooks: [hook('context', 'from the prompt')] }] },
      },
      {
        repo: { kind: 'local', path: repo },
        defaults: { hooks: { PreToolUse: [{ matcher: 'bash', hooks: [hook('context', 'from the session')] }] } },
      },
    );
    const first = await s.result(one.operationId);
    expect(first.state).toBe('completed');
    const [seen] = JSON.parse(first.finalText) as Array<{ content: string }>;
    expect(seen!.content).toContain('[PreToolUse hook] from the session\n[PreToolUse hook] from the prompt');
    expect(firstUserMessage()).not.toContain('the lane goes on');

    const two = await s.submit(sessionId, { prompt: 'second prompt', hooks: starts });
    expect((await s.result(two.operationId)).state).toBe('completed');
    const [last] = answered(h.model.requests).slice(-1);
    const text = messageText(bodyOf(last!).messages.at(-1)!);
    expect(text).toContain('[SessionStart hook] the lane goes on');
    expect(text).not.toContain('a new lane');
    await s.close();
  });
});
