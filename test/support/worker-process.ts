/**
 * The real `agent worker dev` (or `agent worker brain`) as a child process on the test platform, for
 * tests that kill a worker the way a crash does (SIGKILL: no cleanup, no completion reported) and
 * start another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from './env';
import { agentProcessArgs } from './compiled-entries';

export interface WorkerProcess {
  readonly pid: number;
  /** SIGKILL; resolves when the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful, SIGKILL after 10 s); resolves when the process is gone. */
  stop(): Promise<void>;
  /** What the worker printed (stdout and stderr), for failure messages. */
  output(): string;
}

export interface WorkerProcessOptions {
  /** `dev` (default): brain and hands in one process; `brain`: the workflows and the model step only. */
  role?: 'dev' | 'brain';
  /** The server to work for (default: the test platform's). */
  temporalAddress?: string;
  brainQueue: string;
  handsQueue: string;
  modelUrl: string;
  /** Extra environment (e.g. `AGENT_WORKSPACE_QUOTA`). */
  env?: Record<string, string>;
}

export function startWorkerProcess(options: WorkerProcessOptions): WorkerProcess {
  const platform = testPlatform();
  // `node --import tsx`, not the tsx launcher: the pid is the worker itself, so SIGKILL reaches it.
  const child: ChildProcess = spawn(process.execPath, agentProcessArgs('worker', options.role ?? 'dev'), {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: options.temporalAddress ?? platform.temporalAddress,
      TEMPORAL_NAMESPACE: options.temporalAddress ? 'default' : platform.namespace,
      ANTHROPIC_API_KEY: 'worker-process',
      ANTHROPIC_BASE_URL: options.modelUrl,
      AGENT_MODEL: 'scripted-model',
      AGENT_BRAIN_QUEUE: options.brainQueue,
      AGENT_HANDS_QUEUE: options.handsQueue,
      AGENT_WORKFLOW_BUNDLE: platform.workflowBundlePath,
      AGENT_SANDBOX_IMAGE: platform.sandboxImage,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => lines.push(chunk.toString('utf8'));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    // A graceful stop that hangs becomes a kill after 10 s.
    const timer = name === 'SIGTERM' ? setTimeout(() => child.kill('SIGKILL'), 10_000) : undefined;
    await exited;
    clearTimeout(timer);
  };
  return {
    pid: child.pid ?? -1,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
    output: () => lines.join(''),
  };
}
