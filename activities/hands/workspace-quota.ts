/**
 * A disk quota per workspace. Docker's `local` volume driver has no size option on an ext4 host
 * without project quotas, so each workspace is its own ext4 file system: a sparse image file on the
 * hands host (`<imageDir>/agent-ws-<sessionId>.ext4`, as large as the quota, using only what is
 * written), attached to a loop device, and given to Docker as a `local` volume of type `ext4` on that
 * device. Inside the sandbox `df /workspace` shows the quota and a write past it fails with ENOSPC;
 * the host's disk is untouched beyond the image.
 *
 * Root only (loop devices): where the hands worker is not root, the engine is remote, or the tools
 * (`losetup`, `mkfs.ext4`) are missing, `quotaUnsupportedReason` says why and the sandbox lifecycle
 * falls back to plain volumes with a warning.
 *
 * Loop devices do not survive a reboot: `attach` re-attaches an image whose device is gone (the
 * volume is then re-created on the new device, its files intact), and `release` detaches the device
 * and deletes the image when the volume is removed.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { spawnDirectly, type HostCommandRunner } from './host-commands';

export interface WorkspaceQuota {
  /** Size of each workspace file system, in bytes. */
  sizeBytes: number;
  /** Host directory of the image files. */
  imageDir: string;
}

/** Why disk quotas cannot be made on this host for `docker`'s volumes, or undefined when they can. */
export function quotaUnsupportedReason(docker: Pick<Docker, 'modem'>): string | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    return 'the hands worker is not root (loop devices need root)';
  }
  // The engine's endpoint as dockerode resolved it (from DOCKER_HOST): a host, or a local socket.
  const endpoint = docker.modem as { host?: string; port?: string | number };
  if (endpoint.host) {
    return `the Docker engine is remote (${endpoint.host}${endpoint.port ? `:${endpoint.port}` : ''}); its volumes are not on this host`;
  }
  for (const tool of ['losetup', 'mkfs.ext4', 'debugfs']) {
    if (!findTool(tool)) return `${tool} is not installed (Debian: e2fsprogs, mount)`;
  }
  return undefined;
}

const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const tools = new Map<string, string | undefined>();

/** Where `name` is: on the worker's PATH (as its shell finds it), else in the system directories. */
function findTool(name: string): string | undefined {
  if (!tools.has(name)) {
    const onPath = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { encoding: 'utf8' }).stdout?.trim();
    const found = onPath && path.isAbsolute(onPath) ? onPath : undefined;
    tools.set(name, found ?? SYSTEM_DIRS.map((dir) => path.join(dir, name)).find((file) => fs.existsSync(file)));
  }
  return tools.get(name);
}

async function run(tool: string, args: string[], commands: HostCommandRunner): Promise<string> {
  const file = findTool(tool) ?? tool;
  let result;
  try {
    result = await commands(file, args);
  } catch (err) {
    throw new Error(`${tool} ${args.join(' ')} failed: ${(err as Error).message}`);
  }
  if (result.exitCode !== 0)
    throw new Error(`${tool} ${args.join(' ')} failed: ${result.stderr.trim() || `exit status ${result.exitCode}`}`);
  return result.stdout.trim();
}

/** The file-system image of the workspace volume `volumeName`. */
export function imagePathOf(quota: WorkspaceQuota, volumeName: string): string {
  return path.join(quota.imageDir, `${volumeName}.ext4`);
}

/**
 * Makes the workspace's file system: a sparse image of the quota's size, ext4 with no reserved
 * blocks, its root owned by the agent's uid and no `lost+found` (the workspace root is the project).
 * An image that already exists is kept (its files are the workspace).
 */
export async function createImage(
  image: string,
  sizeBytes: number,
  ownerUid: number,
  commands: HostCommandRunner = spawnDirectly,
): Promise<void> {
  if (fs.existsSync(image)) return;
  fs.mkdirSync(path.dirname(image), { recursive: true, mode: 0o700 });
  const partial = `${image}.${process.pid}.partial`;
  fs.rmSync(partial, { force: true });
  try {
    const fd = fs.openSync(partial, 'w', 0o600);
    try {
      fs.ftruncateSync(fd, sizeBytes);
    } finally {
      fs.closeSync(fd);
    }
    await run(
      'mkfs.ext4',
      [
        '-q',
        '-F',
        '-m',
        '0',
        '-E',
        `root_owner=${ownerUid}:${ownerUid},lazy_itable_init=1,lazy_journal_init=1`,
        partial,
      ],
      commands,
    );
    await run('debugfs', ['-w', '-R', 'rmdir lost+found', partial], commands);
    // A link never replaces an image another process finished first: the first one is the workspace.
    fs.linkSync(partial, image);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(partial, { force: true });
  }
}

/** The loop device `image` is attached to, if any (`/dev/loopN`). */
export async function deviceOf(
  image: string,
  commands: HostCommandRunner = spawnDirectly,
): Promise<string | undefined> {
  const out = await run('losetup', ['--associated', image, '--noheadings', '--output', 'NAME'], commands).catch(
    () => '',
  );
  return out.split('\n').find(Boolean)?.trim();
}

/** The image file a loop device is attached to, if it is attached. */
export function backingFileOf(device: string): string | undefined {
  const name = path.basename(device);
  try {
    return fs.readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Attaches the image to a loop device unless it already is; returns the device. */
export async function attach(image: string, commands: HostCommandRunner = spawnDirectly): Promise<string> {
  const existing = await deviceOf(image, commands);
  if (existing) return existing;
  return run('losetup', ['--find', '--show', image], commands);
}

/** Detaches the image's loop device (only if it really is this image's) and deletes the image. */
export async function release(
  image: string,
  device?: string,
  commands: HostCommandRunner = spawnDirectly,
): Promise<void> {
  const devices = new Set<string>();
  if (device && backingFileOf(device) === image) devices.add(device);
  const attached = await deviceOf(image, commands);
  if (attached) devices.add(attached);
  for (const dev of devices) await run('losetup', ['--detach', dev], commands);
  fs.rmSync(image, { force: true });
}

/** `10G`, `512M`, `10GiB`, `1.5g`, bytes; `off`, `none` or `0` for no quota (null). */
export function parseQuotaSize(text: string): number | null {
  const value = text.trim().toLowerCase();
  if (value === 'off' || value === 'none' || value === '0') return null;
  return parseSize(text, 64 * 1024 ** 2, ', or off');
}

/** `10G`, `512M`, `10GiB`, `1.5g` or bytes, at least `min` bytes. */
export function parseSize(text: string, min: number, alternatives = ''): number {
  const match = /^(\d+(?:\.\d+)?)\s*(k|m|g|t)?(i?b)?$/.exec(text.trim().toLowerCase());
  if (!match) throw new Error(`not a size: ${JSON.stringify(text)} (use e.g. 10G, 512M${alternatives})`);
  const unit = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[match[2] as 'k' | 'm' | 'g' | 't'] ?? 1;
  const bytes = Math.floor(Number(match[1]) * unit);
  if (bytes < min) throw new Error(`must be at least ${formatBytes(min)} (got ${text})`);
  return bytes;
}

/** `10 GiB`, `512 MiB`: a size in words for messages. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  if (unit === 0 && bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${value} ${units[unit]}`;
}
