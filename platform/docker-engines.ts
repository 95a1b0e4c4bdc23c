/**
 * More Docker engines on this machine, each standing for another hands host: its own `dockerd` with
 * its own socket, data root, exec root and pid file (and the containerd it manages), so its
 * containers, volumes and images are its own. Used by the tests of hands routing across hosts; a
 * production hands host runs on a machine of its own instead (docs/production.md).
 *
 * Root only (a `dockerd` needs it). The engine is left running, like the default one, and found
 * again by its socket on the next call.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Docker from 'dockerode';
import { isAlive } from './dev-server';
import { DATA_DIR } from './paths';
import { PlatformError } from './temporal-cli';
import { pingDocker } from './docker-engine';

export interface ExtraDockerEngine {
  name: string;
  /** `unix://…`: the `DOCKER_HOST` of a hands worker on this engine. */
  dockerHost: string;
  docker: Docker;
}

const NAME = /^[a-z][a-z0-9-]{0,15}$/;

/** Where an engine named `name` keeps what: the socket and exec root under /run (short paths: socket limits). */
export function extraEnginePaths(name: string) {
  if (!NAME.test(name)) throw new PlatformError(`engine name "${name}" must be 1-16 lowercase letters, digits or '-'`);
  const run = `/run/agent-docker-${name}`;
  return {
    socket: path.join(run, 'docker.sock'),
    execRoot: path.join(run, 'exec'),
    pidFile: path.join(run, 'docker.pid'),
    dataRoot: `/var/lib/agent-docker-${name}`,
    logFile: path.join(DATA_DIR, 'docker', `dockerd-${name}.log`),
  };
}

/**
 * The engine named `name`, started when it does not answer; with `images`, each copied from
 * `source` (`docker save` | `docker load`, streamed) unless the engine has it.
 */
export async function ensureExtraDockerEngine(
  name: string,
  options: { images?: readonly string[]; source?: Docker; log?: (line: string) => void } = {},
): Promise<ExtraDockerEngine> {
  const paths = extraEnginePaths(name);
  const log = options.log ?? (() => undefined);
  const docker = new Docker({ socketPath: paths.socket });
  if (!(await pingDocker(docker))) await withStartLock(paths, docker, () => startEngine(name, paths, docker, log));
  for (const image of options.images ?? []) await copyImage(image, options.source ?? new Docker(), docker, log);
  return { name, dockerHost: `unix://${paths.socket}`, docker };
}

/**
 * Runs `start` holding the engine's start lock (a file made only if absent, holding its maker's
 * pid), unless the engine answers once the lock is ours: two processes that found it down at once
 * (`.ci/run`'s stages start side by side) start one `dockerd`, not two on the same paths. A lock
 * whose holder died is taken over.
 */
async function withStartLock(
  paths: ReturnType<typeof extraEnginePaths>,
  docker: Docker,
  start: () => Promise<void>,
): Promise<void> {
  const lock = `${paths.execRoot}.starting`;
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = lockHolder(lock);
    if (Number.isInteger(holder) && holder > 0 && !isAlive(holder)) fs.rmSync(lock, { force: true });
    else if (Date.now() > deadline)
      throw new PlatformError(`another process has been starting this Docker engine for 120 s (lock ${lock})`);
    else await new Promise((resolve) => setTimeout(resolve, 250));
  }
  try {
    if (!(await pingDocker(docker))) await start();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** The pid in `lock`; NaN while its maker is still writing it, or when it was just let go. */
function lockHolder(lock: string): number {
  try {
    return Number(fs.readFileSync(lock, 'utf8').trim() || NaN);
  } catch {
    return NaN;
  }
}

async function startEngine(
  name: string,
  paths: ReturnType<typeof extraEnginePaths>,
  docker: Docker,
  log: (line: string) => void,
): Promise<void> {
  if (process.getuid?.() !== 0) throw new PlatformError(`starting Docker engine "${name}" needs root`);
  fs.mkdirSync(paths.execRoot, { recursive: true });
  fs.mkdirSync(paths.dataRoot, { recursive: true });
  fs.mkdirSync(path.dirname(paths.logFile), { recursive: true });
  // A killed daemon leaves its pid file; a new one refuses to start while it is there.
  if (fs.existsSync(paths.pidFile)) {
    const pid = Number(fs.readFileSync(paths.pidFile, 'utf8').trim());
    if (!(Number.isInteger(pid) && pid > 0 && isAlive(pid))) fs.rmSync(paths.pidFile, { force: true });
  }
  fs.rmSync(paths.socket, { force: true });
  const out = fs.openSync(paths.logFile, 'a');
  log(`starting Docker engine "${name}" (socket ${paths.socket}, log ${paths.logFile})`);
  const child = spawn(
    'dockerd',
    [
      '--iptables=false',
      '--ip6tables=false',
      '--bridge=none',
      `--host=unix://${paths.socket}`,
      `--data-root=${paths.dataRoot}`,
      `--exec-root=${paths.execRoot}`,
      `--pidfile=${paths.pidFile}`,
    ],
    { detached: true, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  child.unref();
  const deadline = Date.now() + 60_000;
  while (!(await pingDocker(docker, 2_000))) {
    if (child.exitCode !== null)
      throw new PlatformError(`dockerd "${name}" exited with code ${child.exitCode}; see ${paths.logFile}`);
    if (Date.now() > deadline)
      throw new PlatformError(`dockerd "${name}" did not answer within 60 s; see ${paths.logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function copyImage(image: string, source: Docker, target: Docker, log: (line: string) => void): Promise<void> {
  const has = await target
    .getImage(image)
    .inspect()
    .then(() => true)
    .catch(() => false);
  if (has) return;
  log(`copying image ${image} to the engine`);
  const saved = await source.getImage(image).get();
  const loading = await target.loadImage(saved);
  await new Promise<void>((resolve, reject) => {
    target.modem.followProgress(loading, (err: Error | null) => (err ? reject(err) : resolve()));
  });
  await target
    .getImage(image)
    .inspect()
    .catch(() => {
      throw new PlatformError(`image ${image} did not arrive on the engine`);
    });
}
