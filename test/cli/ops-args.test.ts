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

describe('agent deploy arguments', () => {
  it('parses status, set-current, ramp and delete', () => {
    expect(parseAgentArgs(['deploy', 'status'])).toEqual({ kind: 'deploy-status', json: false });
    expect(parseAgentArgs(['deploy', 'status', '--deployment', 'agent-brain', '--json'])).toEqual({
      kind: 'deploy-status',
      deployment: 'agent-brain',
      json: true,
    });
    expect(parseAgentArgs(['deploy', 'set-current', 'agent+0123456789abcdef'])).toEqual({
      kind: 'deploy-set-current',
      buildId: 'agent+0123456789abcdef',
      allowNoPollers: false,
    });
    expect(parseAgentArgs(['deploy', 'set-current', 'unversioned', '--allow-no-pollers'])).toEqual({
      kind: 'deploy-set-current',
      buildId: null,
      allowNoPollers: true,
    });
    expect(parseAgentArgs(['deploy', 'ramp', 'v1.4.2', '12.5%', '--deployment', 'brains'])).toEqual({
      kind: 'deploy-ramp',
      deployment: 'brains',
      buildId: 'v1.4.2',
      percent: 12.5,
    });
    expect(parseAgentArgs(['deploy', 'ramp', 'v1.4.2', '0'])).toMatchObject({ percent: 0 });
    expect(parseAgentArgs(['deploy', 'delete', 'v1.4.1'])).toEqual({ kind: 'deploy-delete', buildId: 'v1.4.1' });
  });

  it.each([
    [['deploy', 'set-current'], 'build id'],
    [['deploy', 'set-current', 'a:b'], 'agent deploy set-current: "a:b" is not a build id'],
    [['deploy', 'ramp', 'v2'], 'agent deploy ramp'],
    [['deploy', 'ramp', 'v2', '101'], 'agent deploy ramp: "101" is not a percentage from 0 to 100'],
    [['deploy', 'ramp', 'v2', 'half'], '"half" is not a percentage'],
    [['deploy', 'delete', '-x'], 'unknown flag -x'],
  ])('rejects %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
