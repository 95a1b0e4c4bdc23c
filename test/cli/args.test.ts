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
      kind: 'sandbox-gc',
      olderThanMs: 3_600_000,
      volumes: false,
      environments: false,
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

  it('parses task start, report and schedule commands', () => {
    expect(
      parseAgentArgs([
        'task',
        'start',
        '--repo',
        './r',
        '--spec-path',
        'SPEC.md',
        '--verify',
        'npm test',
        '--features-per-run',
        '2',
        '--max-cost',
        '$1.50',
        '--max-duration',
        '8h',
        '--detach',
      ]),
    ).toEqual({
      kind: 'task-start',
      task: {
        repo: { kind: 'local', path: './r' },
        specPath: 'SPEC.md',
        verify: 'npm test',
        budget: { featuresPerRun: 2, maxCostUsd: 1.5, maxDurationMs: 8 * 3_600_000 },
      },
      detach: true,
      withWorker: false,
    });
    expect(parseAgentArgs(['task', 'start', '--git', 'file:///r.git', '--ref', 'v1', '--spec', 'do it'])).toMatchObject(
      {
        task: { repo: { kind: 'git', url: 'file:///r.git', ref: 'v1' }, spec: 'do it', budget: {} },
      },
    );
    expect(parseAgentArgs(['report', 'night-1', '--json'])).toEqual({
      kind: 'report',
      id: 'night-1',
      json: true,
      steps: false,
    });
    expect(
      parseAgentArgs([
        'schedule',
        'create',
        'nightly',
        '--cron',
        '0 1 * * *',
        '--timezone',
        'Europe/Paris',
        '--',
        '--repo',
        '/r',
        '--spec-path',
        'SPEC.md',
      ]),
    ).toEqual({
      kind: 'schedule-create',
      name: 'nightly',
      cron: '0 1 * * *',
      timezone: 'Europe/Paris',
      catchupWindowMs: 3_600_000,
      pauseOnFailure: true,
      task: { repo: { kind: 'local', path: '/r' }, specPath: 'SPEC.md', budget: {} },
    });
    expect(parseAgentArgs(['schedule', 'ls'])).toEqual({ kind: 'schedule-ls' });
    expect(parseAgentArgs(['schedule', 'pause', 'nightly', '--note', 'holiday'])).toEqual({
      kind: 'schedule-pause',
      name: 'nightly',
      note: 'holiday',
    });
    expect(parseAgentArgs(['schedule', 'unpause', 'nightly'])).toEqual({ kind: 'schedule-unpause', name: 'nightly' });
    expect(parseAgentArgs(['schedule', 'trigger', 'nightly'])).toEqual({ kind: 'schedule-trigger', name: 'nightly' });
    expect(parseAgentArgs(['schedule', 'delete', 'nightly'])).toEqual({ kind: 'schedule-delete', name: 'nightly' });
  });

  it.each([
    [['task'], 'agent task: expected "start", got nothing'],
    [['task', 'start', '--spec', 'x'], 'missing the repository: --repo <path> or --git <url>'],
    [['task', 'start', '--repo', 'r', '--git', 'u'], 'give --repo <path> or --git <url>, not both'],
    [['task', 'start', '--repo', 'r', '--ref', 'v1'], '--ref needs --git'],
    [['task', 'start', '--repo', 'r', '--spec', 'a', '--spec-path', 'b'], 'give --spec or --spec-path, not both'],
    [['task', 'start', '--repo', 'r', '--features-per-run', '0'], '--features-per-run must be a positive whole number'],
    [['task', 'start', '--repo', 'r', '--max-cost', 'lots'], '--max-cost must be a positive amount of dollars'],
    [['task', 'start', '--repo', 'r', '--max-duration', 'soon'], '--max-duration must be a duration like 90s, 30m, 8h'],
    [['task', 'start', '--repo', 'r', 'extra'], 'unexpected argument "extra"'],
    [['report'], 'agent report: missing task, operation or session id'],
    [['schedule'], 'expected create, ls, pause, unpause, trigger or delete, got nothing'],
    [['schedule', 'create', 'n', '--', '--repo', 'r'], '--cron is required'],
    [['schedule', 'create', 'n', '--cron', 'every night', '--', '--repo', 'r'], '--cron must have 5 to 7 fields'],
    [['schedule', 'create', 'n', '--cron', '0 1 * * *'], 'give the task after "--"'],
    [['schedule', 'create', 'bad name!', '--cron', '@daily', '--', '--repo', 'r'], 'the name "bad name!" must be'],
    [['schedule', 'trigger'], 'agent schedule trigger: expected one schedule name'],
  ])('rejects the task command %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });

  it('parses run in a session, lane and fresh context', () => {
    expect(
      parseAgentArgs([
        'run',
        '--session',
        's1',
        '--lane',
        'docs',
        '--new',
        '--json',
        '--approvals',
        '{"bash:/git push/":"ask"}',
        '--approval-timeout',
        '30m',
        'write the docs',
      ]),
    ).toMatchObject({
      kind: 'run',
      goal: 'write the docs',
      session: 's1',
      lane: 'docs',
      newContext: true,
      json: true,
      approvals: '{"bash:/git push/":"ask"}',
      approvalTimeoutMs: 1_800_000,
    });
  });

  it('parses session, events, approve and fact', () => {
    expect(parseAgentArgs(['session', 'ls'])).toEqual({ kind: 'session', action: 'ls', json: false });
    expect(parseAgentArgs(['session', 'show', 's1', '--json'])).toEqual({
      kind: 'session',
      action: 'show',
      sessionId: 's1',
      json: true,
    });
    expect(
      parseAgentArgs(['events', 's1', '--lane', 'main', '--type', 'tool,approval.decided', '--from', '3', '--follow']),
    ).toEqual({
      kind: 'events',
      id: 's1',
      lane: 'main',
      types: ['tool', 'approval.decided'],
      from: 3,
      follow: true,
      json: false,
    });
    expect(parseAgentArgs(['approve', 'op-1', 'toolu_1'])).toEqual({
      kind: 'approve',
      operationId: 'op-1',
      toolCallId: 'toolu_1',
    });
    expect(parseAgentArgs(['approve', 'op-1', 'toolu_1', '--deny', 'not now'])).toMatchObject({ deny: 'not now' });
    expect(parseAgentArgs(['fact', 'set', 's1', 'owner', 'ada lovelace'])).toEqual({
      kind: 'fact',
      action: 'set',
      sessionId: 's1',
      key: 'owner',
      value: 'ada lovelace',
    });
    expect(parseAgentArgs(['fact', 'get', 's1', 'owner'])).toMatchObject({ action: 'get', key: 'owner' });
    expect(parseAgentArgs(['fact', 'ls', 's1', '--json'])).toMatchObject({ action: 'ls', json: true });
  });

  it.each([
    [['run', '--approvals', '{nope', 'g'], '--approvals must be a JSON object'],
    [['run', '--approval-timeout', 'soon', 'g'], '--approval-timeout: not a duration: "soon"'],
    [['session'], 'agent session: expected ls or show, got nothing'],
    [['session', 'show'], 'agent session show: missing session id'],
    [['events'], 'agent events: missing session or operation id'],
    [['events', 's1', '--from', '5', '--to', '2'], '--to 2 is before --from 5'],
    [['events', 's1', '--from', '0'], '--from must be a positive whole number, got "0"'],
    [['approve', 'op-1'], 'agent approve: expected an operation id and a tool call id'],
    [['approve', 'op-1', 't', '--deny'], '--deny needs a value'],
    [['fact', 'set', 's1', 'k'], 'agent fact set: expected a session id, a key and a value'],
    [['fact', 'rm', 's1'], 'agent fact: expected set, get or ls, got "rm"'],
  ])('rejects the session command %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
