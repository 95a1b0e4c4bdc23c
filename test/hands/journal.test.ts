/**
 * The workspace journal decides what a retried attempt of the same tool call does. A `never` tool
 * (bash) must never run twice: an append-only effects file counts how often the command really ran.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { dockerClient } from '../../platform/docker-engine';
import { createHandsActivities } from '../../activities/hands/activities';
import type { RunToolInput } from '../../common/hands';
import { parseJournal } from '../../activities/hands/journal';
import { JOURNAL_WRITER, legacyRecordsOf, recordsOf } from '../../activities/hands/journal-store';
import { runStatus } from '../../activities/hands/run-records';
import { containerNameOf } from '../../common/sandbox-names';
import { handsFixture, readOutcome } from '../support/hands';
import { testPlatform } from '../support/env';

describe('tool-call journal and replay (real Docker)', () => {
  const fx = handsFixture();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  const sessionId = fx.sessionId('journal');
  const newCall = (command: string): RunToolInput & { toolCallId: string } => ({
    sessionId,
    toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
    name: 'bash',
    input: { command },
  });
  const effects = async (file: string) => Number((await fx.sh(sessionId, `touch ${file}; wc -l < ${file}`)).trim());
  const journalOf = async (toolCallId: string) =>
    parseJournal(await fx.sh(sessionId, `cat ${recordsOf(toolCallId).journalPath}`));
  const waitForProcess = async (toolCallId: string) => {
    for (let i = 0; i < 200; i++) {
      const journal = await journalOf(toolCallId).catch(() => undefined);
      if (journal?.events.some((e) => e.type === 'process')) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the command of ${toolCallId} never started`);
  };

  /** Runs a script as the journal store's writer (root in the sandbox, like the run wrapper). */
  const asWriter = async (script: string) => {
    const { exitCode, stdout, stderr } = await fx.sandboxes.commands.script(sessionId, script, [], {
      user: JOURNAL_WRITER,
    });
    if (exitCode !== 0) throw new Error(`sandbox script failed (${exitCode}): ${stderr}`);
    return stdout.toString('utf8').trim();
  };

  afterAll(() => fx.cleanup());

  it('journals started, process and finished with the result', async () => {
    const call = newCall('echo hi; exit 4');
    const outcome = await hands.runTool(call);
    expect(readOutcome(outcome)).toMatchObject({ isError: true, exitCode: 4, synthetic: false });
    const journal = await journalOf(call.toolCallId);
    expect(journal).toMatchObject({
      version: 1,
      toolCallId: call.toolCallId,
      tool: 'bash',
      replayPolicy: 'never',
      summary: 'bash: echo hi; exit 4',
    });
    expect(journal!.events.map((e) => e.type)).toEqual(['started', 'process', 'finished']);
    expect(journal!.events[0]).toMatchObject({
      type: 'started',
      command: 'echo hi; exit 4',
      attempt: 1,
      runDir: `/var/lib/agent-journal/run/${call.toolCallId}/1`,
    });
    expect(journal!.events[2]).toMatchObject({
      type: 'finished',
      outputPath: `/workspace/.agent/out/${call.toolCallId}.txt`,
      result: { exitCode: 4, outputBytes: 3, timedOut: false, cancelled: false },
    });
  });

  it('returns the recorded result of a finished call instead of running it again', async () => {
    const call = newCall('echo ran >> effects-finished.log; wc -l < effects-finished.log');
    const first = await hands.runTool(call);
    const retry = await hands.runTool(call);
    expect(retry).toEqual(first);
    expect(first.content).toBe('1\n[exit code 0]');
    expect(await effects('effects-finished.log')).toBe(1);
  });

  it('waits for a call whose process is still running after its worker died, and returns its real result', async () => {
    const call = newCall('echo begin; sleep 3; echo ran >> effects-running.log; echo end');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(__dirname, '../support/hands-child.ts'),
        JSON.stringify(call),
        testPlatform().sandboxImage,
      ],
      {
        cwd: path.join(__dirname, '../..'),
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await waitForProcess(call.toolCallId);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    expect(await effects('effects-running.log')).toBe(0); // still running

    const started = Date.now();
    const retry = await hands.runTool(call);
    expect(Date.now() - started).toBeGreaterThan(500); // it waited
    expect(readOutcome(retry)).toMatchObject({
      isError: false,
      synthetic: false,
      exitCode: 0,
      content: 'begin\nend\n[exit code 0]',
    });
    expect(await effects('effects-running.log')).toBe(1);
    const journal = await journalOf(call.toolCallId);
    expect(journal!.events.filter((e) => e.type === 'started')).toHaveLength(1);
  });

  it('reads a call whose command has ended but whose wrapper is still recording the result as running, not dead', async () => {
    // The window between the command's exit and its wrapper writing `exit`: a retry polling then must
    // wait, not report the call interrupted. The wrapper is played by a process named after the run base.
    const records = recordsOf(`toolu_${randomUUID().slice(0, 12)}`);
    const d = `${records.runBase}/1`;
    const wrapper = await asWriter(
      // the command's pid: a process that has ended
      `mkdir -p ${d}; sh -c 'echo $$ 1' > ${d}/pid; ` +
        `bash -c 'sleep 60; :' wrapper ${records.runBase} </dev/null >/dev/null 2>&1 & echo $! > ${d}/wrapper; ` +
        // until it runs as the wrapper (not the forked copy of this script)
        `until [ "$(tr '\\0' '\\n' < /proc/$!/cmdline | sed -n 4p)" = wrapper ]; do sleep 0.05; done; ` +
        `tr '\\0' ' ' < /proc/$!/cmdline`,
    );
    expect(wrapper).toContain(records.runBase);
    expect(await runStatus(fx.sandboxes.commands, sessionId, records)).toMatchObject({ attempt: 1, state: 'running' });

    await asWriter(`kill $(cat ${d}/wrapper)`);
    expect(await runStatus(fx.sandboxes.commands, sessionId, records)).toMatchObject({ attempt: 1, state: 'dead' });

    await asWriter(`printf '{"exitCode":0}' > ${d}/exit`);
    expect(await runStatus(fx.sandboxes.commands, sessionId, records)).toMatchObject({ attempt: 1, state: 'finished' });
  });

  it('forks nothing but the command: no watchdog process of the wrapper can hold the call waiting', async () => {
    // A bash wrapper's watchdog (a subshell and its `sleep <timeout>`) once kept the output pipe open
    // after the command ended, and the call waited for the whole timeout. The wrapper's watchdog is now
    // a timer in the wrapper itself: its only child is the command's session leader.
    const call = newCall('sleep 2; echo done');
    const running = hands.runTool(call);
    await waitForProcess(call.toolCallId);
    const runDir = `${recordsOf(call.toolCallId).runBase}/1`;
    const children = await asWriter(`pgrep -P "$(cat ${runDir}/wrapper)"; cut -d' ' -f1 ${runDir}/pid`);
    const [child, leader] = children.trim().split('\n');
    expect(child).toMatch(/^\d+$/);
    expect(children.trim().split('\n')).toEqual([child, child]);
    expect(leader).toBe(child);
    expect(readOutcome(await running)).toMatchObject({ isError: false, content: 'done\n[exit code 0]' });
  });

  it('reports a started call whose process died as interrupted, with its partial output, and never runs it again', async () => {
    const call = newCall('echo partial; echo ran >> effects-dead.log; sleep 60; echo never');
    const running = hands.runTool(call);
    await waitForProcess(call.toolCallId);
    await new Promise((resolve) => setTimeout(resolve, 200)); // let `echo partial` reach the output file
    await dockerClient().getContainer(containerNameOf(sessionId)).kill();

    const outcome = await running;
    expect(outcome).toMatchObject({
      isError: true,
      synthetic: true,
      sandboxReplaced: 'the previous container was gone (exited 137)',
    });
    expect(outcome.content).toContain(
      '[sandbox restarted: the previous container was gone (exited 137); /workspace is preserved]',
    );
    expect(outcome.content).toContain('[interrupted: this bash call was already started (attempt 1');
    expect(outcome.content).toContain('Its outcome is unknown');
    expect(outcome.content).toContain('It was not run again. The workspace is preserved.');
    expect(outcome.content).toContain('Partial output captured before the interruption (8 bytes):\npartial');

    const again = await hands.runTool(call);
    expect(again).toMatchObject({ isError: true, synthetic: true });
    expect(again.sandboxReplaced).toBeUndefined();
    expect(await effects('effects-dead.log')).toBe(1);
  });

  it('runs safe tools again on a retry', async () => {
    await fx.sh(sessionId, 'echo content > safe.txt');
    const call: RunToolInput & { toolCallId: string } = {
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'read_file',
      input: { path: 'safe.txt' },
    };
    const first = await hands.runTool(call);
    await fx.sh(sessionId, 'echo changed > safe.txt');
    const second = await hands.runTool(call);
    expect(first.content).toBe('     1\tcontent');
    expect(second.content).toBe('     1\tchanged');
    expect(await fx.sh(sessionId, `ls ${recordsOf(call.toolCallId).runBase}`)).toBe('1\n2\n');
  });
  it('reads the records an older version kept in the workspace when the journal volume has none, as the agent', async () => {
    const call = newCall('echo ran >> effects-legacy.log; wc -l < effects-legacy.log');
    const first = await hands.runTool(call);
    const now = recordsOf(call.toolCallId);
    const old = legacyRecordsOf(call.toolCallId);
    // Where a harness version before the journal volume left a finished call's records: in the workspace, agent-owned.
    const run = async (script: string, user?: string) => {
      const { exitCode, stderr } = await fx.sandboxes.commands.script(
        sessionId,
        `set -e; ${script}`,
        [now.runBase, now.journalPath, old.runBase, old.journalPath],
        user ? { user } : {},
      );
      expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: '' });
    };
    await run(
      'cp -r "$1" /tmp/legacy-run; cp "$2" /tmp/legacy-journal; chmod -R a+rX /tmp/legacy-*; rm -rf "$1" "$2"',
      '0:0',
    );
    await run('mkdir -p "${3%/*}" "${4%/*}"; cp -r /tmp/legacy-run "$3"; cp /tmp/legacy-journal "$4"');
    const retry = await hands.runTool(call);
    expect(retry).toEqual(first);
    expect(await effects('effects-legacy.log')).toBe(1);
  });
});
