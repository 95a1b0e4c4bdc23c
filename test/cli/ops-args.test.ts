import { parseAgentArgs, UsageError } from '../../cli/args';

describe('agent setup / doctor / trace arguments', () => {
  it('parses them', () => {
    expect(parseAgentArgs(['setup'])).toEqual({ kind: 'setup' });
    expect(parseAgentArgs(['doctor'])).toEqual({ kind: 'doctor', json: false });
    expect(parseAgentArgs(['doctor', '--json'])).toEqual({ kind: 'doctor', json: true });
    expect(parseAgentArgs(['trace', 'op-1'])).toEqual({
      kind: 'trace',
      id: 'op-1',
      jaeger: 'http://127.0.0.1:16686',
      json: false,
    });
    expect(parseAgentArgs(['trace', 'task-7', '--jaeger', 'https://jaeger.example:443/', '--json'])).toEqual({
      kind: 'trace',
      id: 'task-7',
      jaeger: 'https://jaeger.example:443',
      json: true,
    });
  });

  it.each([
    [['setup', 'now'], 'agent setup takes no arguments, got "now"'],
    [['doctor', '--verbose'], 'unknown flag --verbose'],
    [['doctor', '--json=yes'], '--json takes no value'],
    [['doctor', 'ns'], 'agent doctor takes no arguments, got "ns"'],
    [['trace'], 'operation or task id'],
    [['trace', 'op-1', '--jaeger', 'jaeger:16686'], '--jaeger must be an http(s) URL, got "jaeger:16686"'],
  ])('rejects %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
