/**
 * Commands in a sandbox (`sandbox-commands.ts`): a tool command under the run wrapper — its exit,
 * output, process identity, output cap, timeout, cancellation and journal modes — and the hands' own
 * scripts, as the agent or as the journal's writer. Real Docker, real image.
 */
import { randomUUID } from 'node:crypto';
import { SandboxError } from '../../activities/hands/docker-calls';
import { journalFor, parseJournal } from '../../activities/hands/journal';
import { JOURNAL_WRITER, recordsOf } from '../../activities/hands/journal-store';
import type { ExecOptions, ProcessIdentity } from '../../activities/hands/run-wrapper';
import { SandboxCommands } from '../../activities/hands/sandbox-commands';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture } from '../support/hands';

describe('sandbox commands (real Docker)', () => {
  const fx = handsFixture();
  const commands = fx.sandboxes.commands;
  const sessionId = fx.sessionId('commands');
  /** A command of a new tool call, with its records where the run-tool activity keeps them. */
  const newCommand = (command: string, extra: Partial<ExecOptions> = {}): ExecOptions => {
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    return { command, runBase: recordsOf(toolCallId).runBase, timeoutMs: 60_000, ...extra };
  };
  const finished = async (options: ExecOptions) => {
    const result = await commands.exec(sessionId, options);
    if (result.kind !== 'finished') throw new Error(`expected a finished run, got ${JSON.stringify(result)}`);
    return result;
  };

  beforeAll(() => fx.sandboxes.lifecycle.ensure(sessionId));
  afterAll(async () => {
    await fx.cleanup();
    commands.close();
  });

  it('runs a command as the agent and returns its exit, output and process identity', async () => {
    const seen: ProcessIdentity[] = [];
    const options = newCommand('echo "$1 from $(id -u) in $PWD, attempt $AGENT_ATTEMPT"; exit 3', {
      args: ['hello'],
      outputLink: `/workspace/.agent/out/commands-${randomUUID().slice(0, 8)}.txt`,
      onProcess: (identity) => seen.push(identity),
    });
    const run = await finished(options);
    expect(run.exit).toMatchObject({ exitCode: 3, timedOut: false, cancelled: false, droppedBytes: 0 });
    expect(run.output.toString('utf8')).toBe('hello from 1000 in /workspace, attempt 1\n');
    expect(run.process).toEqual({ pid: run.exit.pid, pgid: run.exit.pid, attempt: 1, runDir: `${options.runBase}/1` });
    expect(seen).toEqual([run.process]);
    // The model reads long output back from the workspace copy.
    expect(run.outputPath).toBe(options.outputLink);
    expect(await fx.sh(sessionId, `cat ${options.outputLink}`)).toBe(run.output.toString('utf8'));
  });

  it('keeps output up to the cap and counts the rest', async () => {
    const run = await finished(newCommand('head -c 5000 /dev/zero', { maxOutputBytes: 1000 }));
    expect(run.output).toHaveLength(1000);
    expect(run.exit).toMatchObject({ exitCode: 0, outputBytes: 1000, droppedBytes: 4000 });
  });

  it('stops a command at its timeout inside the container', async () => {
    const run = await finished(newCommand('echo begun; sleep 300', { timeoutMs: 500 }));
    expect(run.exit.timedOut).toBe(true);
    expect(run.output.toString('utf8')).toBe('begun\n');
    expect((await fx.sh(sessionId, 'pgrep -u 1000 -xc sleep || true')).trim()).toBe('0');
  });

  it("kills the command's whole process group when its signal aborts", async () => {
    const controller = new AbortController();
    const run = await finished(
      newCommand('sleep 301 & sleep 302; echo never', {
        signal: controller.signal,
        onProcess: () => controller.abort(),
      }),
    );
    expect(run.exit.cancelled).toBe(true);
    expect(run.output.toString('utf8')).not.toContain('never');
    expect((await fx.sh(sessionId, 'pgrep -u 1000 -xc sleep || true')).trim()).toBe('0');
  });

  it('kills a process group it did not start, as another worker would after a crash', async () => {
    const other = new SandboxCommands({ docker: dockerClient(), executor: false });
    const run = await finished(
      newCommand('sleep 303', {
        onProcess: (identity) => void other.kill(sessionId, identity.pgid, { runDir: identity.runDir }),
      }),
    );
    expect(run.exit.cancelled).toBe(true);
    await expect(commands.kill(sessionId, 1)).rejects.toThrow(SandboxError);
    await expect(commands.kill(sessionId, 1)).rejects.toMatchObject({ kind: 'invalid' });
  });

  it('runs a fresh journalled command once, reports the journal to a second fresh run, and appends attempts', async () => {
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    const journal = journalFor({
      toolCallId,
      tool: 'bash',
      replayPolicy: 'never',
      summary: 'bash: count',
      command: 'count',
    });
    const options: ExecOptions = {
      command: 'echo ran >> effects-fresh.log; wc -l < effects-fresh.log',
      runBase: recordsOf(toolCallId).runBase,
      timeoutMs: 60_000,
      journal,
    };
    expect((await finished(options)).output.toString('utf8')).toBe('1\n');

    const again = await commands.exec(sessionId, options);
    expect(again.kind).toBe('journal-exists');
    const reported = again.kind === 'journal-exists' ? parseJournal(again.journal) : undefined;
    expect(reported).toMatchObject({
      toolCallId,
      events: [{ type: 'started' }, { type: 'process' }, { type: 'finished' }],
    });

    const appended = await finished({ ...options, journal: { ...journal, mode: 'append' } });
    expect(appended.process.attempt).toBe(2);
    expect(appended.output.toString('utf8')).toBe('2\n');
  });

  it('reports a container that stops under a command as lost', async () => {
    const lostId = fx.sessionId('commands-lost');
    await fx.sandboxes.lifecycle.ensure(lostId);
    const result = await commands.exec(
      lostId,
      newCommand('sleep 304', {
        onProcess: () => void dockerClient().getContainer(containerNameOf(lostId)).kill(),
      }),
    );
    expect(result).toMatchObject({
      kind: 'lost',
      reason: 'the sandbox container stopped while the command ran (exited 137)',
      process: { attempt: 1 },
    });
  });

  it("runs the hands' scripts as the agent, or as the journal's writer when asked", async () => {
    const asAgent = await commands.script(sessionId, 'id -u; echo "$1" >&2; exit 7', ['to stderr']);
    expect(asAgent).toEqual({ exitCode: 7, stdout: Buffer.from('1000\n'), stderr: 'to stderr\n' });
    const asWriter = await commands.script(sessionId, 'id -u; touch /var/lib/agent-journal/written', [], {
      user: JOURNAL_WRITER,
    });
    expect(asWriter).toMatchObject({ exitCode: 0, stderr: '' });
    expect(asWriter.stdout.toString('utf8')).toBe('0\n');
    const denied = await commands.script(sessionId, 'touch /var/lib/agent-journal/by-agent');
    expect(denied.exitCode).not.toBe(0);
  });
});
