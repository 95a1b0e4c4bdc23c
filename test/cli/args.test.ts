import { parseAgentArgs, UsageError } from '../../cli/args';

describe('agent argument parsing', () => {
  it('parses run with its flags', () => {
    expect(parseAgentArgs(['run', '--repo', './r', '--max-turns', '7', '--detach', 'fix the test'])).toEqual({
      kind: 'run',
      goal: 'fix the test',
      repo: './r',
      id: undefined,
      model: undefined,
      maxTurns: 7,
      detach: true,
      withWorker: false,
      eagerSandbox: false,
      keepContainer: false,
    });
    expect(parseAgentArgs(['run', '--id=op-1', 'goal'])).toMatchObject({ kind: 'run', id: 'op-1', goal: 'goal' });
  });

  it('parses status, abort, steer, worker, server and sandbox', () => {
    expect(parseAgentArgs(['status', 'op-1', '--json'])).toEqual({ kind: 'status', id: 'op-1', json: true });
    expect(parseAgentArgs(['abort', 'op-1', '--reason', 'wrong repo'])).toEqual({
      kind: 'abort',
      id: 'op-1',
      reason: 'wrong repo',
    });
    expect(parseAgentArgs(['steer', 'op-1', 'use pnpm'])).toEqual({ kind: 'steer', id: 'op-1', text: 'use pnpm' });
    expect(parseAgentArgs(['worker'])).toEqual({ kind: 'worker', role: 'dev' });
    expect(parseAgentArgs(['worker', 'hands'])).toEqual({ kind: 'worker', role: 'hands' });
    expect(parseAgentArgs(['server', 'stop'])).toEqual({ kind: 'server', action: 'stop' });
    expect(parseAgentArgs(['sandbox', 'gc', '--older-than', '1h'])).toEqual({
      kind: 'sandbox',
      args: ['gc', '--older-than', '1h'],
    });
    expect(parseAgentArgs([])).toEqual({ kind: 'help' });
  });

  it.each([
    [['run'], 'agent run: missing goal'],
    [['run', 'a', 'b'], 'expected one goal, got 2 arguments'],
    [['run', '--max-turns', 'x', 'g'], '--max-turns must be a positive whole number, got "x"'],
    [['run', '--repo'], '--repo needs a value'],
    [['run', '--bogus', 'g'], 'unknown flag --bogus'],
    [['steer', 'op-1'], 'expected an operation id and the text'],
    [['steer', 'op-1', '  '], 'the text is empty'],
    [['worker', 'cook'], 'role must be brain, hands or dev, got "cook"'],
    [['fly'], 'unknown command "fly"'],
  ])('rejects %j with a message naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
