/**
 * Gitea, the forge the pull-request work is tested on: built from its Go module with the machine's
 * Go (minutes, once; cached by version under `<AGENT_TOOLS_DIR>/gitea/<version>/`) and run headless
 * — SQLite, no SSH, no Actions, no cron, webhooks allowed to loopback — with an admin and its access
 * token made by Gitea's own CLI. The module ships no built web assets, so the web UI renders
 * unstyled; the REST API and git over HTTP work fully (what the harness uses).
 *
 * `go install` refuses the module (its go.mod has replace directives and says `module gitea.dev`),
 * so it is built from a copy of the downloaded module, as Jaeger is.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { buildFromModuleCopy } from './go-module-build';
import { DATA_DIR, TOOLS_DIR } from './paths';
import { PlatformError } from './temporal-cli';

const run = promisify(execFile);

export const GITEA_VERSION = '1.27.3';
const MODULE = 'code.gitea.io/gitea';
export const GITEA_ADMIN = 'agent-admin';

export interface GiteaBinary {
  binary: string;
  /** `STATIC_ROOT_PATH`: the module's `options/` (locales, which `gitea web` needs) and `templates/`. */
  staticRoot: string;
  version: string;
}

/** The `gitea` binary at `version`, built when missing. */
export async function ensureGitea(
  version: string = GITEA_VERSION,
  log: (line: string) => void = () => undefined,
): Promise<GiteaBinary> {
  const home = path.join(TOOLS_DIR, 'gitea', version);
  const binary = path.join(home, 'gitea');
  const staticRoot = path.join(home, 'static');
  if (fs.existsSync(binary) && fs.existsSync(path.join(staticRoot, 'options'))) return { binary, staticRoot, version };
  log(`building Gitea ${version} from its Go module (minutes, once; cached in ${home})`);
  const staticBuilding = `${staticRoot}.building-${process.pid}`;
  await buildFromModuleCopy({
    module: MODULE,
    version,
    name: 'Gitea',
    env: { CGO_ENABLED: '0', GOTOOLCHAIN: 'local' },
    buildFlags: ['-trimpath', '-ldflags', `-s -w -X main.Version=${version}`],
    buildArgs: ['.'],
    binary,
    afterBuild: (source) => {
      fs.rmSync(staticBuilding, { recursive: true, force: true });
      for (const folder of ['options', 'templates'])
        fs.cpSync(path.join(source, folder), path.join(staticBuilding, folder), { recursive: true });
      fs.rmSync(staticRoot, { recursive: true, force: true });
      fs.renameSync(staticBuilding, staticRoot);
    },
  });
  return { binary, staticRoot, version };
}

export interface GiteaLayout {
  /** Its config, database, repositories, logs and the admin's token. */
  dir: string;
  port: number;
}

export interface RunningGitea {
  url: string;
  apiUrl: string;
  port: number;
  dir: string;
  adminUser: string;
  /** The admin's token (scopes: all), also in `<dir>/admin-token` (mode 600). */
  adminToken: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/** The app.ini of a headless Gitea in `layout.dir` (secrets generated once, kept in the file). */
export function giteaConfig(
  layout: GiteaLayout,
  staticRoot: string,
  secrets: { secretKey: string; internalToken: string },
): string {
  const dir = layout.dir;
  return [
    'APP_NAME = agent forge',
    `RUN_USER = ${os.userInfo().username}`,
    'RUN_MODE = prod',
    `WORK_PATH = ${dir}`,
    ...(isRoot() ? ['I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true'] : []),
    '',
    '[server]',
    'HTTP_ADDR = 127.0.0.1',
    `HTTP_PORT = ${layout.port}`,
    `ROOT_URL = http://127.0.0.1:${layout.port}/`,
    'DISABLE_SSH = true',
    'OFFLINE_MODE = true',
    `STATIC_ROOT_PATH = ${staticRoot}`,
    `APP_DATA_PATH = ${path.join(dir, 'data')}`,
    'LFS_START_SERVER = false',
    '',
    '[database]',
    'DB_TYPE = sqlite3',
    `PATH = ${path.join(dir, 'data', 'gitea.db')}`,
    'SQLITE_JOURNAL_MODE = WAL',
    '',
    '[security]',
    'INSTALL_LOCK = true',
    `SECRET_KEY = ${secrets.secretKey}`,
    `INTERNAL_TOKEN = ${secrets.internalToken}`,
    'PASSWORD_COMPLEXITY = off',
    '',
    '[webhook]',
    // Without it, webhooks to a receiver on this machine are made but never delivered.
    'ALLOWED_HOST_LIST = loopback',
    'DELIVER_TIMEOUT = 10',
    '',
    '[actions]',
    'ENABLED = false',
    '',
    '[cron]',
    'ENABLED = false',
    '',
    '[repository]',
    `ROOT = ${path.join(dir, 'repositories')}`,
    'DEFAULT_BRANCH = main',
    '',
    '[service]',
    'DISABLE_REGISTRATION = true',
    '',
    '[mailer]',
    'ENABLED = false',
    '',
    '[indexer]',
    'ISSUE_INDEXER_TYPE = db',
    'REPO_INDEXER_ENABLED = false',
    '',
    '[log]',
    'MODE = file',
    'LEVEL = Warn',
    `ROOT_PATH = ${path.join(dir, 'log')}`,
    '',
  ].join('\n');
}

async function gitea(binary: string, config: string | undefined, args: string[]): Promise<string> {
  try {
    return (await run(binary, [...(config ? ['--config', config] : []), ...args], { maxBuffer: 16 * 1024 * 1024 }))
      .stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new PlatformError(
      `gitea ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim().slice(-1500)}`,
    );
  }
}

/**
 * Makes `layout.dir` a Gitea of its own the first time (config, database, the admin and its token)
 * and returns the admin's token; later calls reuse what is there.
 */
export async function prepareGitea(
  binary: GiteaBinary,
  layout: GiteaLayout,
): Promise<{ config: string; adminToken: string }> {
  fs.mkdirSync(layout.dir, { recursive: true, mode: 0o700 });
  const config = path.join(layout.dir, 'app.ini');
  const tokenFile = path.join(layout.dir, 'admin-token');
  if (!fs.existsSync(config)) {
    const secretKey = randomBytes(32).toString('hex');
    const internalToken = (await gitea(binary.binary, undefined, ['generate', 'secret', 'INTERNAL_TOKEN'])).trim();
    fs.writeFileSync(config, giteaConfig(layout, binary.staticRoot, { secretKey, internalToken }), { mode: 0o600 });
  } else {
    // The port or the binary's folder may have changed since: keep the secrets, rewrite the rest.
    const text = fs.readFileSync(config, 'utf8');
    const secretKey = /^SECRET_KEY = (.+)$/m.exec(text)?.[1] ?? randomBytes(32).toString('hex');
    const internalToken = /^INTERNAL_TOKEN = (.+)$/m.exec(text)?.[1];
    if (internalToken)
      fs.writeFileSync(config, giteaConfig(layout, binary.staticRoot, { secretKey, internalToken }), { mode: 0o600 });
  }
  if (fs.existsSync(tokenFile)) return { config, adminToken: fs.readFileSync(tokenFile, 'utf8').trim() };
  await gitea(binary.binary, config, ['migrate']);
  const created = await gitea(binary.binary, config, [
    'admin',
    'user',
    'create',
    '--admin',
    '--username',
    GITEA_ADMIN,
    '--password',
    randomBytes(18).toString('base64url'),
    '--email',
    `${GITEA_ADMIN}@forge.invalid`,
    '--must-change-password=false',
    '--access-token',
    '--access-token-name',
    'agent-admin',
    '--access-token-scopes',
    'all',
  ]);
  const token = /([0-9a-f]{40})\s*$/.exec(created.trim())?.[1];
  if (!token) throw new PlatformError(`gitea admin user create printed no token: ${created.slice(-500)}`);
  fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  return { config, adminToken: token };
}

/**
 * Starts `gitea web` on `layout` (prepared first) and resolves once its API answers. `detached`:
 * the process outlives this one (`npm run forge`), its pid in `<dir>/gitea.pid`.
 */
export async function startGitea(
  binary: GiteaBinary,
  layout: GiteaLayout,
  options: { detached?: boolean; timeoutMs?: number } = {},
): Promise<RunningGitea> {
  const { config, adminToken } = await prepareGitea(binary, layout);
  const logFile = path.join(layout.dir, 'gitea.out');
  const lines: string[] = [];
  let child: ChildProcess;
  if (options.detached) {
    const out = fs.openSync(logFile, 'a');
    child = spawn(binary.binary, ['--config', config, 'web'], {
      stdio: ['ignore', out, out],
      detached: true,
      cwd: layout.dir,
    });
    child.unref();
    fs.closeSync(out);
    fs.writeFileSync(path.join(layout.dir, 'gitea.pid'), `${child.pid}\n`);
  } else {
    child = spawn(binary.binary, ['--config', config, 'web'], { stdio: ['ignore', 'pipe', 'pipe'], cwd: layout.dir });
    const keep = (chunk: Buffer) => lines.push(chunk.toString('utf8'));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${layout.port}`;
  const output = () => (options.detached ? readTail(logFile) : lines.join(''));
  const running: RunningGitea = {
    url,
    apiUrl: `${url}/api/v1`,
    port: layout.port,
    dir: layout.dir,
    adminUser: GITEA_ADMIN,
    adminToken,
    pid: child.pid ?? -1,
    output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new PlatformError(`Gitea exited as it started:\n${output().slice(-2000)}`);
    if (await giteaAnswers(url)) return running;
    if (Date.now() > deadline) {
      await running.stop();
      throw new PlatformError(`Gitea did not answer on ${url}:\n${output().slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function giteaAnswers(url: string): Promise<boolean> {
  return fetch(`${url}/api/v1/version`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => response.ok,
    () => false,
  );
}

function readTail(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-4000);
  } catch {
    return '';
  }
}

/** The persistent forge of `npm run forge`: `<AGENT_DATA_DIR>/forge`, on `port`. */
export function localForgeLayout(port: number): GiteaLayout {
  return { dir: path.join(DATA_DIR, 'forge'), port };
}

/** The pid of the persistent forge's `gitea web`, when it runs. */
export function localForgePid(layout: GiteaLayout): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(layout.dir, 'gitea.pid'), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

export async function stopLocalForge(layout: GiteaLayout): Promise<boolean> {
  const pid = localForgePid(layout);
  if (pid === undefined) return false;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      fs.rmSync(path.join(layout.dir, 'gitea.pid'), { force: true });
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  process.kill(pid, 'SIGKILL');
  fs.rmSync(path.join(layout.dir, 'gitea.pid'), { force: true });
  return true;
}
