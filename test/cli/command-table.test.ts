/**
 * The `agent` command table: one declaration per command gives its parse (strict `parseArgs`, values
 * through their schemas, one line naming the flag) and its help, and the parse loads no handler —
 * neither Temporal nor Docker — so `agent --help` and usage errors stay fast.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { helpText, parseAgentArgs, parseCommandLine, UsageError } from '../../cli/args';
import { COMMANDS } from '../../cli/commands';
import { PROJECT_ROOT } from '../../platform/paths';

const exec = promisify(execFile);

describe('the agent command table', () => {
  it('gives every command a help line in agent --help, and its flags in agent <command> --help', () => {
    const overview = helpText();
    for (const { spec } of COMMANDS) {
      const words = spec.path.join(' ');
      expect(overview).toContain(`agent ${words}`);
      expect(parseAgentArgs([...spec.path, '--help'])).toEqual({ kind: 'help', topic: spec.path });
      const own = helpText(spec.path);
      expect(own).toContain(`Usage: agent ${words}`);
      for (const flag of Object.keys(spec.flags)) expect(own).toContain(`--${flag}`);
    }
    expect(helpText(['sandbox'])).toContain('agent sandbox gc');
    expect(() => helpText(['fly'])).toThrow('unknown command "fly"');
  });

  it('reads help as agent help <command>, -h, and agent sandbox alone', () => {
    expect(parseAgentArgs(['help', 'task', 'start'])).toEqual({ kind: 'help', topic: ['task', 'start'] });
    expect(parseAgentArgs(['run', '-h'])).toEqual({ kind: 'help', topic: ['run'] });
    expect(parseAgentArgs(['sandbox'])).toEqual({ kind: 'help', topic: ['sandbox'] });
    expect(parseAgentArgs(['schedule', '--help'])).toEqual({ kind: 'help', topic: ['schedule'] });
    expect(parseCommandLine(['--help']).run).toBeUndefined();
  });

  it('parses agent sandbox ls, rm and gc, with their aliases', () => {
    expect(parseAgentArgs(['sandbox', 'ls'])).toEqual({ kind: 'sandbox-ls' });
    expect(parseAgentArgs(['sandbox', 'list'])).toEqual({ kind: 'sandbox-ls' });
    expect(parseAgentArgs(['sandbox', 'rm', 'abc'])).toEqual({
      kind: 'sandbox-rm',
      sessionId: 'abc',
      keepVolume: false,
    });
    expect(parseAgentArgs(['sandbox', 'rm', 'abc', '--keep-volume'])).toEqual({
      kind: 'sandbox-rm',
      sessionId: 'abc',
      keepVolume: true,
    });
    expect(parseAgentArgs(['sandbox', 'gc'])).toEqual({
      kind: 'sandbox-gc',
      olderThanMs: 86_400_000,
      volumes: false,
      environments: false,
    });
    expect(parseAgentArgs(['sandbox', 'gc', '--older-than=90s', '--volumes', '--environments'])).toEqual({
      kind: 'sandbox-gc',
      olderThanMs: 90_000,
      volumes: true,
      environments: true,
    });
    expect(parseAgentArgs(['sandbox', 'envs', '--json'])).toEqual({ kind: 'sandbox-envs', json: true });
    expect(parseAgentArgs(['schedule', 'list'])).toEqual({ kind: 'schedule-ls' });
    expect(parseAgentArgs(['schedule', 'rm', 'nightly'])).toEqual({ kind: 'schedule-delete', name: 'nightly' });
  });

  it.each([
    [['sandbox', 'gc', '--older-than'], 'agent sandbox gc: --older-than needs a value'],
    [['sandbox', 'frobnicate'], 'agent sandbox: expected ls, rm, gc or envs, got "frobnicate"'],
    [['session', 'show', 's1', '--json=no'], 'agent session show: --json takes no value'],
    [['run', '--repo', '--detach', 'g'], '--repo needs a value'],
    [['run', '--max-turns', '1.5', 'g'], '--max-turns must be a positive whole number, got "1.5"'],
    [['run', '--approvals', '[]', 'g'], '--approvals must be a JSON object'],
    [['events', 's1', '--type', ' , '], '--type needs at least one event type'],
    [
      ['task', 'start', '--repo', 'r', '--verify-timeout', '0s'],
      'agent task start: --verify-timeout must be a duration',
    ],
    [['task', 'start', '--bogus'], 'agent task start: unknown flag --bogus (allowed: --repo, --git'],
    [
      ['schedule', 'create', 'n', '--cron', '@daily', '--', '--repo', 'r', '--detach'],
      'agent schedule create: unknown flag --detach',
    ],
    [['schedule', 'create', 'n', '--cron', '@daily', '--', '--repo', 'r', 'x'], 'unexpected argument "x" after "--"'],
    [['schedule', 'pause', 'a', 'b'], 'agent schedule pause: expected one schedule name'],
    [['fact', 'get', 's1'], 'agent fact get: expected a session id and a key'],
    [['help', 'fly'], 'unknown command "fly"'],
  ])('refuses %j in one line naming the flag or argument', (argv, message) => {
    let error: unknown;
    try {
      const parsed = parseCommandLine(argv);
      if (parsed.command.kind === 'help') helpText(parsed.command.topic);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(message);
    expect((error as Error).message).not.toContain('\n');
  });

  it('loads no handler, Temporal client or Docker for agent --help or a usage error', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-modules-'));
    const hook = path.join(dir, 'loaded.cjs');
    fs.writeFileSync(
      hook,
      "process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(Object.keys(require.cache)) + '\\n'));\n",
    );
    const loader = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');
    const loaded = async (args: string[]): Promise<string[]> => {
      const run = exec(process.execPath, [
        '--require',
        hook,
        '--import',
        loader,
        path.join(PROJECT_ROOT, 'cli', 'agent.ts'),
        ...args,
      ]);
      const { stderr } = await run.catch((err: { stderr: string }) => err);
      const line = stderr.split('\n').find((l) => l.startsWith('LOADED '));
      return JSON.parse(line!.slice('LOADED '.length)) as string[];
    };
    try {
      for (const args of [['--help'], ['run', '--max-turns', 'x', 'goal'], ['sandbox', 'rm']]) {
        const modules = await loaded(args);
        expect(modules.some((file) => file.endsWith(path.join('cli', 'commands.ts')))).toBe(true);
        expect(
          modules.filter((file) =>
            /@temporalio|dockerode|\/workers\/|\/cli\/(run|sandbox|task|operations)\.ts$/.test(file),
          ),
        ).toEqual([]);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
