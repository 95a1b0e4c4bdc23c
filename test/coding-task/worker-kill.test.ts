/**
 * A worker SIGKILLed in the middle of a feature loses nothing: the task runs on a real
 * `agent worker dev` process, which is killed while the agent's commit command of the second
 * feature runs; a new worker process takes over, the running command is waited for (never run
 * twice), and the task ends with every feature passing, exactly one commit per feature on the
 * remote and every `passes` set.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseFeatureList } from '../../common/feature-list';
import { volumeNameOf } from '../../common/sandbox-names';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from '../support/env';
import { inSandbox } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { agentProcessArgs } from '../support/compiled-entries';
import {
  remoteCommits,
  remoteFile,
  startTaskHarness,
  taskResult,
  taskSessionId,
  type TaskHarness,
} from '../support/coding-task';

jest.setTimeout(600_000);

describe('codingTask and a killed worker', () => {
  let h: TaskHarness;
  const workers: ChildProcess[] = [];

  /** `agent worker dev` as its own node process (so SIGKILL hits the worker itself). */
  const startWorker = (index: number): ChildProcess => {
    const log = fs.openSync(path.join(h.dir, `worker-${index}.log`), 'w');
    const child = spawn(process.execPath, agentProcessArgs('worker', 'dev'), {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: testPlatform().temporalAddress,
        TEMPORAL_NAMESPACE: testPlatform().namespace,
        ANTHROPIC_API_KEY: 'worker-kill',
        ANTHROPIC_BASE_URL: h.model.url,
        AGENT_MODEL: 'scripted-model',
        AGENT_BRAIN_QUEUE: h.brainQueue,
        AGENT_HANDS_QUEUE: h.handsQueue,
        AGENT_WORKFLOW_BUNDLE: testPlatform().workflowBundlePath,
        AGENT_SANDBOX_IMAGE: testPlatform().sandboxImage,
        AGENT_TASKS_DIR: h.tasksDir,
      },
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    workers.push(child);
    return child;
  };

  beforeAll(async () => {
    h = await startTaskHarness({ holdBeforeCommit: 'words' }, { workers: 'none' });
  });
  afterAll(async () => {
    for (const worker of workers) if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGTERM');
    await Promise.all(
      workers.map((worker) =>
        worker.exitCode === null && worker.signalCode === null
          ? new Promise((resolve) => worker.once('exit', resolve))
          : undefined,
      ),
    );
    await h?.close();
  });

  it('resumes the feature after a SIGKILL: no duplicate commit, no lost passes', async () => {
    const branch = 'agent/killed';
    const taskId = `killed-${process.pid}`;
    const session = taskSessionId(taskId);
    const first = startWorker(0);
    const handle = await h.start({ branch, specPath: 'SPEC.md', verify: 'npm test' }, taskId);
    await waitFor(
      async () => (await inSandbox(session, 'cat /workspace/.agent/commit-effects.log'))?.includes('words'),
      'the words feature to reach its commit command',
      300_000,
    );
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    startWorker(1);
    await inSandbox(session, 'touch /tmp/release-words');

    const result = await taskResult(handle);
    expect(result.state).toBe('completed');
    expect(result.reason).toBe('all features pass');
    expect(result.features.map((f) => [f.id, f.passes, f.attempts])).toEqual([
      ['slug', true, 1],
      ['words', true, 1],
      ['title', true, 1],
    ]);
    const commits = remoteCommits(h.remote, branch);
    expect(commits.map((line) => line.slice(41, 55))).toEqual([
      'Initialize the',
      'Feature slug: ',
      'Feature words:',
      'Feature title:',
    ]);
    expect(result.commits.map((c) => c.sha)).toEqual(commits.map((line) => line.slice(0, 40)));
    const list = parseFeatureList(remoteFile(h.remote, branch, 'feature_list.json'));
    expect(list.ok && list.features.map((f) => f.passes)).toEqual([true, true, true]);
    // The agent's commit command (a `never` tool) ran once per feature, the interrupted one included.
    const effects = execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '-v',
        `${volumeNameOf(session)}:/w`,
        testPlatform().sandboxImage,
        'cat',
        '/w/.agent/commit-effects.log',
      ],
      { encoding: 'utf8' },
    );
    expect(effects.trim().split('\n')).toEqual(['slug', 'words', 'title']);
    expect(h.model.scriptErrors).toEqual([]);
  });
});
