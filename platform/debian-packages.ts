/**
 * Installing a part the project needs from Debian's packages, the way a person would: only as root
 * on Debian (`apt-get install`), otherwise an error that says what to install. Used for the Docker
 * engine and the Web UI test's Chromium.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { childEnvironment } from './settings';
import { PlatformError } from './temporal-cli';

/** True when this process may install Debian packages itself (root on Debian). */
export function canInstallDebianPackages(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0 && fs.existsSync('/etc/debian_version');
}

export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** `apt-get update` and `apt-get install -y <packages>`; throws naming the command that failed. */
export function installDebianPackages(packages: string[], log: (line: string) => void): void {
  log(`installing Debian package${packages.length > 1 ? 's' : ''} ${packages.join(' ')}`);
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', ...packages], { DEBIAN_FRONTEND: 'noninteractive' });
}

function run(cmd: string, args: string[], env: Record<string, string> = {}): void {
  const result = spawnSync(cmd, args, { stdio: 'inherit', env: childEnvironment(env) });
  if (result.status !== 0) throw new PlatformError(`${cmd} ${args.join(' ')} failed with exit code ${result.status}`);
}
