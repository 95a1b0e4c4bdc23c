/**
 * Coding tasks end to end for tests: a local bare repository as the remote (made from
 * `examples/textkit`), the scripted Messages API server playing the initializer and the coding
 * agent, and brain + hands workers on unique task queues (shared workflow bundle, real Temporal,
 * real Docker). Cleans up the tasks' containers, volumes and host clones.
 */
import { removeSandboxes } from './hands';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskInput } from '../../common/coding-task';
import { sessionIdFor } from '../../common/sandbox-names';
import { PROJECT_ROOT } from '../../platform/paths';
import {
  codingTaskScenario,
  FEATURE_LIST,
  INIT_SCRIPT,
  type CodingTaskScenarioOptions,
} from '../../scripted-model/scenarios/coding-task';
import type { ModelScript } from '../../scripted-model/script';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { installRuntime } from '../../workers/runtime';
import { createBrainWorker, createHandsHostWorkers } from '../../workers/workers';
import { testPlatform } from './env';
import type { Forges } from '../../activities/forge/settings';
import type { SecretStore } from '../../activities/secrets/store';
import { testModelSettings } from './operation-harness';
import { connectTestTemporal, type TestTemporal } from './temporal';

/**
 * The repositories of these tests live under the OS temp dir: the hands workers they start (in this
 * process or as child processes, which inherit it) allow it, as a deployment would with
 * `AGENT_ALLOWED_ROOTS`.
 */
process.env.AGENT_ALLOWED_ROOTS = [os.tmpdir(), path.join(PROJECT_ROOT, 'examples')].join(':');

export interface TestRemote {
  /** The bare repository. */
  bare: string;
  url: string;
  /** The repository's only commit before any run. */
  root: string;
}

export const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, LANG: 'C' } }).trim();

/** A bare repository holding `examples/textkit` as one commit on `main`. */
export function makeTextkitRemote(dir: string): TestRemote {
  return makeRemote(dir, 'textkit', path.join(PROJECT_ROOT, 'examples', 'textkit'), 'textkit: upper');
}

/** A bare repository holding the files of `source` as one commit on `main`. */
export function makeRemote(dir: string, name: string, source: string, subject: string): TestRemote {
  const work = path.join(dir, name);
  fs.cpSync(source, work, { recursive: true });
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'add', '-A');
  git(work, '-c', 'user.name=tester', '-c', 'user.email=tester@example.invalid', 'commit', '-q', '-m', subject);
  const bare = path.join(dir, `${name}.git`);
  git(dir, 'clone', '-q', '--bare', work, bare);
  return { bare, url: `file://${bare}`, root: git(bare, 'rev-parse', 'main') };
}

/** textkit with the initializer's feature list and init.sh already committed on `main` (no initializer runs). */
export function makeInitializedTextkitRemote(dir: string): TestRemote {
  const source = path.join(dir, 'textkit-initialized-source');
  fs.cpSync(path.join(PROJECT_ROOT, 'examples', 'textkit'), source, { recursive: true });
  fs.writeFileSync(path.join(source, 'feature_list.json'), `${JSON.stringify(FEATURE_LIST, null, 2)}\n`);
  fs.writeFileSync(path.join(source, 'init.sh'), INIT_SCRIPT, { mode: 0o755 });
  return makeRemote(dir, 'textkit-initialized', source, 'textkit with its feature list');
}

export function taskSessionId(taskId: string): string {
  return sessionIdFor(`task-${taskId}`);
}

export interface TaskHarness {
  temporal: TestTemporal;
  model: ScriptedModelServer;
  brainQueue: string;
  handsQueue: string;
  tasksDir: string;
  dir: string;
  remote: TestRemote;
  start(
    input: Omit<CodingTaskInput, 'repo'> & { repo?: CodingTaskInput['repo'] },
    taskId?: string,
  ): Promise<WorkflowHandleWithFirstExecutionRunId>;
  /** Marks a task id for cleanup (for tasks started elsewhere, e.g. by a schedule). */
  track(taskId: string): void;
  close(): Promise<void>;
}

export interface TaskHarnessOptions {
  /** `none`: no workers in this process (the test runs them, e.g. as `agent worker dev` processes). */
  workers?: 'in-process' | 'none';
  /** Another Temporal server than the global one (its namespace `default`). */
  address?: string;
  /** Another scripted agent than the textkit one (`scenario` is then ignored). */
  script?: ModelScript;
  /** Another remote than textkit's, made in the harness's folder. */
  remote?: (dir: string) => TestRemote;
  /** The forges and secret store of the in-process workers (default: from the environment). */
  forges?: Forges;
  secrets?: SecretStore;
}

async function connectTo(address: string): Promise<TestTemporal> {
  installRuntime();
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    client: new Client({ connection, namespace: 'default' }),
    connection,
    nativeConnection,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

export async function startTaskHarness(
  scenario: CodingTaskScenarioOptions = {},
  options: TaskHarnessOptions = {},
): Promise<TaskHarness> {
  const temporal = options.address ? await connectTo(options.address) : await connectTestTemporal();
  const model = await startScriptedModelServer({ script: options.script ?? codingTaskScenario(scenario) });
  const docker = new Docker();
  const id = randomUUID().slice(0, 8);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coding-task-'));
  const tasksDir = path.join(dir, 'host-tasks');
  const remote = (options.remote ?? makeTextkitRemote)(dir);
  const brainQueue = `task-brain-${id}`;
  const handsQueue = `task-hands-${id}`;
  const { workflowBundlePath, sandboxImage } = testPlatform();
  const namespace = options.address ? 'default' : testPlatform().namespace;
  const workers: Worker[] =
    options.workers === 'none'
      ? []
      : [
          await createBrainWorker({
            connection: temporal.nativeConnection,
            namespace,
            taskQueue: brainQueue,
            client: temporal.client,
            modelSettings: testModelSettings(model.url),
            workflowBundle: { codePath: workflowBundlePath },
            ...(options.forges ? { forges: options.forges } : {}),
            ...(options.secrets ? { secrets: options.secrets } : {}),
            workflowsUrl: 'http://web-ui.test/namespaces/default/workflows/',
            handsTaskQueue: handsQueue,
          }),
          // A hands host as `agent worker hands` runs one: the shared queue and the host's own.
          ...(await createHandsHostWorkers({
            connection: temporal.nativeConnection,
            namespace,
            taskQueue: handsQueue,
            host: `task-host-${id}`,
            docker,
            image: sandboxImage,
            tasksDir,
            ...(options.forges ? { forges: options.forges } : {}),
            ...(options.secrets ? { secrets: options.secrets } : {}),
          })),
        ];
  const running = workers.map((worker) => worker.run());
  const tasks: string[] = [];
  return {
    temporal,
    model,
    brainQueue,
    handsQueue,
    tasksDir,
    dir,
    remote,
    track: (taskId) => void tasks.push(taskId),
    async start(input, taskId = `task-test-${randomUUID().slice(0, 8)}`) {
      tasks.push(taskId);
      return temporal.client.workflow.start(CODING_TASK_WORKFLOW_TYPE, {
        taskQueue: brainQueue,
        workflowId: taskId,
        args: [{ repo: { kind: 'git', url: remote.url }, handsTaskQueue: handsQueue, ...input }],
      });
    },
    async close() {
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await Promise.all(running);
      await model.stop();
      for (const taskId of tasks) {
        const session = taskSessionId(taskId);
        await removeSandboxes([session]);
      }
      await temporal.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { codingTaskResult as taskResult } from '../../client/task-result';

/** The remote branch's commits, oldest first: `<sha> <subject>`. */
export function remoteCommits(remote: TestRemote, branch: string): string[] {
  return git(remote.bare, 'log', '--reverse', '--format=%H %s', `${remote.root}..refs/heads/${branch}`)
    .split('\n')
    .filter(Boolean);
}

export function remoteFile(remote: TestRemote, branch: string, file: string): string {
  return git(remote.bare, 'show', `refs/heads/${branch}:${file}`);
}
