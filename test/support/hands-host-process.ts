/**
 * A hands "host" for tests: `agent worker hands` in its own process, configured the way a real
 * host is (`AGENT_HANDS_QUEUE`, `AGENT_HANDS_HOST`, `AGENT_SANDBOX_PREFIX`), against the test server
 * and a Docker engine (the default one, or another given as `dockerHost`: a second machine).
 */
import { spawn } from 'node:child_process';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from './env';
import { agentProcessArgs } from './compiled-entries';

export interface HandsHostProcess {
  host: string;
  prefix: string;
  /** SIGTERM (graceful shutdown); resolves when the process is gone. */
  stop(): Promise<void>;
  /** SIGKILL (the host dies: no cleanup, no completion reported); resolves when the process is gone. */
  kill(): Promise<void>;
}

export async function spawnHandsHost(options: {
  sharedQueue: string;
  host: string;
  prefix: string;
  /** `DOCKER_HOST` of the engine this host runs its sandboxes on (default: the default engine). */
  dockerHost?: string;
  /** The server to work for (default: the test platform's). */
  temporalAddress?: string;
  /** Extra environment (e.g. `AGENT_TASKS_DIR`). */
  env?: Record<string, string>;
  readyTimeoutMs?: number;
}): Promise<HandsHostProcess> {
  const { temporalAddress, namespace, sandboxImage } = testPlatform();
  const child = spawn(process.execPath, agentProcessArgs('worker', 'hands'), {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: options.temporalAddress ?? temporalAddress,
      TEMPORAL_NAMESPACE: options.temporalAddress ? 'default' : namespace,
      AGENT_HANDS_QUEUE: options.sharedQueue,
      AGENT_HANDS_HOST: options.host,
      AGENT_SANDBOX_PREFIX: options.prefix,
      AGENT_SANDBOX_IMAGE: sandboxImage,
      ...(options.dockerHost ? { DOCKER_HOST: options.dockerHost } : {}),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`hands host ${options.host} did not start:\n${output}`)),
      options.readyTimeoutMs ?? 180_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('hands worker running')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`hands host ${options.host} exited with ${code}:\n${output}`));
    });
  });
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exited;
  };
  return {
    host: options.host,
    prefix: options.prefix,
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
  };
}
