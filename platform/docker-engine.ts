/**
 * Makes a Docker engine reachable: `DOCKER_HOST` or the default socket.
 *
 * When none answers and this process is root on Debian, installs Debian's `docker.io` (if needed) and
 * starts `dockerd --iptables=false --ip6tables=false --bridge=none` in the background; sandboxes run
 * with no network, so the engine needs no bridge. Otherwise it says exactly what to install.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DATA_DIR } from './paths';
import { isAlive } from './dev-server';
import { PlatformError } from './temporal-cli';
import { canInstallDebianPackages, hasCommand, installDebianPackages } from './debian-packages';
import { dockerHost } from './settings';

export function dockerClient(): Docker {
  // dockerode reads DOCKER_HOST (and DOCKER_TLS_VERIFY/DOCKER_CERT_PATH) itself.
  return new Docker();
}

export function describeDockerEndpoint(): string {
  return dockerHost() ?? 'unix:///var/run/docker.sock';
}

/** True when the engine answers a ping within `timeoutMs`. */
export async function pingDocker(docker: Docker = dockerClient(), timeoutMs = 3_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Throws a one-line, actionable error when no engine answers; never installs anything. */
export async function requireDocker(docker: Docker = dockerClient()): Promise<Docker> {
  if (await pingDocker(docker)) return docker;
  throw new PlatformError(
    `no Docker engine answers at ${describeDockerEndpoint()}: start it with \`npm run docker:ensure\` (root on Debian), or install Docker and start it`,
  );
}

export async function ensureDockerEngine(log: (line: string) => void = () => undefined): Promise<Docker> {
  const docker = dockerClient();
  if (await pingDocker(docker)) return docker;
  const host = dockerHost();
  if (host) throw new PlatformError(`DOCKER_HOST=${host} does not answer: start that engine or unset DOCKER_HOST`);
  if (!canInstallDebianPackages()) {
    throw new PlatformError(
      'no Docker engine is running: install Docker (Debian/Ubuntu: `sudo apt-get install docker.io`, or Docker Desktop) and start it, ' +
        'or run this as root on Debian to have it installed and started for you',
    );
  }

  if (!hasCommand('dockerd')) installDebianPackages(['docker.io'], log);

  // A killed daemon leaves its pid file behind and a new one refuses to start; remove it only when no
  // dockerd process is alive.
  const pidFile = '/var/run/docker.pid';
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    if (!(Number.isInteger(pid) && pid > 0 && isAlive(pid))) fs.rmSync(pidFile, { force: true });
  }

  const logFile = path.join(DATA_DIR, 'docker', 'dockerd.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const out = fs.openSync(logFile, 'a');
  log(`starting dockerd (log: ${logFile})`);
  const child = spawn('dockerd', ['--iptables=false', '--ip6tables=false', '--bridge=none'], {
    detached: true,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  child.unref();

  const deadline = Date.now() + 60_000;
  while (!(await pingDocker(docker, 2_000))) {
    if (child.exitCode !== null) {
      throw new PlatformError(`dockerd exited with code ${child.exitCode}; see ${logFile}`);
    }
    if (Date.now() > deadline) throw new PlatformError(`dockerd did not answer within 60 s; see ${logFile}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return docker;
}
