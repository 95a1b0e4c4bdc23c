/**
 * A tool call's run records read back (`run-records.ts`): each state of its latest attempt, with its
 * exit, process, output so far and journal; and the records an older version kept in the workspace,
 * read only when the journal store has no attempt, and only as the agent. Real Docker, real image.
 */
import { randomUUID } from 'node:crypto';
import { journalFor, parseJournal } from '../../activities/hands/journal';
import { JOURNAL_WRITER, legacyRecordsOf, recordsOf } from '../../activities/hands/journal-store';
import { runStatus } from '../../activities/hands/run-records';
import type { ExecOptions } from '../../activities/hands/run-wrapper';
import { handsFixture } from '../support/hands';

describe('run records (real Docker)', () => {
  const fx = handsFixture();
  const commands = fx.sandboxes.commands;
  const sessionId = fx.sessionId('records');
  const newToolCallId = () => `toolu_${randomUUID().slice(0, 12)}`;
  const commandOf = (toolCallId: string, command: string): ExecOptions => ({
    command,
    runBase: recordsOf(toolCallId).runBase,
    timeoutMs: 60_000,
    journal: journalFor({ toolCallId, tool: 'bash', replayPolicy: 'never', summary: 'bash', command }),
  });
  /** Runs a script that must succeed, as `user` (the agent unless given). */
  const run = async (script: string, args: string[], user?: string) => {
    const { exitCode, stderr } = await commands.script(sessionId, `set -e; ${script}`, args, user ? { user } : {});
    expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: '' });
  };

  beforeAll(() => fx.sandboxes.lifecycle.ensure(sessionId));
  afterAll(() => fx.cleanup());

  it('reads a call without records as none', async () => {
    const status = await runStatus(commands, sessionId, recordsOf(newToolCallId()));
    expect(status).toEqual({ attempt: 0, state: 'none', output: Buffer.alloc(0) });
  });

  it('reads a finished attempt with its exit, process, output and journal; the latest of several', async () => {
    const toolCallId = newToolCallId();
    const options = commandOf(toolCallId, 'echo "attempt $AGENT_ATTEMPT"; exit 2');
    await commands.exec(sessionId, options);
    const first = await runStatus(commands, sessionId, recordsOf(toolCallId));
    expect(first).toMatchObject({ attempt: 1, state: 'finished', exit: { exitCode: 2 } });
    expect(first.output.toString('utf8')).toBe('attempt 1\n');
    expect(parseJournal(first.journal)?.events.map((e) => e.type)).toEqual(['started', 'process', 'finished']);

    await commands.exec(sessionId, { ...options, journal: { ...options.journal!, mode: 'append' } });
    const second = await runStatus(commands, sessionId, recordsOf(toolCallId));
    expect(second).toMatchObject({ attempt: 2, state: 'finished' });
    expect(second.output.toString('utf8')).toBe('attempt 2\n');
  });

  it('reads a command that is still running as running, then finished', async () => {
    const toolCallId = newToolCallId();
    const fifo = `/tmp/records-${toolCallId}`;
    await fx.sh(sessionId, `mkfifo ${fifo}`);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const exec = commands.exec(sessionId, {
      ...commandOf(toolCallId, `echo waiting; read -r line < ${fifo}; echo "got $line"`),
      onProcess: () => started(),
    });
    await running;
    expect(await runStatus(commands, sessionId, recordsOf(toolCallId))).toMatchObject({
      attempt: 1,
      state: 'running',
      process: { pid: expect.any(Number), pgid: expect.any(Number), startTime: expect.any(Number) },
    });
    await fx.sh(sessionId, `echo go > ${fifo}`);
    await exec;
    const status = await runStatus(commands, sessionId, recordsOf(toolCallId));
    expect(status).toMatchObject({ attempt: 1, state: 'finished' });
    expect(status.output.toString('utf8')).toBe('waiting\ngot go\n');
  });

  it('reads an attempt whose command never started as unstarted, one that died without a result as dead', async () => {
    const unstarted = recordsOf(newToolCallId());
    // A wrapper that claimed the attempt and is gone (its pid names no process) before the command started.
    await run('mkdir -p "$1/1"; echo 999999 > "$1/1/wrapper"', [unstarted.runBase], JOURNAL_WRITER);
    expect(await runStatus(commands, sessionId, unstarted)).toMatchObject({ attempt: 1, state: 'unstarted' });

    const dead = recordsOf(newToolCallId());
    // The command started (its pid and start time recorded), wrote some output, and is gone.
    await run(
      'mkdir -p "$1/1"; echo "999999 12345" > "$1/1/pid"; printf partial > "$1/1/out"',
      [dead.runBase],
      JOURNAL_WRITER,
    );
    const status = await runStatus(commands, sessionId, dead);
    expect(status).toMatchObject({
      attempt: 1,
      state: 'dead',
      process: { pid: 999999, pgid: 999999, startTime: 12345 },
    });
    expect(status.output.toString('utf8')).toBe('partial');
  });

  it('falls back to the records an older version kept in the workspace only when the store has no attempt', async () => {
    const toolCallId = newToolCallId();
    const legacy = legacyRecordsOf(toolCallId);
    await run('mkdir -p "$1/1"; printf \'{"exitCode":5}\' > "$1/1/exit"; printf old > "$1/1/out"', [legacy.runBase]);
    const fromLegacy = await runStatus(commands, sessionId, recordsOf(toolCallId), legacy);
    expect(fromLegacy).toMatchObject({ attempt: 1, state: 'finished', exit: { exitCode: 5 } });
    expect(fromLegacy.output.toString('utf8')).toBe('old');

    // A first attempt finds the older one too, and runs nothing; the next attempt runs.
    const fresh = commandOf(toolCallId, 'echo new');
    expect(await commands.exec(sessionId, fresh)).toMatchObject({ kind: 'journal-exists' });
    await commands.exec(sessionId, { ...fresh, journal: { ...fresh.journal!, mode: 'append' } });
    const current = await runStatus(commands, sessionId, recordsOf(toolCallId), legacy);
    expect(current.output.toString('utf8')).toBe('new\n');
  });

  it('reads the older records as the agent, so a link the agent planted there reveals nothing of root', async () => {
    const toolCallId = newToolCallId();
    const legacy = legacyRecordsOf(toolCallId);
    const secret = `/var/lib/agent-journal/secret-${toolCallId}`;
    await run('umask 077; echo root-only > "$1"', [secret], JOURNAL_WRITER);
    await run('mkdir -p "$1/1"; printf \'{"exitCode":0}\' > "$1/1/exit"; ln -s "$2" "$1/1/out"', [
      legacy.runBase,
      secret,
    ]);
    const status = await runStatus(commands, sessionId, recordsOf(toolCallId), legacy);
    expect(status).toMatchObject({ attempt: 1, state: 'finished' });
    expect(status.output.toString('utf8')).not.toContain('root-only');
  });
});
