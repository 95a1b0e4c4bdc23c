/**
 * Rewind as a fork, end to end on the real Temporal server, Docker and the scripted Messages API:
 * a ten-turn operation that changes its workspace with the edit tools and with shell commands, its
 * checkpoints as `agent checkpoints` lists them, and `agent rewind` to one of its turns — a new lane
 * whose first request extends the original's request N as an exact prefix (the original's reply N
 * and the answers to its tool calls, then the new prompt) on a workspace equal to the original's at
 * turn N, shell-written files included; `--code-only`; the original's workspace untouched; and the
 * refusals, which name the flag at fault.
 */
import { execFileSync } from 'node:child_process';
import type { WorkflowFailedError } from '@temporalio/client';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import type { OperationResult } from '../../common/operation';
import { REWIND_FAILURE_TYPES, REWIND_WORKFLOW_TYPE } from '../../common/rewind';
import { sessionWorkflowId } from '../../common/session';
import { volumeNameOf } from '../../common/sandbox-names';
import { canonicalJson } from '../../scripted-model/prompt';
import { prefixViolation } from '../../scripted-model/prefix';
import type { ScriptedTurn } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { agentInProcess, useTestServerEnv } from '../support/bad-input';
import { conversations, type RequestBody } from '../support/conversations';
import { testPlatform } from '../support/env';
import { startOperationHarness } from '../support/operation-harness';
import { startSessionHarnessOn, type SessionHarness } from '../support/session-harness';

/**
 * Every file and symbolic link of /workspace: path and a digest of its bytes (or its target); without
 * node_modules (left out of checkpoints) and the tool outputs the harness saves (each tool call adds one).
 */
const MANIFEST = `cd /workspace && find . \\( -path ./node_modules -o -path ./.agent/out \\) -prune -o \\( -type f -o -type l \\) -print0 | sort -z |
  while IFS= read -r -d '' f; do
    if [ -L "$f" ]; then printf '%s -> %s\\n' "$f" "$(readlink "$f")"; else printf '%s %s\\n' "$f" "$(sha256sum < "$f" | cut -c1-16)"; fi
  done`;
/** The manifest as a tool call prints it, between markers (a tool result adds its own lines). */
const PRINT_MANIFEST = `echo '<<<'; ${MANIFEST}; echo '>>>'`;
const manifestIn = (text: string): string => {
  const match = /<<<\n([\s\S]*?)>>>/.exec(text);
  if (!match) throw new Error(`no manifest in: ${text.slice(0, 500)}`);
  return match[1]!;
};

const commit = (message: string) => `git -c user.name=a -c user.email=a@b.invalid commit -qam ${message}`;

/** The original operation: ten turns; the workspace changes by shell commands and edit tools. */
const ORIGINAL: ScriptedTurn[] = [
  {
    label: '1 git init',
    toolCalls: [
      {
        name: 'bash',
        input: { command: `git init -q && echo one > a.txt && git add a.txt && ${commit('one')}` },
      },
    ],
  },
  { label: '2 write', toolCalls: [{ name: 'write_file', input: { path: 'notes.md', content: 'two\n' } }] },
  { label: '3 read', toolCalls: [{ name: 'read_file', input: { path: 'a.txt' } }] },
  {
    label: '4 bash writes',
    toolCalls: [
      {
        name: 'bash',
        input: {
          command:
            'echo four >> a.txt && printf "shell\\n" > from-bash.txt && chmod 600 from-bash.txt && ' +
            'mkdir -p node_modules/x && echo x > node_modules/x/i.js',
        },
      },
    ],
  },
  {
    label: '5 edit',
    toolCalls: [{ name: 'edit_file', input: { path: 'notes.md', old_text: 'two', new_text: 'five' } }],
  },
  { label: '6 manifest', toolCalls: [{ name: 'bash', input: { command: PRINT_MANIFEST } }] },
  {
    label: '7 bash changes',
    toolCalls: [{ name: 'bash', input: { command: `rm from-bash.txt && echo seven > a.txt && ${commit('seven')}` } }],
  },
  { label: '8 write', toolCalls: [{ name: 'write_file', input: { path: 'later.txt', content: 'eight\n' } }] },
  { label: '9 bash', toolCalls: [{ name: 'bash', input: { command: 'echo nine > nine.txt' } }] },
  { label: '10 done', text: 'ten turns done' },
];

/** A rewound lane: it looks at its workspace, changes it, ends. */
const REWOUND = (label: string): ScriptedTurn[] => [
  { label: `${label} manifest`, toolCalls: [{ name: 'bash', input: { command: PRINT_MANIFEST } }] },
  { label: `${label} write`, toolCalls: [{ name: 'write_file', input: { path: 'new.txt', content: label } }] },
  { label: `${label} done`, text: `${label} done` },
];

const TO_TURN = 5;

const messagesOf = (r: RecordedRequest) => (r.body as RequestBody).messages;
const bodyField = (r: RecordedRequest, field: string) => canonicalJson((r.body as Record<string, unknown>)[field]);
const lastText = (r: RecordedRequest) =>
  (messagesOf(r).at(-1)?.content ?? []).flatMap((block) => (block.type === 'text' ? [String(block.text)] : []));
const toolResultText = (r: RecordedRequest): string =>
  (messagesOf(r).at(-1)?.content ?? [])
    .filter((block) => block.type === 'tool_result')
    .map((block) =>
      typeof block.content === 'string'
        ? block.content
        : (block.content as Array<{ text?: string }>).map((part) => part.text ?? '').join(''),
    )
    .join('\n');

/** The manifest of a session's workspace volume, read as the agent in a container of its own. */
function volumeManifest(sessionId: string): string {
  return execFileSync(
    'docker',
    [
      'run',
      '--rm',
      '--network=none',
      '-u',
      AGENT_USER,
      '-v',
      `${volumeNameOf(sessionId)}:/workspace:ro`,
      testPlatform().sandboxImage,
      'bash',
      '-c',
      MANIFEST,
    ],
    { encoding: 'utf8' },
  );
}

describe('rewind as a fork (real Temporal, Docker and scripted model)', () => {
  let s: SessionHarness;
  let restoreEnv: () => void;
  const savedQueue = process.env.AGENT_BRAIN_QUEUE;
  beforeAll(async () => {
    s = startSessionHarnessOn(await startOperationHarness(), { closeHarness: true });
    restoreEnv = useTestServerEnv();
    process.env.AGENT_BRAIN_QUEUE = s.h.brainQueue;
  });
  afterAll(async () => {
    restoreEnv();
    if (savedQueue === undefined) delete process.env.AGENT_BRAIN_QUEUE;
    else process.env.AGENT_BRAIN_QUEUE = savedQueue;
    await s.close();
  });

  const agent = async (...args: string[]) => agentInProcess(args);
  /** `agent rewind … --json`: the session it made (registered for clean-up) and its last line. */
  async function rewind(...args: string[]): Promise<{ sessionId: string; lane: string; operationId: string | null }> {
    const sessionId = s.newSession('rewound');
    const out = await agent('rewind', ...args, '--session', sessionId, '--json');
    expect(out).toMatchObject({ code: 0 });
    const last = JSON.parse(out.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(Object.keys(last).sort()).toEqual(['lane', 'operationId', 'sessionId']);
    expect(last.sessionId).toBe(sessionId);
    return last as { sessionId: string; lane: string; operationId: string | null };
  }

  it('forks turn N of a ten-turn operation: its conversation as an exact prefix, its workspace as it was', async () => {
    s.h.model.setScript(
      conversations({
        'rewind ten turns': ORIGINAL,
        'rewind try again': REWOUND('again'),
        'rewind code only': REWOUND('code-only'),
      }),
    );
    const sessionId = s.newSession('rewind-orig');
    const accepted = await s.submit(sessionId, { prompt: 'rewind ten turns', lane: 'work' });
    const original: OperationResult = await s.result(accepted.operationId);
    expect(original).toMatchObject({ state: 'completed', finalText: 'ten turns done', turns: 10 });
    const originalRequests = s.h.model.requests.filter((r) => r.status === 200 && r.path === '/v1/messages');
    expect(originalRequests).toHaveLength(10);
    const originalAtEnd = volumeManifest(sessionId);
    // The workspace after turn 5, as turn 6's tool call printed it.
    const atTurn = manifestIn(toolResultText(originalRequests[TO_TURN + 1]!));
    expect(atTurn).toContain('./from-bash.txt ');
    expect(atTurn).toContain('./.git/HEAD ');
    expect(originalAtEnd).not.toContain('./from-bash.txt ');

    // agent checkpoints: a base one before the first change, then each turn whose tools could change files.
    const listed = await agent('checkpoints', accepted.operationId, '--json');
    expect(listed.code).toBe(0);
    const checkpoints = JSON.parse(listed.stdout) as Array<{
      turn: number;
      kind: string;
      filesChanged: number;
      changed: string[];
      at: string;
    }>;
    expect(checkpoints.map((c) => `${c.kind} ${c.turn}`)).toEqual([
      'base 0',
      'turn 1',
      'turn 2',
      'turn 4',
      'turn 5',
      'turn 6',
      'turn 7',
      'turn 8',
      'turn 9',
    ]);
    const byTurn = new Map(checkpoints.map((c) => [`${c.kind} ${c.turn}`, c]));
    const changedFiles = (key: string) => byTurn.get(key)!.changed.filter((file) => !file.startsWith('.agent/out/'));
    expect(changedFiles('turn 4').sort()).toEqual(['a.txt', 'from-bash.txt']);
    expect(changedFiles('turn 5')).toEqual(['notes.md']);
    expect(changedFiles('turn 6')).toEqual([]);
    for (const c of checkpoints) expect(Number.isNaN(Date.parse(c.at))).toBe(false);
    const text = await agent('checkpoints', accepted.operationId);
    expect(text.stdout).toMatch(/turn 4 .* files changed \(.*a\.txt, from-bash\.txt/);

    // agent rewind --to-turn 5 --prompt: a new session whose lane continues the conversation after turn 5.
    const before = s.h.model.requests.length;
    const forked = await rewind(accepted.operationId, '--to-turn', String(TO_TURN), '--prompt', 'rewind try again');
    expect(forked.lane).toBe('work');
    expect(forked.operationId).not.toBeNull();
    const again = await s.result(forked.operationId!);
    expect(again).toMatchObject({ state: 'completed', finalText: 'again done' });
    const forkRequests = s.h.model.requests.slice(before).filter((r) => r.status === 200);
    const first = forkRequests[0]!;
    const requestN = originalRequests[TO_TURN - 1]!;
    const requestAfterN = originalRequests[TO_TURN]!;
    // Byte for byte what the original sent as request N (system, tools, model), then its reply and tool answers.
    for (const field of ['system', 'tools', 'model']) expect(bodyField(first, field)).toBe(bodyField(requestN, field));
    expect(prefixViolation(messagesOf(requestN), messagesOf(first))).toBeNull();
    expect(messagesOf(first)).toHaveLength(messagesOf(requestN).length + 2);
    expect(prefixViolation(messagesOf(requestAfterN).slice(0, -1), messagesOf(first))).toBeNull();
    // The answers to turn 5's tool calls, as the original's next request carried them (its tail breakpoint aside).
    const answers = (r: RecordedRequest) =>
      messagesOf(r)
        .at(-1)!
        .content.filter((b) => b.type === 'tool_result')
        .map((block) => ({ ...block, cache_control: undefined }));
    expect(canonicalJson(answers(first))).toBe(canonicalJson(answers(requestAfterN)));
    expect(lastText(first).join('\n')).toContain('rewind try again');
    // Its workspace was the original's at turn 5 (node_modules is left out of checkpoints).
    expect(manifestIn(toolResultText(forkRequests[1]!))).toBe(atTurn);
    const forkSession = await s.status(forked.sessionId);
    expect(forkSession.lanes.find((lane) => lane.name === 'work')).toMatchObject({
      rewoundFrom: { operationId: accepted.operationId, turn: TO_TURN },
    });

    // --code-only: the files of turn 5 in a new workspace, and a fresh conversation.
    const beforeCodeOnly = s.h.model.requests.length;
    const codeOnly = await rewind(
      accepted.operationId,
      '--to-turn',
      String(TO_TURN),
      '--code-only',
      '--lane',
      'retry',
      '--prompt',
      'rewind code only',
    );
    expect(codeOnly.lane).toBe('retry');
    expect(await s.result(codeOnly.operationId!)).toMatchObject({ state: 'completed', finalText: 'code-only done' });
    const codeOnlyRequests = s.h.model.requests.slice(beforeCodeOnly).filter((r) => r.status === 200);
    expect(messagesOf(codeOnlyRequests[0]!)).toHaveLength(1);
    expect(manifestIn(toolResultText(codeOnlyRequests[1]!))).toBe(atTurn);
    expect(volumeManifest(codeOnly.sessionId)).toContain('./new.txt ');

    // A rewind into a session that exists is refused, naming the flag: one an earlier rewind made, or any other.
    for (const taken of [forked.sessionId, sessionId]) {
      const refused = await agent('rewind', accepted.operationId, '--to-turn', '2', '--session', taken);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(
        new RegExp(`--session ${taken}: session ${taken} (was made by an earlier rewind|has a workspace already)`),
      );
    }

    // The original lane and workspace are as they were; the forks wrote into their own.
    expect(volumeManifest(sessionId)).toBe(originalAtEnd);
    expect(volumeManifest(forked.sessionId)).toContain('./new.txt ');
    const originalSession = await s.status(sessionId);
    expect(originalSession.lanes.map((lane) => lane.name)).toEqual(['work']);
    expect(originalSession.operations).toHaveLength(1);
    s.h.model.assertScriptFinished();
  });

  it('refuses a turn the operation does not have and an unknown operation, naming the flag', async () => {
    s.h.model.setScript(conversations({ 'rewind short': [{ label: 'short done', text: 'short done' }] }));
    const sessionId = s.newSession('rewind-short');
    const accepted = await s.submit(sessionId, { prompt: 'rewind short' });
    await s.result(accepted.operationId);

    const refusedSession = s.newSession('rw-bad');
    const tooFar = await agent('rewind', accepted.operationId, '--to-turn', '7', '--session', refusedSession);
    expect(tooFar.code).not.toBe(0);
    expect(tooFar.stderr).toMatch(/--to-turn 7: operation .* has 1 completed turn: there is no turn 7/);
    const noCheckpoint = await agent('rewind', accepted.operationId, '--to-turn', '1');
    expect(noCheckpoint.code).not.toBe(0);
    expect(noCheckpoint.stderr).toMatch(/--to-turn 1: operation .* has no checkpoint for turn 1/);
    const zero = await agent('rewind', accepted.operationId, '--to-turn', '0');
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain('--to-turn');
    const missing = await agent('rewind', 'no-such-operation', '--to-turn', '1');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('<operation> no-such-operation: no operation no-such-operation');
    const unknownList = await agent('checkpoints', 'no-such-operation');
    expect(unknownList.code).not.toBe(0);
    expect(unknownList.stderr).toContain('<operation> no-such-operation: no operation no-such-operation');
    // Started without the CLI, the rewind workflow and the operation name the field at fault.
    const { client } = s.h.temporal;
    const rewindFailure = await client.workflow
      .execute(REWIND_WORKFLOW_TYPE, {
        workflowId: `rewind-bad-${accepted.operationId}`,
        taskQueue: s.h.brainQueue,
        args: [{ operationId: accepted.operationId, toTurn: 'two' }],
      })
      .catch((err: unknown) => err);
    expect((rewindFailure as WorkflowFailedError).cause).toMatchObject({
      type: REWIND_FAILURE_TYPES.invalidInput,
      message: expect.stringContaining('toTurn: expected a number, got a string'),
    });
    const operationFailure = await s.h
      .start({ goal: 'x', checkpoints: { exclude: ['# not a pattern'] } })
      .then((handle) => handle.result())
      .catch((err: unknown) => err);
    expect((operationFailure as WorkflowFailedError).cause).toMatchObject({
      type: 'InvalidOperationInput',
      message: expect.stringContaining('checkpoints.exclude.0: must not start with "#"'),
    });
    // Nothing was made for a refused rewind: no session workflow.
    await expect(
      s.h.temporal.client.workflow.getHandle(sessionWorkflowId(refusedSession)).describe(),
    ).rejects.toBeDefined();
  });
});
