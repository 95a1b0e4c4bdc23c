/**
 * A real `agent worker dev` process (brain and hands in one) on the test server, for tests that kill
 * a worker with SIGKILL and start another: nothing of the killed worker survives but Temporal's
 * history and the workspace.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from './env';

export interface WorkerProcessOptions {
  brainQueue: string;
  handsQueue: string;
  modelUrl: string;
  env?: Record<string, string>;
}

export interface WorkerProcess {
  child: ChildProcess;
  logFile: string;
  /** SIGKILL, as a power cut: no cleanup, nothing reported. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 10 s. */
  stop(): Promise<void>;
}

export function spawnWorkerProcess(options: WorkerProcessOptions): WorkerProcess {
  const logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-worker-')), 'worker.log');
  const out = fs.openSync(logFile, 'w');
  const child = spawn(
    path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx'),
    [path.join(PROJECT_ROOT, 'cli', 'agent.ts'), 'worker', 'dev'],
    {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: testPlatform().temporalAddress,
        TEMPORAL_NAMESPACE: testPlatform().namespace,
        ANTHROPIC_API_KEY: 'worker-process',
        ANTHROPIC_BASE_URL: options.modelUrl,
        AGENT_MODEL: 'scripted-model',
        AGENT_BRAIN_QUEUE: options.brainQueue,
        AGENT_HANDS_QUEUE: options.handsQueue,
        AGENT_WORKFLOW_BUNDLE: testPlatform().workflowBundlePath,
        AGENT_SANDBOX_IMAGE: testPlatform().sandboxImage,
        ...options.env,
      },
      stdio: ['ignore', out, out],
      // Its own process group, so the kill reaches tsx's node child as well.
      detached: true,
    },
  );
  fs.closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  return {
    child,
    logFile,
    async kill() {
      signalGroup('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
