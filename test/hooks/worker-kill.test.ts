/**
 * A hook with effects (`replay: "never"`) is never run twice, whatever happens to the worker: the
 * real `agent worker dev` is killed with SIGKILL while the hook runs in the sandbox, or right after
 * it ended and before its result was recorded, and another worker takes over. The hook appends a
 * line to a file for each run; the file has one line, and the call the hook let through ran once.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { containerNameOf } from '../../common/sandbox-names';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE } from '../../common/operation';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';
import { echoResults, hookDecisions, hookRuns, seenResults, workspaceFile } from './fixtures';

/** Appends a line per run, waits for `release` when asked to, then lets the call run with a word for the model. */
const effectHook = (waitForRelease: boolean) => ({
  type: 'command' as const,
  replay: 'never' as const,
  command: [
    'echo run >> /workspace/hook-runs.log',
    ...(waitForRelease ? ['while [ ! -f /workspace/release ]; do sleep 0.05; done'] : []),
    `echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "the hook ran"}}'`,
  ].join('; '),
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a hook with effects and a worker killed with SIGKILL', () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  const sessions: string[] = [];
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    temporal = await connectTestTemporal();
    model = await startScriptedModelServer({ script: [] });
  });
  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    await model.stop();
    await removeSandboxes(sessions);
    await temporal.close();
  });

  async function start(id: string, waitForRelease: boolean, env?: Record<string, string>) {
    const queues = { brainQueue: `${id}-brain`, handsQueue: `${id}-hands`, modelUrl: model.url };
    const worker = startWorkerProcess({ ...queues, ...(env ? { env } : {}) });
    workers.push(worker);
    sessions.push(id);
    model.setScript([
      {
        toolCalls: [{ id: 'toolu_effect', name: 'bash', input: { command: 'echo call >> /workspace/call-runs.log' } }],
      },
      echoResults,
    ]);
    const handle = await temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: queues.brainQueue,
      workflowId: id,
      args: [
        {
          goal: 'a call behind a hook with effects',
          handsTaskQueue: queues.handsQueue,
          keepContainer: true,
          hooks: { PreToolUse: [{ matcher: 'bash', hooks: [effectHook(waitForRelease)] }] },
        },
      ],
    });
    return { handle, worker, next: () => workers[workers.push(startWorkerProcess(queues)) - 1]! };
  }

  async function expectRanOnce(handle: Awaited<ReturnType<typeof start>>['handle']) {
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const [seen] = seenResults(result.finalText);
    expect(seen!.content).toContain('[PreToolUse hook] the hook ran');
    expect(workspaceFile(handle.workflowId, 'hook-runs.log')).toBe('run\n');
    expect(workspaceFile(handle.workflowId, 'call-runs.log')).toBe('call\n');
    expect(await hookRuns(handle)).toEqual(['hook-pre-toolu_effect-0']);
    // The decision came from a retried attempt: the killed worker's attempt never reported.
    const history = await handle.fetchHistory();
    const scheduled = history.events?.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityId === 'hook-pre-toolu_effect-0',
    );
    const started = history.events?.find(
      (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
    );
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
    const decided = await hookDecisions(temporal.client, handle);
    expect(decided.map((e) => e.data.decision)).toEqual(['allow']);
  }

  it('killed while the hook runs: the next worker waits for that run, and it runs once', async () => {
    const id = `hook-kill-running-${randomUUID().slice(0, 8)}`;
    const { handle, worker, next } = await start(id, true);
    await waitFor(async () => workspaceFile(id, 'hook-runs.log') === 'run\n', 'the hook to start', 120_000);
    await worker.kill();
    next();
    // The hook outlived the worker (the sandbox runs it): released now, it ends and is recorded once.
    execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(id), 'touch', '/workspace/release']);
    await expectRanOnce(handle);
  });

  it('killed after the hook ended and before its result was recorded: the next worker reads its result', async () => {
    const id = `hook-kill-ended-${randomUUID().slice(0, 8)}`;
    const crashAt = 'hook: after process end (hook-pre-toolu_effect-0)#1';
    const { handle, worker, next } = await start(id, false, { AGENT_CRASH_AT_POINT: crashAt });
    await waitFor(async () => !alive(worker.pid), 'the worker to kill itself after the hook ended', 120_000);
    expect(workspaceFile(id, 'hook-runs.log')).toBe('run\n');
    next();
    await expectRanOnce(handle);
  });
});
