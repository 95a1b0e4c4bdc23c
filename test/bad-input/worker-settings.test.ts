/**
 * The brain worker's settings from the environment: defaults, accepted forms, and one error naming
 * every variable that is wrong.
 */
import { DEFAULT_BRAIN_WORKER_SETTINGS, readBrainWorkerSettings } from '../../workers/worker-settings';

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
