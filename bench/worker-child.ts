/**
 * Starts `bench/worker-process.ts` as a child process (`node --import tsx`, so the measured pid is
 * the worker itself) and gives the bench its pid, its peak memory and ways to stop or kill it;
 * optionally with V8's CPU profiler on (`--cpu-prof`).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../platform/paths';
import type { BenchContext, Queues } from './context';
import type { WorkerProcessConfig } from './worker-process';

/** The worker process's configuration for this bench run, a model server and a pair of queues. */
export function workerProcessConfig(
  ctx: BenchContext,
  modelUrl: string,
  queues: Queues,
  extra: Partial<WorkerProcessConfig> = {},
): WorkerProcessConfig {
  return {
    address: ctx.address,
    namespace: ctx.namespace,
    workflowBundlePath: ctx.workflowBundlePath,
    image: ctx.image,
    modelUrl,
    ...queues,
    ...extra,
  };
}

export interface WorkerChild {
  pid: number;
  /** When the child said both workers poll (ms since the epoch). */
  readyAt: number;
  /** The same moment on the child's monotonic clock (`process.hrtime`, µs): where its CPU profiles' work starts. */
  readyMonotonicUs: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMb(): number;
  /**
   * How late the worker's event loop ran since the previous call (or since it was ready): the 99th
   * percentile and the worst delay, in ms.
   */
  eventLoopDelay(): Promise<{ p99Ms: number; maxMs: number }>;
  /** SIGKILL, as a crash would; resolves when the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful worker shutdown); resolves when the process is gone. */
  stop(): Promise<void>;
}

export interface WorkerChildOptions {
  /** Write V8 CPU profiles of every thread of the process into this directory (written when it stops). */
  cpuProfileDir?: string;
  readyTimeoutMs?: number;
  /** Environment variables over the bench's own (worker settings such as `AGENT_STICKY_FAILOVER`). */
  env?: Record<string, string>;
  /** The worker program (default `bench/worker-process.ts`, the harness's workers; the floor has its own). */
  entry?: string;
}

export async function spawnWorkerChild(
  config: WorkerProcessConfig,
  log: (line: string) => void,
  options: WorkerChildOptions = {},
): Promise<WorkerChild> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  const entry = options.entry ?? path.join(__dirname, 'worker-process.ts');
  const profiling = options.cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfileDir] : [];
  const child = spawn(process.execPath, [...profiling, '--import', 'tsx', entry, JSON.stringify(config)], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the bench worker process');
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 40) output.shift();
      log(`worker ${pid}: ${line}`);
    }
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  let readyMonotonicUs = 0;
  const readyAt = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`the bench worker process was not ready after ${readyTimeoutMs} ms:\n${output.join('\n')}`)),
      readyTimeoutMs,
    );
    child.on('message', (message: { type?: string; monotonicUs?: number }) => {
      if (message?.type !== 'ready') return;
      readyMonotonicUs = message.monotonicUs ?? 0;
      clearTimeout(timer);
      resolve(Date.now());
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the bench worker process exited with code ${code} before it was ready:\n${output.join('\n')}`));
    });
  });

  let peak = 0;
  const peakRssMb = (): number => {
    try {
      const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb / 1024);
    } catch {
      // The process is gone: the last reading stands.
    }
    return peak;
  };
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exited;
  };
  const eventLoopDelay = () =>
    new Promise<{ p99Ms: number; maxMs: number }>((resolve, reject) => {
      const answer = (message: { type?: string; p99Ms?: number; maxMs?: number }) => {
        if (message?.type !== 'event-loop') return;
        child.off('message', answer);
        resolve({ p99Ms: message.p99Ms ?? Number.NaN, maxMs: message.maxMs ?? Number.NaN });
      };
      child.on('message', answer);
      if (!child.send({ type: 'event-loop' })) {
        child.off('message', answer);
        reject(new Error('the bench worker process is gone'));
      }
    });
  return {
    pid,
    readyAt,
    readyMonotonicUs,
    peakRssMb,
    eventLoopDelay,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
  };
}
