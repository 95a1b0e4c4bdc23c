/**
 * The brain worker's settings from the environment: defaults, accepted forms, and one error naming
 * every variable that is wrong; the same for a whole runtime (a worker of each role, the CLI).
 */
import { cliSettings } from '../../cli/settings';
import { workerSettings } from '../../workers/settings';
import {
  DEFAULT_BRAIN_WORKER_SETTINGS,
  readBrainWorkerSettings,
  readWorkerVersioning,
} from '../../workers/worker-settings';
import { deploySettings } from '../../cli/settings';

describe('brain worker settings (AGENT_STICKY_FAILOVER, AGENT_WORKFLOW_TASK_SLOTS, AGENT_WORKFLOW_STACK_TRACES)', () => {
  it('defaults to a 5 s sticky failover, 10 workflow-task slots and stack traces on', () => {
    expect(readBrainWorkerSettings({})).toEqual({
      stickyFailoverMs: 5_000,
      workflowTaskSlots: 10,
      workflowStackTraces: true,
    });
    expect(readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: ' ', AGENT_WORKFLOW_TASK_SLOTS: '' })).toEqual(
      DEFAULT_BRAIN_WORKER_SETTINGS,
    );
  });

  it('reads durations with units, a bare number as seconds, and whole slot counts', () => {
    expect(readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '30s' }).stickyFailoverMs).toBe(30_000);
    expect(readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '1m30s' }).stickyFailoverMs).toBe(90_000);
    expect(readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '2500ms' }).stickyFailoverMs).toBe(2_500);
    expect(readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '20' }).stickyFailoverMs).toBe(20_000);
    expect(readBrainWorkerSettings({ AGENT_WORKFLOW_TASK_SLOTS: '40' }).workflowTaskSlots).toBe(40);
    expect(readBrainWorkerSettings({ AGENT_WORKFLOW_STACK_TRACES: 'off' }).workflowStackTraces).toBe(false);
    expect(readBrainWorkerSettings({ AGENT_WORKFLOW_STACK_TRACES: ' on ' }).workflowStackTraces).toBe(true);
  });

  it('refuses what is out of range or not a duration, naming each variable', () => {
    expect(() => readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: 'soon' })).toThrow(
      'AGENT_STICKY_FAILOVER: not a duration: "soon"',
    );
    expect(() => readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '500ms' })).toThrow(
      'AGENT_STICKY_FAILOVER: "500ms" is not between 1s and 10m',
    );
    expect(() => readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '11m' })).toThrow('is not between 1s and 10m');
    expect(() => readBrainWorkerSettings({ AGENT_WORKFLOW_TASK_SLOTS: '2.5' })).toThrow(
      'AGENT_WORKFLOW_TASK_SLOTS: "2.5" is not a whole number from 1 to 200',
    );
    expect(() => readBrainWorkerSettings({ AGENT_WORKFLOW_STACK_TRACES: 'false' })).toThrow(
      'AGENT_WORKFLOW_STACK_TRACES: "false" is not "on" or "off"',
    );
    expect(() => readBrainWorkerSettings({ AGENT_STICKY_FAILOVER: '0', AGENT_WORKFLOW_TASK_SLOTS: '0' })).toThrow(
      /^brain worker settings: AGENT_STICKY_FAILOVER: .*; AGENT_WORKFLOW_TASK_SLOTS: /,
    );
  });
});

describe('Worker Versioning settings (AGENT_WORKER_DEPLOYMENT, AGENT_WORKER_BUILD_ID)', () => {
  it('leaves a worker unversioned by default, its build id derived from the bundle', () => {
    expect(readWorkerVersioning({})).toEqual({});
    expect(readWorkerVersioning({ AGENT_WORKER_DEPLOYMENT: ' ', AGENT_WORKER_BUILD_ID: '' })).toEqual({});
    expect(workerSettings('brain', { ANTHROPIC_API_KEY: 'k' }).brain?.versioning).toEqual({});
  });

  it('reads a deployment and a build id, for the worker and for agent deploy', () => {
    const env = { ANTHROPIC_API_KEY: 'k', AGENT_WORKER_DEPLOYMENT: 'agent-brain', AGENT_WORKER_BUILD_ID: 'v1.4.2' };
    expect(workerSettings('brain', env).brain?.versioning).toEqual({ deployment: 'agent-brain', buildId: 'v1.4.2' });
    expect(readWorkerVersioning({ AGENT_WORKER_BUILD_ID: 'agent+0123456789abcdef' })).toEqual({
      buildId: 'agent+0123456789abcdef',
    });
    expect(deploySettings({ AGENT_WORKER_DEPLOYMENT: 'agent-brain' }).deployment).toBe('agent-brain');
    expect(deploySettings({}).deployment).toBeUndefined();
  });

  it('refuses names the server would refuse, naming each variable', () => {
    expect(() =>
      readWorkerVersioning({ AGENT_WORKER_DEPLOYMENT: 'agent.brain', AGENT_WORKER_BUILD_ID: 'v1:2' }),
    ).toThrow(
      /^brain worker settings: AGENT_WORKER_DEPLOYMENT: "agent.brain" is not a deployment name: .*; AGENT_WORKER_BUILD_ID: "v1:2" is not a build id/,
    );
    expect(() => workerSettings('dev', { ANTHROPIC_API_KEY: 'k', AGENT_WORKER_DEPLOYMENT: 'a:b' })).toThrow(
      'AGENT_WORKER_DEPLOYMENT: "a:b" is not a deployment name',
    );
    expect(() => deploySettings({ AGENT_WORKER_DEPLOYMENT: '-x' })).toThrow('AGENT_WORKER_DEPLOYMENT: "-x"');
  });
});

describe("a runtime's settings, checked at once", () => {
  it('names every wrong variable of a dev worker in one error: worker, model, sandboxes, hands host', () => {
    const env = {
      AGENT_STICKY_FAILOVER: '500ms',
      AGENT_SANDBOX_PIDS: '3',
      AGENT_WORKSPACE_QUOTA: 'lots',
      AGENT_SANDBOX_PREFIX: 'bad prefix',
      AGENT_LOG_LEVEL: 'chatty',
      AGENT_GIT_AUTHOR: 'nobody',
    };
    let message = '';
    try {
      workerSettings('dev', env);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^dev worker settings: /);
    for (const name of [
      'AGENT_STICKY_FAILOVER: "500ms" is not between 1s and 10m',
      'ANTHROPIC_API_KEY is not set',
      'AGENT_SANDBOX_PIDS: "3" is not a whole number of at least 16',
      'AGENT_WORKSPACE_QUOTA: not a size: "lots"',
      'AGENT_SANDBOX_PREFIX: "bad prefix" must be',
      'AGENT_LOG_LEVEL: "chatty" is not one of TRACE, DEBUG, INFO, WARN, ERROR',
      'AGENT_GIT_AUTHOR: "nobody" is not "Name <email>"',
    ])
      expect(message).toContain(name);
  });

  it('reads only what the role needs: a hands worker needs no model key, a brain worker no sandbox limits', () => {
    expect(() => workerSettings('hands', { AGENT_HANDS_HOST: 'h1' })).not.toThrow();
    expect(workerSettings('brain', { ANTHROPIC_API_KEY: 'k', AGENT_SANDBOX_PIDS: '3' }).hands).toBeUndefined();
    const hands = workerSettings('hands', { AGENT_HANDS_HOST: 'h1', AGENT_TASKS_DIR: '/srv/tasks' });
    expect(hands.brain).toBeUndefined();
    expect(hands.hands).toMatchObject({ host: { host: 'h1', namePrefix: 'agent-' }, repo: { tasksDir: '/srv/tasks' } });
  });

  it("checks the agent command's connection settings", () => {
    expect(() => cliSettings({ AGENT_WEB_UI: 'ftp://ui', TEMPORAL_UI_PORT: '99999' })).toThrow(
      'agent settings: TEMPORAL_UI_PORT: "99999" is not a port number (1-65535); AGENT_WEB_UI: "ftp://ui" is not an http(s) URL',
    );
    expect(cliSettings({ TEMPORAL_UI_PORT: '9000', AGENT_BRAIN_QUEUE: 'b' })).toMatchObject({
      temporal: { address: '127.0.0.1:7233', namespace: 'default', webUi: 'http://127.0.0.1:9000' },
      queues: { brain: 'b', hands: 'agent-hands' },
    });
  });
});
