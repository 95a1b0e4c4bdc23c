/**
 * The hands host's own registry clients, used to pick toolchain versions and fetch toolchain
 * packages before a build: its npm (`npm view`, `npm pack`) and its pip (`pip index versions`), each
 * with the host's configuration (registry, proxy, CA). What is fetched is kept in the toolchain
 * cache (once per exact version).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as tar from 'tar-stream';
import { EnvironmentError } from './errors';
import type { ToolchainHost } from './plan';
import { compareVersions, parseVersion } from './versions';

const execFileAsync = promisify(execFile);

/** `npm view <name> versions` on the host, with the host's registry. */
export async function npmVersions(host: ToolchainHost, name: string): Promise<string[]> {
  try {
    const { stdout } = await execFileAsync('npm', ['view', name, 'versions', '--json'], {
      env: host.env,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 120_000,
    });
    const parsed = JSON.parse(stdout) as unknown;
    return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : [];
  } catch (err) {
    throw new Error(`npm view ${name} versions failed on the hands host: ${describeExecError(err)}`);
  }
}

/** `npm pack <spec>` on the host into the toolchain cache (once per exact version). */
export async function npmPack(
  host: ToolchainHost,
  spec: string,
  what = 'node',
): Promise<{ file: string; version: string; integrity: string }> {
  const dir = path.join(host.cacheDir, 'npm');
  fs.mkdirSync(dir, { recursive: true });
  try {
    const { stdout } = await execFileAsync('npm', ['view', spec, 'version', 'dist.integrity', '--json'], {
      env: host.env,
      timeout: 120_000,
    });
    const viewed = JSON.parse(stdout) as unknown;
    // A range can match several versions: npm then prints an array, in no promised order.
    type Viewed = { version: string; 'dist.integrity': string };
    const info = Array.isArray(viewed)
      ? (viewed as Viewed[]).reduce((a, b) => (byNewest(a.version, b.version) <= 0 ? a : b))
      : (viewed as Viewed);
    const name = spec.slice(0, spec.lastIndexOf('@'));
    const file = path.join(dir, `${name.replace('/', '-')}-${info.version}.tgz`);
    if (!fs.existsSync(file)) {
      const staging = fs.mkdtempSync(path.join(dir, '.pack-'));
      try {
        await execFileAsync('npm', ['pack', `${name}@${info.version}`, '--pack-destination', staging, '--silent'], {
          env: host.env,
          timeout: 600_000,
        });
        const [packed] = fs.readdirSync(staging).filter((f) => f.endsWith('.tgz'));
        if (!packed) throw new Error('npm pack wrote no archive');
        fs.renameSync(path.join(staging, packed), file);
      } finally {
        fs.rmSync(staging, { recursive: true, force: true });
      }
    }
    return { file, version: info.version, integrity: info['dist.integrity'] };
  } catch (err) {
    throw new EnvironmentError(
      'invalid',
      `${what}: ${spec} could not be fetched from the npm registry: ${describeExecError(err)}`,
    );
  }
}

/** Copies a package tarball's entries into `into`, renamed by `rename` (undefined drops an entry). */
export async function repack(
  file: string,
  into: tar.Pack,
  rename: (name: string) => string | undefined,
  progress: () => void,
  /** Which renamed files are commands (default: those in a `bin/` folder). */
  executable: (name: string) => boolean = (name) => /\/bin\/[^/]+$/.test(name),
): Promise<void> {
  const { createGunzip } = await import('node:zlib');
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const name = rename(header.name);
      if (!name || (header.type !== 'file' && header.type !== 'symlink')) {
        stream.resume();
        stream.on('end', next);
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const body = Buffer.concat(chunks);
        const mode = executable(name) ? 0o755 : (header.mode ?? 0o644) | 0o444;
        into.entry(
          {
            name,
            mode,
            size: body.length,
            ...(header.linkname ? { linkname: header.linkname, type: header.type } : {}),
          },
          body,
          (err) => (err ? reject(err) : (progress(), next())),
        );
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  fs.createReadStream(file).pipe(createGunzip()).pipe(extract);
  await done;
}

/** A package tarball's `package.json` (its `bin` map, say). */
export interface PackageManifest {
  name?: string;
  bin?: string | Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

export async function readPackageJson(file: string): Promise<PackageManifest> {
  const { createGunzip } = await import('node:zlib');
  const extract = tar.extract();
  let found: string | undefined;
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      // The tarball's one top folder is `package/` by convention, not always.
      const manifest = /^[^/]+\/package\.json$/.test(header.name) && found === undefined;
      stream.on('data', (chunk: Buffer) => {
        if (manifest) chunks.push(chunk);
      });
      stream.on('end', () => {
        if (manifest) found = Buffer.concat(chunks).toString('utf8');
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  fs.createReadStream(file).pipe(createGunzip()).pipe(extract);
  await done;
  if (found === undefined) throw new Error(`${path.basename(file)} has no package.json`);
  return JSON.parse(found) as PackageManifest;
}

/** A package's released versions on the host's Python package index, as its pip lists them (`pip index versions`). */
export async function pypiVersions(host: ToolchainHost, name: string): Promise<string[]> {
  try {
    const { stdout } = await execFileAsync('python3', ['-m', 'pip', 'index', 'versions', name], {
      env: { ...host.env, PIP_DISABLE_PIP_VERSION_CHECK: '1' },
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const listed = /^Available versions:\s*(.+)$/m.exec(stdout)?.[1] ?? '';
    return listed
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
  } catch (err) {
    throw new EnvironmentError(
      'invalid',
      `${name}: its versions could not be listed with the hands host's pip (python3 -m pip index versions ${name}): ${describeExecError(err)}`,
    );
  }
}

/** Newest first: negative when `a` is newer (versions this module cannot read sort last). */
function byNewest(a: string, b: string): number {
  const va = parseVersion(a);
  const vb = parseVersion(b);
  if (!va || !vb) return va ? -1 : vb ? 1 : 0;
  return compareVersions(vb, va);
}

export function describeExecError(err: unknown): string {
  const stderr = (err as { stderr?: string }).stderr;
  const text = stderr?.trim() || (err instanceof Error ? err.message : String(err));
  return text.split('\n').slice(-5).join(' ').slice(0, 600);
}
