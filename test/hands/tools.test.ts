/** Every tool against the real engine and image, in one sandbox. */
import { randomUUID } from 'node:crypto';
import { dockerClient } from '../../platform/docker-engine';
import { createHandsActivities } from '../../activities/hands/activities';
import type { RunToolInput } from '../../common/hands';
import { containerNameOf } from '../../common/sandbox-names';
import { recordsOf } from '../../activities/hands/journal-store';
import { handsFixture, readOutcome } from '../support/hands';

describe('hands tools (real Docker)', () => {
  const fx = handsFixture();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  const sessionId = fx.sessionId('tools');
  const call = (name: string, input: unknown, extra: Partial<RunToolInput> = {}) =>
    hands.runTool({ sessionId, toolCallId: `toolu_${randomUUID().slice(0, 12)}`, name, input, ...extra });

  afterAll(() => fx.cleanup());

  it('runs as uid 1000 with no capabilities, no network and no Docker socket', async () => {
    const result = await call('bash', {
      command:
        'id -u; id -g; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; ls /var/run/docker.sock 2>&1 | head -1; ' +
        'grep -E "^(CapPrm|CapEff|CapAmb|NoNewPrivs):" /proc/self/status | tr -s "\\t" " "',
    });
    expect(result.isError).toBeUndefined();
    const [uid, gid, ...rest] = result.content.split('\n');
    expect(uid).toBe('1000');
    expect(gid).toBe('1000');
    expect(rest[0]).toBe('lo'); // the only interface
    expect(rest[1]).toMatch(/No such file/);
    expect(rest.slice(2, 6)).toEqual([
      'CapPrm: 0000000000000000',
      'CapEff: 0000000000000000',
      'CapAmb: 0000000000000000',
      'NoNewPrivs: 1',
    ]);

    const info = await dockerClient().getContainer(containerNameOf(sessionId)).inspect();
    expect(info.HostConfig.NetworkMode).toBe('none');
    // The container's own processes belong to the harness (the agent cannot signal them); every
    // capability is dropped except switching to the agent's uid and signalling its processes.
    expect(info.Config.User).toBe('0:0');
    expect(info.HostConfig.CapDrop).toEqual(['ALL']);
    expect([...(info.HostConfig.CapAdd ?? [])].sort()).toEqual(['KILL', 'SETGID', 'SETUID']);
    expect(info.HostConfig.SecurityOpt).toEqual(['no-new-privileges']);
    // A call without an operation id belongs to its session's own operation (`RunToolInput.operationId`).
    expect(info.Config.Labels).toMatchObject({
      'agent.harness': '1',
      'agent.sandbox': sessionId,
      'agent.operation': sessionId,
    });
    expect(info.HostConfig.Memory).toBeGreaterThan(0);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    // The harness's own programs (executor, file helpers) come from the host, read-only: not from the image.
    expect(info.Mounts.map((m) => m.Destination).sort()).toEqual([
      '/opt/agent/bin/agent-sandbox-tools',
      '/var/lib/agent-journal',
      '/workspace',
    ]);
    expect(info.Mounts.find((m) => m.Destination === '/opt/agent/bin/agent-sandbox-tools')).toMatchObject({
      Type: 'bind',
      RW: false,
    });
  });

  it('writes a file and reads it back, numbered, with offset and limit', async () => {
    const content = Array.from({ length: 30 }, (_, i) => `row ${i + 1}`).join('\n') + '\n';
    const written = await call('write_file', { path: 'notes/rows.txt', content });
    expect(readOutcome(written)).toMatchObject({ isError: false, synthetic: false });
    expect(written.content).toContain('Created notes/rows.txt: 201 bytes, 30 lines');

    const whole = await call('read_file', { path: 'notes/rows.txt' });
    expect(whole.isError).toBeUndefined();
    expect(whole.content.split('\n')[0]).toBe('     1\trow 1');
    expect(whole.content).toContain('    30\trow 30');

    const part = await call('read_file', { path: '/workspace/notes/rows.txt', offset: 10, limit: 3 });
    expect(part.content).toBe(
      '    10\trow 10\n    11\trow 11\n    12\trow 12\n[Showing lines 10-12 of 30 (limit=3). Call read_file with offset=13 to continue.]',
    );

    const missing = await call('read_file', { path: 'notes/nope.txt' });
    expect(missing.isError).toBe(true);
    expect(missing.content).toContain('File not found: notes/nope.txt');

    const rewritten = await call('write_file', { path: 'notes/rows.txt', content: 'short\n' });
    expect(rewritten.content).toContain('Replaced notes/rows.txt');
    expect(await fx.sh(sessionId, 'cat notes/rows.txt; stat -c %u notes/rows.txt')).toBe('short\n1000\n');
  });

  it('writes large content through a staged file', async () => {
    const content = 'abcdefghij'.repeat(20_000) + '\n'; // 200 KB: more than one argv entry may hold
    const written = await call('write_file', { path: 'big.txt', content });
    expect(written.isError).toBeUndefined();
    expect(await fx.sh(sessionId, 'stat -c %s big.txt; ls .agent/in | wc -l')).toBe('200001\n0\n');
  });

  it('edits exactly once, and explains zero or several matches', async () => {
    await call('write_file', { path: 'src/app.ts', content: 'const a = 1;\nconst b = 2;\nconst a2 = 1;\n' });

    const twice = await call('edit_file', { path: 'src/app.ts', old_text: '= 1;', new_text: '= 3;' });
    expect(twice.isError).toBe(true);
    expect(twice.content).toContain('old_text matches 2 times in src/app.ts (at lines 1, 3)');

    const none = await call('edit_file', { path: 'src/app.ts', old_text: 'const c = 9;', new_text: 'x' });
    expect(none.isError).toBe(true);
    expect(none.content).toContain('old_text was not found in src/app.ts');

    const wsOnly = await call('edit_file', { path: 'src/app.ts', old_text: '  const b = 2;  ', new_text: 'x' });
    expect(wsOnly.content).toContain('ignoring leading/trailing whitespace exists at line 2');

    const once = await call('edit_file', {
      path: 'src/app.ts',
      old_text: 'const b = 2;',
      new_text: 'const b = 20;\nconst c = 30;',
    });
    expect(readOutcome(once)).toMatchObject({ isError: false, synthetic: false });
    expect(once.content).toContain('Edited src/app.ts: replaced 1 line(s) at line 2 with 2 line(s)');
    expect(await fx.sh(sessionId, 'cat src/app.ts')).toBe(
      'const a = 1;\nconst b = 20;\nconst c = 30;\nconst a2 = 1;\n',
    );

    const missingFile = await call('edit_file', { path: 'src/none.ts', old_text: 'a', new_text: 'b' });
    expect(missingFile.content).toContain('File not found: src/none.ts');
  });

  it('treats a retried edit that is already applied as done', async () => {
    await call('write_file', { path: 'retry.txt', content: 'alpha\nbeta\n' });
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    const edit = {
      sessionId,
      toolCallId,
      name: 'edit_file',
      input: { path: 'retry.txt', old_text: 'beta', new_text: 'gamma' },
    };
    expect((await hands.runTool(edit)).isError).toBeUndefined();
    const retried = await hands.runTool(edit); // same tool call id: a retry
    expect(retried.isError).toBeUndefined();
    expect(retried.content).toContain('Edit already applied to retry.txt');
    // A fresh call with the same arguments is not a retry: the model hears that nothing matched.
    const fresh = await call('edit_file', { path: 'retry.txt', old_text: 'beta', new_text: 'gamma' });
    expect(fresh.isError).toBe(true);
    expect(fresh.content).toContain('new_text already appears at line 2');
  });

  it('lists files and greps with ripgrep, skipping .git and .agent', async () => {
    await fx.sh(
      sessionId,
      'mkdir -p lib/deep .git && echo "needle one" > lib/a.py && echo "NEEDLE two" > lib/deep/b.py && echo x > lib/c.txt && echo needle > .git/config',
    );
    const listed = await call('list_files', { path: 'lib' });
    expect(listed.content.split('\n')).toEqual(['lib/a.py', 'lib/c.txt', 'lib/deep/b.py']);
    const py = await call('list_files', { pattern: '*.py' });
    expect(py.content.split('\n')).toEqual(['lib/a.py', 'lib/deep/b.py']);
    const capped = await call('list_files', { path: 'lib', max_results: 2 });
    expect(capped.content).toContain('[showing the first 2 of 3 files');
    expect(capped.spill?.lines).toBe(3);
    const none = await call('list_files', { pattern: '*.rs' });
    expect(readOutcome(none)).toMatchObject({ isError: false, content: 'No files found matching *.rs.' });

    const hits = await call('grep', { pattern: 'needle', ignore_case: true });
    expect(hits.content.split('\n')).toEqual(['lib/a.py:1:needle one', 'lib/deep/b.py:1:NEEDLE two']);
    const scoped = await call('grep', { pattern: 'needle', path: 'lib', glob: '*.py' });
    expect(scoped.content).toBe('lib/a.py:1:needle one');
    const nothing = await call('grep', { pattern: 'haystack' });
    expect(readOutcome(nothing)).toMatchObject({ isError: false, content: 'No matches for "haystack".' });
    const bad = await call('grep', { pattern: '(' });
    expect(bad.isError).toBe(true);
    expect(bad.content).toContain('regex parse error');
  });

  it('reports bash exit codes; a non-zero exit is an error result, not an exception', async () => {
    const ok = await call('bash', { command: 'echo out; echo err >&2' });
    expect(readOutcome(ok)).toMatchObject({ isError: false, exitCode: 0, synthetic: false });
    expect(ok.content).toBe('out\nerr\n[exit code 0]');
    const failed = await call('bash', { command: 'echo failing; exit 3' });
    expect(failed).toMatchObject({ isError: true, exitCode: 3 });
    expect(failed.content).toBe('failing\n[exit code 3]');
    const silent = await call('bash', { command: 'true' });
    expect(silent.content).toBe('(no output)\n[exit code 0]');
  });

  it('lets a command open its own output by name (/dev/stdout, /dev/stderr), and leaks nothing of the wrapper into it', async () => {
    const named = await call('bash', {
      command:
        'echo one > /dev/stdout; echo two | tee /dev/stderr >/dev/null; echo "[${BASH_ENV-unset}] $AGENT_ATTEMPT"; ls /proc/self/fd | sort -n | tr "\\n" " "',
    });
    // fd 3 is the directory `ls` reads: the command itself has only stdin, stdout and stderr.
    expect(named.content).toBe('one\ntwo\n[unset] 1\n0 1 2 3 \n[exit code 0]');
  });

  it('kills the command and everything it started at the timeout', async () => {
    const started = Date.now();
    const result = await call('bash', { command: 'sleep 300 & echo started; sleep 300', timeout_ms: 1500 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.isError).toBe(true);
    expect(result.content).toContain(
      'started\n[timed out after 1.5 s: the command and everything it started were killed]',
    );
    expect(await fx.sh(sessionId, 'ps -eo comm= | grep -c "^sleep$" || true')).toBe('1\n'); // only the container's own `sleep infinity`
  });

  it('caps what a command may write and says how much was dropped', async () => {
    const capped = createHandsActivities({ sandboxes: fx.sandboxes, outputCaptureBytes: 10_000 });
    const result = await capped.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'bash',
      input: { command: 'seq 1 100000' },
    });
    expect(readOutcome(result)).toMatchObject({ isError: false, exitCode: 0, spill: { bytes: 10_000 } });
    expect(result.content).toContain(
      '[output capture stopped at 10000 bytes; the remaining 578895 bytes were discarded]\n[exit code 0]',
    );
  });

  it('refuses a call with an invented field and runs nothing', async () => {
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    const result = await hands.runTool({
      sessionId,
      toolCallId,
      name: 'edit_file',
      input: { path: 'x', old_text: 'a', new_text: 'b', oldText2: 'c' },
    });
    expect(readOutcome(result)).toMatchObject({ isError: true, synthetic: false });
    expect(result.content).toContain('"oldText2"');
    expect(await fx.sh(sessionId, `ls ${recordsOf(toolCallId).journalPath} 2>/dev/null | wc -l`)).toBe('0\n');
  });

  it('spills long output to a file and keeps head and tail; read_file reads the middle back', async () => {
    const toolCallId = `toolu_${randomUUID().slice(0, 12)}`;
    const result = await hands.runTool({ sessionId, toolCallId, name: 'bash', input: { command: 'seq 1 20000' } });
    const path = `/workspace/.agent/out/${toolCallId}.txt`;
    expect(result.isError).toBeUndefined();
    expect(result.spill).toEqual({ path, bytes: 108894, lines: 20000 });
    expect(result.content.startsWith('1\n2\n3\n')).toBe(true);
    expect(result.content).toContain('19999\n20000\n[exit code 0]');
    expect(result.content).toContain(
      `[output truncated: 108894 bytes, 20000 lines in total. Shown: lines 1-100 (bytes 0-291) and lines 19901-20000`,
    );
    expect(result.content).toContain(`Full output: ${path}`);
    expect(result.content).not.toContain('\n10000\n');
    expect(Buffer.byteLength(result.content)).toBeLessThan(16 * 1024);

    const middle = await call('read_file', { path, offset: 10000, limit: 3 });
    expect(middle.content).toBe(
      ' 10000\t10000\n 10001\t10001\n 10002\t10002\n[Showing lines 10000-10002 of 20000 (limit=3). Call read_file with offset=10003 to continue.]',
    );
  });
});
