/**
 * Bad input through the `agent` CLI: every command with a missing, extra or invalid argument answers
 * with one line that names the argument and a non-zero exit code (2 for a usage mistake), and starts
 * nothing. Every case runs the CLI's `main` as `bin/agent` does; a few also run as the real process.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { agentCli, agentInProcess as runInProcess, useTestServerEnv, type CommandOutcome } from '../support/bad-input';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';

interface CliCase {
  name: string;
  argv: string[];
  code: number;
  /** The whole error line after `error: `, or a fragment of it. */
  message: string;
  /** An operation id the case must not have started. */
  notStarted?: string;
}

const id = (n: number) => `bad-cli-${n}-${process.pid}`;

const CASES: CliCase[] = [
  {
    name: 'run without a goal',
    argv: ['run', '--id', id(1)],
    code: 2,
    message: 'agent run: missing goal',
    notStarted: id(1),
  },
  {
    name: 'run with two goals',
    argv: ['run', '--id', id(2), 'fix', 'it'],
    code: 2,
    message: 'agent run: expected one goal, got 2 arguments (quote it)',
    notStarted: id(2),
  },
  {
    name: 'run --max-turns that is not a number',
    argv: ['run', '--id', id(3), '--max-turns', 'x', 'goal'],
    code: 2,
    message: '--max-turns must be a positive whole number, got "x"',
    notStarted: id(3),
  },
  {
    name: 'run --max-turns over the limit',
    argv: ['run', '--id', id(4), '--max-turns', '99999', 'goal'],
    code: 2,
    message: '--max-turns must be at most 10000, got 99999',
    notStarted: id(4),
  },
  { name: 'run --repo without a value', argv: ['run', 'goal', '--repo'], code: 2, message: '--repo needs a value' },
  { name: 'run --repo= empty', argv: ['run', '--repo=', 'goal'], code: 2, message: '--repo needs a value' },
  {
    name: 'run --repo that does not exist',
    argv: ['run', '--id', id(7), '--repo', '/no/such/dir', 'goal'],
    code: 1,
    message: '--repo /no/such/dir: no such directory',
    notStarted: id(7),
  },
  { name: 'run with an unknown flag', argv: ['run', '--bogus', 'goal'], code: 2, message: 'unknown flag --bogus' },
  {
    name: 'run with a short flag',
    argv: ['run', '-x', 'goal'],
    code: 2,
    message: 'unknown flag -x (text that starts with "-" goes after --)',
  },
  {
    name: 'run --id with a space',
    argv: ['run', '--id', 'my op', 'goal'],
    code: 2,
    message: '--id must be at most 200 characters without spaces or control characters, got "my op"',
  },
  {
    name: 'run --detach with a value',
    argv: ['run', '--detach=yes', 'goal'],
    code: 2,
    message: '--detach takes no value',
  },
  { name: 'status without an id', argv: ['status'], code: 2, message: 'agent status: missing operation id' },
  {
    name: 'status with two ids',
    argv: ['status', 'a', 'b'],
    code: 2,
    message: 'agent status: expected one operation id, got 2 arguments (quote it)',
  },
  { name: 'status --json with a value', argv: ['status', 'a', '--json=1'], code: 2, message: '--json takes no value' },
  { name: 'abort without an id', argv: ['abort'], code: 2, message: 'agent abort: missing operation id' },
  {
    name: 'abort --reason without a value',
    argv: ['abort', 'a', '--reason'],
    code: 2,
    message: '--reason needs a value',
  },
  { name: 'abort with an unknown flag', argv: ['abort', 'a', '--force'], code: 2, message: 'unknown flag --force' },
  {
    name: 'steer without the text',
    argv: ['steer', 'a'],
    code: 2,
    message: 'agent steer: expected an operation id and the text (quote it)',
  },
  { name: 'steer with blank text', argv: ['steer', 'a', '   '], code: 2, message: 'agent steer: the text is empty' },
  {
    name: 'steer with three arguments',
    argv: ['steer', 'a', 'use', 'pnpm'],
    code: 2,
    message: 'agent steer: expected an operation id and the text (quote it)',
  },
  { name: 'diff without an id', argv: ['diff'], code: 2, message: 'agent diff: missing operation id' },
  {
    name: 'diff with two ids',
    argv: ['diff', 'a', 'b'],
    code: 2,
    message: 'agent diff: expected one operation id, got 2 arguments (quote it)',
  },
  {
    name: 'worker with an unknown role',
    argv: ['worker', 'cook'],
    code: 2,
    message: 'agent worker: role must be brain, hands or dev, got "cook"',
  },
  {
    name: 'worker with an extra argument',
    argv: ['worker', 'dev', 'now'],
    code: 2,
    message: 'agent worker: expected at most one role, got 2 arguments',
  },
  {
    name: 'server with an unknown action',
    argv: ['server', 'restart'],
    code: 2,
    message: 'agent server: action must be start, stop or status, got "restart"',
  },
  {
    name: 'server with an extra argument',
    argv: ['server', 'status', 'now'],
    code: 2,
    message: 'agent server: expected at most one action, got 2 arguments',
  },
  {
    name: 'sandbox rm without an id',
    argv: ['sandbox', 'rm'],
    code: 2,
    message: 'sandbox rm needs exactly one sandbox id: agent sandbox rm <id>',
  },
  {
    name: 'sandbox rm with an unknown option',
    argv: ['sandbox', 'rm', 'a', '--all'],
    code: 2,
    message: 'sandbox rm: unknown option --all (allowed: --keep-volume)',
  },
  {
    name: 'sandbox gc with a bad duration',
    argv: ['sandbox', 'gc', '--older-than', 'soon'],
    code: 2,
    message: 'not a duration: "soon" (use e.g. 90s, 30m, 1h, 2d)',
  },
  {
    name: 'sandbox ls with an argument',
    argv: ['sandbox', 'ls', 'all'],
    code: 2,
    message: 'sandbox ls takes no arguments (got all)',
  },
  { name: 'an unknown command', argv: ['fly'], code: 2, message: 'unknown command "fly": run `agent help`' },
];

describe('bad input through the agent CLI', () => {
  let temporal: TestTemporal;
  let restoreEnv: () => void = () => undefined;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    restoreEnv = useTestServerEnv();
  });
  afterAll(async () => {
    restoreEnv();
    await temporal?.close();
  });

  const expectRefused = (outcome: CommandOutcome, c: CliCase) => {
    const lines = outcome.stderr.trim().split('\n');
    expect(lines).toEqual([expect.stringContaining(c.message)]);
    expect(lines[0]).toMatch(/^(error: |sandbox |unknown |not a duration)/);
    expect(outcome.code).toBe(c.code);
    expect(outcome.stdout).toBe('');
  };

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    expectRefused(await runInProcess(c.argv), c);
    if (c.notStarted) {
      await expect(temporal.client.workflow.getHandle(c.notStarted).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
    }
  });

  it.each([
    'run --max-turns over the limit',
    'steer with blank text',
    'sandbox gc with a bad duration',
    'an unknown command',
  ])(
    'as the real process too: %s',
    async (name) => {
      const c = CASES.find((x) => x.name === name)!;
      expectRefused(await agentCli(c.argv), c);
    },
    180_000,
  );
});
