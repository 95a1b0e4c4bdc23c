/**
 * The sandbox's executor (activities/hands/executor/): tool calls run through one persistent process
 * per sandbox that the agent cannot reach; when it is SIGKILLed mid-call the call follows its replay
 * policy (a `never` command never runs twice) and the next call starts a new executor; when it cannot
 * start, calls run with `docker exec` and the result says so. Real Docker, real image.
 *
 * A call is held "in flight" without timing by a named pipe: its command blocks reading (or, for
 * ripgrep, opening) it until the test writes to it.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { createHandsActivities } from '../../activities/hands/activities';
import { ALWAYS_EXCLUDED } from '../../activities/hands/checkpoints/sandbox-checkpoints';
import { JOURNAL_WRITER, recordsOf } from '../../activities/hands/journal-store';
import { readHandsSettings } from '../../activities/hands/settings';
import { parseJournal } from '../../activities/hands/journal';
import type { RunToolInput, ToolOutcome } from '../../common/hands';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { testPlatform } from '../support/env';
import { handsFixture, readOutcome } from '../support/hands';
import { waitFor } from '../support/operation-harness';

const docker = dockerClient();

/** Runs a script in the container with a plain `docker exec` (not through the executor under test). */
async function dockerExec(sessionId: string, script: string, user = '0:0'): Promise<string> {
  const exec = await docker.getContainer(containerNameOf(sessionId)).exec({
    Cmd: ['bash', '-c', script],
    User: user,
    WorkingDir: '/workspace',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out: Buffer[] = [];
  const stdout = new PassThrough().on('data', (c: Buffer) => out.push(c));
  const stderr = new PassThrough().on('data', (c: Buffer) => out.push(c));
  docker.modem.demuxStream(stream, stdout, stderr);
  await new Promise((resolve) => stream.on('end', resolve));
  const info = await exec.inspect();
  const text = Buffer.concat(out).toString('utf8');
  if (info.ExitCode !== 0) throw new Error(`docker exec failed (${info.ExitCode}): ${text}`);
  return text;
}

/** Pids of the executors running in the container. */
async function executorPids(sessionId: string): Promise<number[]> {
  const text = await dockerExec(
    sessionId,
    `for c in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$c" 2>/dev/null | grep -qx '/opt/agent/bin/agent-sandbox-tools executor ' && { p=\${c#/proc/}; echo \${p%/cmdline}; }; done; true`,
  );
  return text.split('\n').filter(Boolean).map(Number);
}

/**
 * Writes a line into the gate, for the command the call runs (again) to read. A call that ends
 * without opening the gate would leave the writer waiting for a reader: then the writer is let go
 * (a read-write open of the pipe does not wait) and the call's outcome is what the test sees.
 */
async function release(sessionId: string, outcome: Promise<unknown>, line: string): Promise<void> {
  const writer = dockerExec(sessionId, `echo '${line}' > gate`, '1000:1000');
  const ended = await Promise.race([
    writer.then(() => false),
    outcome.then(
      () => true,
      () => true,
    ),
  ]);
  if (!ended) return;
  await dockerExec(sessionId, 'exec 3<> gate', '1000:1000');
  await writer.catch(() => undefined);
}

/**
 * A stand-in for the sandbox tools binary on the host (the sandboxes mount it in place of the real one):
 * the sandbox's executor is whatever it does.
 */
/**
 * Sandbox tools whose `executor` is replaced by `executor` (bash, the subcommand's arguments in "$@"),
 * everything else being the real binary: the run wrapper, the file tools and the forwarder are the
 * tools' own, so only the executor misbehaves. The real binary travels appended to the script, which
 * unpacks it once per container (a container mounts only this one file).
 */
function standInTools(name: string, executor: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-tools-'));
  const file = path.join(dir, name);
  const header = (offset: string) =>
    [
      '#!/bin/bash',
      'if [ "$1" = executor ]; then',
      executor,
      'fi',
      'real=/tmp/agent-sandbox-tools-real',
      `[ -x "$real" ] || { tail -c +${offset} "$0" > "$real.$$" && chmod 755 "$real.$$" && mv -f "$real.$$" "$real"; }`,
      'exec "$real" "$@"',
      '',
    ].join('\n');
  // The offset is written at a fixed width, so the header's length does not depend on it.
  const length = Buffer.byteLength(header('0'.repeat(10)));
  const script = header(String(length + 1).padStart(10, '0'));
  fs.writeFileSync(file, Buffer.concat([Buffer.from(script), fs.readFileSync(testPlatform().sandboxTools)]), {
    mode: 0o755,
  });
  return file;
}

/** The host's folder of the pids cgroup of a process (cgroup v1's pids hierarchy, else the unified one). */
function pidsCgroupOf(pid: number): string {
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const v1 = lines.find((line) => line.split(':')[1]?.split(',').includes('pids'));
  if (v1) return `/sys/fs/cgroup/pids${v1.split(':')[2]}`;
  const unified = lines.find((line) => line.startsWith('0::'))!.slice(3);
  return fs.existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? `/sys/fs/cgroup${unified}`
    : `/sys/fs/cgroup/unified${unified}`;
}

/** Forks until the sandbox's pid limit refuses, then keeps every process (the first one too) asleep. */
const FILL_PIDS = [
  'import os, time',
  'while True:',
  '    try:',
  '        if os.fork() == 0:',
  '            break',
  '    except OSError:',
  '        break',
  'time.sleep(100000)',
].join('\n');

describe('sandbox executor (real Docker)', () => {
  const fx = handsFixture();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  const call = (sessionId: string, name: string, input: unknown): RunToolInput & { toolCallId: string } => ({
    sessionId,
    toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
    name,
    input,
  });
  /** Waits (polling the records, not the clock) until the call's command runs; its pid and wrapper pid. */
  const commandRunning = async (sessionId: string, toolCallId: string): Promise<{ pid: number; wrapper: number }> => {
    const dir = `${recordsOf(toolCallId).runBase}/1`;
    for (let i = 0; i < 400; i++) {
      const text = await dockerExec(sessionId, `cat ${dir}/pid ${dir}/wrapper 2>/dev/null; true`);
      const [pid, , wrapper] = text.split(/\s+/).map(Number);
      if (pid && wrapper) return { pid, wrapper };
    }
    throw new Error(`the command of ${toolCallId} never started`);
  };
  /** A `safe` grep of the named pipe `gate`, running (it waits to open the pipe), and the executor it runs under. */
  const gatedSearch = async (name: string) => {
    const sessionId = fx.sessionId(name);
    await hands.runTool(call(sessionId, 'bash', { command: 'mkfifo gate' }));
    const executor = (await fx.sandboxes.commands.executorPid(sessionId))!;
    const search = call(sessionId, 'grep', { pattern: 'needle', path: 'gate' });
    const outcome = hands.runTool(search);
    return { sessionId, executor, search, outcome, ...(await commandRunning(sessionId, search.toolCallId)) };
  };
  /** The attempts the call's journal says were started. */
  const attemptsStarted = async (sessionId: string, toolCallId: string): Promise<number[]> => {
    const journal = parseJournal(await dockerExec(sessionId, `cat ${recordsOf(toolCallId).journalPath}`));
    return journal!.events.filter((e) => e.type === 'started').map((e) => (e as { attempt: number }).attempt);
  };
  const count = async (sessionId: string, file: string) =>
    Number((await dockerExec(sessionId, `touch ${file}; wc -l < ${file}`, '1000:1000')).trim());

  afterAll(async () => {
    await fx.cleanup();
    fx.sandboxes.commands.close();
  });

  it('runs every call of a sandbox through one executor the agent can neither signal nor read', async () => {
    const sessionId = fx.sessionId('executor');
    const first = await hands.runTool(call(sessionId, 'bash', { command: 'id -u; pwd' }));
    expect(readOutcome(first)).toMatchObject({ content: '1000\n/workspace\n[exit code 0]', isError: false });
    expect(first.executorFallback).toBeUndefined();
    const pid = await fx.sandboxes.commands.executorPid(sessionId);
    expect(pid).toBeGreaterThan(1);
    const probe = await hands.runTool(
      call(sessionId, 'bash', {
        command: `kill -0 ${pid} 2>&1; ls /proc/${pid}/fd 2>&1; cat /proc/${pid}/environ 2>&1 | head -c 80; true`,
      }),
    );
    expect(probe.content).toMatch(/kill: \(\d+\) - Operation not permitted/);
    expect(probe.content).toMatch(/ls: cannot open directory '\/proc\/\d+\/fd': Permission denied/);
    expect(probe.content).toMatch(/cat: \/proc\/\d+\/environ: Permission denied/);
    const parallel = await Promise.all(
      ['a', 'b', 'c'].map((x) => hands.runTool(call(sessionId, 'bash', { command: `echo ${x}` }))),
    );
    expect(parallel.map((o) => o.content)).toEqual(['a\n[exit code 0]', 'b\n[exit code 0]', 'c\n[exit code 0]']);
    expect(await fx.sandboxes.commands.executorPid(sessionId)).toBe(pid);
    expect(await executorPids(sessionId)).toEqual([pid]);
  });

  it('answers the checkpoint probe in-process: with the pid limit reached, the probe still answers', async () => {
    const sessionId = fx.sessionId('probe-inline');
    await hands.runTool(call(sessionId, 'bash', { command: 'echo a > a.txt' }));
    const executor = await fx.sandboxes.commands.executorPid(sessionId);
    const recorded = await hands.checkpointWorkspace({
      sessionId,
      operationId: 'op-probe-inline',
      turn: 1,
      kind: 'turn',
      exclude: [],
    });
    const commit = (recorded as { commit: string }).commit;
    const probe = async () => {
      const run = await fx.sandboxes.commands.tool(sessionId, ['checkpoint-probe', '0', ...ALWAYS_EXCLUDED], {
        user: JOURNAL_WRITER,
      });
      return { exitCode: run.exitCode, stdout: run.stdout.toString('utf8'), stderr: run.stderr };
    };
    const unchanged = { exitCode: 0, stdout: `@@checkpoint ${commit} ${commit} 0 0\n`, stderr: '' };
    expect(await probe()).toEqual(unchanged);

    // The agent takes every pid the sandbox may have: a process started for the probe would be refused.
    const info = await docker.getContainer(containerNameOf(sessionId)).inspect();
    const pids = (file: string) => fs.readFileSync(`${pidsCgroupOf(info.State.Pid)}/${file}`, 'utf8').trim();
    const exec = await docker.getContainer(containerNameOf(sessionId)).exec({
      Cmd: ['python3', '-c', FILL_PIDS],
      User: '1000:1000',
      WorkingDir: '/tmp',
    });
    await exec.start({ Detach: true });
    await waitFor(async () => pids('pids.current') === pids('pids.max'), 'the pid limit to be reached');
    await expect(fx.sandboxes.commands.script(sessionId, 'true', [], { user: JOURNAL_WRITER })).rejects.toThrow(
      /could not start a command in the sandbox/,
    );
    expect(await probe()).toEqual(unchanged);
    expect(await probe()).toEqual(unchanged);
    expect(await fx.sandboxes.commands.executorPid(sessionId)).toBe(executor);
  });

  it('a never call whose executor is SIGKILLed mid-call runs once and returns its real result; the next call restarts the executor', async () => {
    const sessionId = fx.sessionId('executor-kill');
    await hands.runTool(call(sessionId, 'bash', { command: 'mkfifo gate' }));
    const killed = (await fx.sandboxes.commands.executorPid(sessionId))!;
    const running = call(sessionId, 'bash', { command: 'echo ran >> runs.log; cat gate; echo after' });
    const outcome = hands.runTool(running);
    await commandRunning(sessionId, running.toolCallId);
    await dockerExec(sessionId, `kill -KILL ${killed}`);
    // The command goes on without the executor; released, it finishes and its result is recorded.
    await release(sessionId, outcome, 'released');
    expect(readOutcome(await outcome)).toMatchObject({ content: 'released\nafter\n[exit code 0]', synthetic: false });
    expect(await count(sessionId, 'runs.log')).toBe(1);

    const next = await hands.runTool(call(sessionId, 'bash', { command: 'echo next' }));
    expect(next.content).toBe('next\n[exit code 0]');
    const restarted = await fx.sandboxes.commands.executorPid(sessionId);
    expect(restarted).not.toBe(killed);
    expect(await executorPids(sessionId)).toEqual([restarted]);
  });

  it('a never call that dies with its executor is reported interrupted and is not run again', async () => {
    const sessionId = fx.sessionId('executor-never');
    await hands.runTool(call(sessionId, 'bash', { command: 'mkfifo gate' }));
    const executor = (await fx.sandboxes.commands.executorPid(sessionId))!;
    const running = call(sessionId, 'bash', { command: 'echo ran >> runs.log; echo partial; cat gate' });
    const outcome = hands.runTool(running);
    const { pid, wrapper } = await commandRunning(sessionId, running.toolCallId);
    // Its pid is recorded before the command runs: kill only once its first output is captured.
    const out = `${recordsOf(running.toolCallId).runBase}/1/out`;
    for (let i = 0; i < 400 && !(await dockerExec(sessionId, `cat ${out} 2>/dev/null; true`)).includes('partial'); i++);
    await dockerExec(sessionId, `kill -KILL ${wrapper} ${executor}; kill -KILL -- -${pid}`);
    const result: ToolOutcome = await outcome;
    expect(result).toMatchObject({ isError: true, synthetic: true });
    expect(result.content).toMatch(/^\[interrupted: this bash call was already started \(attempt 1, process \d+/);
    expect(result.content).toContain('partial');
    expect(await count(sessionId, 'runs.log')).toBe(1);
    const journal = parseJournal(await dockerExec(sessionId, `cat ${recordsOf(running.toolCallId).journalPath}`));
    expect(journal!.events.filter((e) => e.type === 'started')).toHaveLength(1);
    expect((await hands.runTool(call(sessionId, 'bash', { command: 'echo next' }))).content).toBe(
      'next\n[exit code 0]',
    );
    expect(await fx.sandboxes.commands.executorPid(sessionId)).not.toBe(executor);
  });

  it('a safe call that dies with its executor runs again and returns a real result', async () => {
    const { sessionId, executor, search, outcome, pid, wrapper } = await gatedSearch('executor-safe');
    await dockerExec(sessionId, `kill -KILL ${wrapper} ${executor}; kill -KILL -- -${pid}`);
    // The second attempt opens the pipe again; this writer waits for it.
    await release(sessionId, outcome, 'a needle here');
    expect(readOutcome(await outcome)).toMatchObject({ isError: false, synthetic: false });
    expect((await outcome).content).toContain('a needle here');
    expect(await attemptsStarted(sessionId, search.toolCallId)).toEqual([1, 2]);
    expect(await fx.sandboxes.commands.executorPid(sessionId)).not.toBe(executor);
  });

  it('a call whose run wrapper alone is killed follows its replay policy on the same executor', async () => {
    const { sessionId, executor, search, outcome, pid, wrapper } = await gatedSearch('wrapper-killed');
    await dockerExec(sessionId, `kill -KILL ${wrapper}; kill -KILL -- -${pid}`);
    await release(sessionId, outcome, 'a needle here');
    expect(readOutcome(await outcome)).toMatchObject({ isError: false, synthetic: false });
    expect((await outcome).content).toContain('a needle here');
    expect(await attemptsStarted(sessionId, search.toolCallId)).toEqual([1, 2]);
    expect(await fx.sandboxes.commands.executorPid(sessionId)).toBe(executor);
  });

  it('falls back to docker exec when the executor cannot start, and says so in the result', async () => {
    // An executor that exits at once: it never says it is ready.
    const tools = standInTools('executor-exits', 'echo "executor: cannot start" >&2; exit 1');
    const broken = handsFixture({ sandboxTools: tools });
    try {
      const sessionId = broken.sessionId('executor-fallback');
      const outcome = await createHandsActivities({ sandboxes: broken.sandboxes }).runTool(
        call(sessionId, 'bash', { command: 'echo via docker exec' }),
      );
      expect(readOutcome(outcome)).toMatchObject({
        content: 'via docker exec\n[exit code 0]',
        isError: false,
        synthetic: false,
      });
      expect(outcome.executorFallback).toMatch(/^the sandbox executor could not start: /);
      expect(await broken.sandboxes.commands.executorPid(sessionId)).toBeUndefined();
      expect(await executorPids(sessionId)).toEqual([]);
    } finally {
      await broken.cleanup();
      broken.sandboxes.commands.close();
      fs.rmSync(path.dirname(tools), { recursive: true, force: true });
    }
  });

  it('an executor that keeps dying before it finishes a command is given up for docker exec, said in the result', async () => {
    // An executor that says it is ready, takes one request and exits without answering it.
    const tools = standInTools(
      'dying-executor',
      ['printf \'{"t":"ready","pid":%d}\\n\' $$', 'read -r line', 'exit 0'].join('\n'),
    );
    const dying = handsFixture({ sandboxTools: tools });
    const dyingHands = createHandsActivities({ sandboxes: dying.sandboxes });
    try {
      const sessionId = dying.sessionId('executor-broken');
      // The first call loses two executors (its command, then the journal read), and fails retryably.
      await expect(
        dyingHands.runTool(call(sessionId, 'bash', { command: 'echo one >> runs.log' })),
      ).rejects.toMatchObject({ type: 'SandboxUnavailable', nonRetryable: false });
      // The third loss in a row switches the sandbox to docker exec, so the next call goes through.
      const second = call(sessionId, 'bash', { command: 'echo two >> runs.log; cat runs.log' });
      const outcome = await dyingHands.runTool(second);
      expect(readOutcome(outcome)).toMatchObject({ content: 'two\n[exit code 0]', isError: false, synthetic: false });
      expect(outcome.executorFallback).toMatch(/3 times in a row before it finished a command/);
      expect(await count(sessionId, 'runs.log')).toBe(1);
    } finally {
      await dying.cleanup();
      dying.sandboxes.commands.close();
      fs.rmSync(path.dirname(tools), { recursive: true, force: true });
    }
  });

  it('is switched off with AGENT_SANDBOX_EXECUTOR=off (a docker exec per command), and the setting is checked', async () => {
    const defaults = { imageDir: '/tmp/images' };
    expect(readHandsSettings({}, defaults).executor).toBe(true);
    expect(readHandsSettings({ AGENT_SANDBOX_EXECUTOR: 'off' }, defaults).executor).toBe(false);
    expect(() => readHandsSettings({ AGENT_SANDBOX_EXECUTOR: 'sometimes' }, defaults)).toThrow(
      'AGENT_SANDBOX_EXECUTOR: "sometimes" is not "on" or "off"',
    );
    const plain = handsFixture({ executor: false });
    try {
      const sessionId = plain.sessionId('executor-off');
      const outcome = await createHandsActivities({ sandboxes: plain.sandboxes }).runTool(
        call(sessionId, 'bash', { command: 'echo plain' }),
      );
      expect(readOutcome(outcome)).toMatchObject({ content: 'plain\n[exit code 0]', isError: false });
      expect(outcome.executorFallback).toBeUndefined();
      expect(await executorPids(sessionId)).toEqual([]);
    } finally {
      await plain.cleanup();
    }
  });
});
