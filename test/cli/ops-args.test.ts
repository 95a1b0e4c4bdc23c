import { parseAgentArgs, UsageError } from '../../cli/args';

describe('agent setup / doctor arguments', () => {
  it('parses them', () => {
    expect(parseAgentArgs(['setup'])).toEqual({ kind: 'setup' });
    expect(parseAgentArgs(['doctor'])).toEqual({ kind: 'doctor', json: false });
    expect(parseAgentArgs(['doctor', '--json'])).toEqual({ kind: 'doctor', json: true });
  });

  it.each([
    [['setup', 'now'], 'agent setup takes no arguments, got "now"'],
    [['doctor', '--verbose'], 'unknown flag --verbose'],
    [['doctor', '--json=yes'], '--json takes no value'],
    [['doctor', 'ns'], 'agent doctor takes no arguments, got "ns"'],
  ])('rejects %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
