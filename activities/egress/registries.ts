/**
 * The package registries of the `registries` egress policy, read from the hands host's own
 * configuration — never a list in this code: what the host's npm, pip, Go, Maven and apt are set up
 * to use is what the sandbox may reach, and the sandbox's package managers are pointed at the same
 * (`sandboxEnv`).
 *
 * | tool  | read from                                                                 |
 * |-------|---------------------------------------------------------------------------|
 * | npm   | `npm config list --json`: `registry` and every `@scope:registry`          |
 * | pip   | `pip config list` / `PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`; else pip's own default index and its file host |
 * | Go    | `GOPROXY` / `go env GOPROXY GOSUMDB`                                      |
 * | Maven | `~/.m2/settings.xml` mirrors; else, when `mvn` is installed, its built-in central |
 * | cargo | when `cargo` is installed or configured: crates.io's sparse index (or the registry `$CARGO_HOME/config.toml` replaces it with) and the download host its `config.json` names |
 * | apt   | `/etc/apt/sources.list`, `/etc/apt/sources.list.d/*.list` and `*.sources` |
 *
 * The sandbox's yarn is pointed at npm's registry (yarn defaults to a host of its own), uv and pdm
 * at pip's index when one is configured.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface RegistryHost {
  host: string;
  port?: number;
  /** Which tool's configuration named it. */
  from: string;
}

export interface HostRegistries {
  hosts: RegistryHost[];
  /** Environment for the sandbox's package managers (`NAME=value`), pointing them at the same registries. */
  env: string[];
}

/** pip's built-in index and the host its files come from (pip's defaults when nothing is configured). */
const PIP_DEFAULT_INDEX = 'https://pypi.org/simple';
const PIP_DEFAULT_FILES = 'https://files.pythonhosted.org';
/** Maven's built-in central repository (its super-POM default). */
const MAVEN_DEFAULT_CENTRAL = 'https://repo.maven.apache.org/maven2';
/** cargo's built-in registry: crates.io's sparse index, and the host its crates come from when the index does not say. */
const CARGO_DEFAULT_INDEX = 'https://index.crates.io/';
const CARGO_DEFAULT_DOWNLOADS = 'https://static.crates.io/crates';
/**
 * Most time one read of a tool's configuration may take: a limit against a hung tool only, sized for
 * a slow and loaded host (`npm config list` takes half a second here when the host is idle).
 */
const READ_LIMIT_MS = 120_000;

/**
 * Reads the registries of this host. Tools that are not installed contribute nothing; a tool that
 * does not answer (`READ_LIMIT_MS`) fails the read, which the caller tries again.
 */
export async function readHostRegistries(
  env: Readonly<Record<string, string | undefined>>,
  options: { readLimitMs?: number } = {},
): Promise<HostRegistries> {
  const limitMs = options.readLimitMs ?? READ_LIMIT_MS;
  const read: Read = (file, args) => output(file, args, limitMs, env);
  const hosts: RegistryHost[] = [];
  const sandboxEnv: string[] = [];
  const add = (url: string | undefined, from: string): void => {
    const parsed = urlHost(url);
    if (parsed && !hosts.some((h) => h.host === parsed.host && h.port === parsed.port)) hosts.push({ ...parsed, from });
  };

  const npm = await npmRegistries(read);
  for (const [key, url] of npm) {
    add(url, `npm ${key}`);
    // yarn 1 and yarn 2+ each default to a registry host of their own: the same registry as npm.
    if (key === 'registry')
      sandboxEnv.push(`NPM_CONFIG_REGISTRY=${url}`, `YARN_REGISTRY=${url}`, `YARN_NPM_REGISTRY_SERVER=${url}`);
  }

  const pip = await pipIndexes(env, read);
  for (const url of pip.urls) add(url, 'pip');
  if (pip.configured) {
    if (pip.index)
      sandboxEnv.push(`PIP_INDEX_URL=${pip.index}`, `UV_DEFAULT_INDEX=${pip.index}`, `PDM_PYPI_URL=${pip.index}`);
    if (pip.extra.length)
      sandboxEnv.push(`PIP_EXTRA_INDEX_URL=${pip.extra.join(' ')}`, `UV_INDEX=${pip.extra.join(' ')}`);
  }

  const go = await goSettings(env, read);
  if (go.proxy) {
    for (const entry of go.proxy.split(/[,|]/)) if (/^https?:\/\//.test(entry)) add(entry, 'GOPROXY');
    sandboxEnv.push(`GOPROXY=${go.proxy}`);
  }
  if (go.sumdb && go.sumdb !== 'off') {
    const sumHost = go.sumdb.split(/\s+/).pop()!;
    add(sumHost.includes('://') ? sumHost : `https://${sumHost}`, 'GOSUMDB');
    sandboxEnv.push(`GOSUMDB=${go.sumdb}`);
  }

  for (const url of await mavenRepositories(read)) add(url, 'maven');
  for (const url of await cargoRegistries(env, read)) add(url, 'cargo');
  for (const url of aptSources()) add(url, 'apt');
  return { hosts, env: sandboxEnv };
}

function urlHost(url: string | undefined): { host: string; port?: number } | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
    const host = u.hostname.toLowerCase();
    return u.port ? { host, port: Number(u.port) } : { host };
  } catch {
    return undefined;
  }
}

/**
 * What a tool prints; undefined when it is not installed or ends with an error (it has nothing to
 * say: pip without a configuration, a `mvn` that cannot run). A tool that is still running at the
 * limit is killed and the read fails: "no registry" is never taken for an answer that did not come.
 * How the tool ended decides, not when the limit's timer ran: a process whose event loop was held
 * (synchronous work beside it) runs the timer late, after a tool that had long finished — whose
 * whole output is still in the pipe, and which a kill at that point no longer reaches.
 */
type Read = (file: string, args: string[]) => Promise<string | undefined>;

function output(
  file: string,
  args: string[],
  limitMs: number,
  env: Readonly<Record<string, string | undefined>>,
): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: os.tmpdir(),
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const limit = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('error', () => {
      // Not installed (ENOENT) or not runnable: nothing to read.
      clearTimeout(limit);
      resolve(undefined);
    });
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      if (code === 0) resolve(Buffer.concat(chunks).toString('utf8'));
      else if (signal)
        reject(new Error(`${[file, ...args].join(' ')} did not finish within ${limitMs / 1000} s (${signal})`));
      else resolve(undefined);
    });
  });
}

async function npmRegistries(read: Read): Promise<Array<[string, string]>> {
  const text = await read('npm', ['config', 'list', '--json']);
  if (!text) return [];
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return [];
  }
  return Object.entries(config).filter(
    (entry): entry is [string, string] =>
      (entry[0] === 'registry' || /^@[^:]+:registry$/.test(entry[0])) && typeof entry[1] === 'string',
  );
}

async function pipIndexes(
  env: NodeJS.ProcessEnv,
  read: Read,
): Promise<{ urls: string[]; index?: string; extra: string[]; configured: boolean }> {
  const listed = (await read('python3', ['-m', 'pip', 'config', 'list'])) ?? '';
  const setting = (key: string): string | undefined => {
    const match = new RegExp(`^[^\\n]*\\.${key}='([^']*)'`, 'm').exec(listed);
    return match?.[1];
  };
  const index = env.PIP_INDEX_URL || setting('index-url');
  const extraText = env.PIP_EXTRA_INDEX_URL || setting('extra-index-url') || '';
  const extra = extraText.split(/\s+/).filter(Boolean);
  const pipInstalled = listed !== '' || (await read('python3', ['-m', 'pip', '--version'])) !== undefined;
  if (!pipInstalled) return { urls: [], extra: [], configured: false };
  const urls = [index ?? PIP_DEFAULT_INDEX, ...extra];
  if (!index) urls.push(PIP_DEFAULT_FILES);
  return { urls, ...(index ? { index } : {}), extra, configured: index !== undefined || extra.length > 0 };
}

async function goSettings(env: NodeJS.ProcessEnv, read: Read): Promise<{ proxy?: string; sumdb?: string }> {
  const fromGo = (await read('go', ['env', 'GOPROXY', 'GOSUMDB']))?.split('\n') ?? [];
  const proxy = env.GOPROXY || fromGo[0]?.trim();
  const sumdb = env.GOSUMDB || fromGo[1]?.trim();
  return { ...(proxy ? { proxy } : {}), ...(sumdb ? { sumdb } : {}) };
}

async function mavenRepositories(read: Read): Promise<string[]> {
  const settings = path.join(os.homedir(), '.m2', 'settings.xml');
  let text = '';
  try {
    text = fs.readFileSync(settings, 'utf8');
  } catch {
    // No user settings: Maven's own default below.
  }
  const mirrors = [...text.matchAll(/<url>\s*([^<\s]+)\s*<\/url>/g)].map((m) => m[1]!);
  if (mirrors.length) return mirrors;
  return (await read('mvn', ['--version'])) !== undefined ? [MAVEN_DEFAULT_CENTRAL] : [];
}

/**
 * The hosts cargo fetches crates from: the sparse index crates.io is replaced with in the host's
 * `$CARGO_HOME/config.toml` (source replacement), else crates.io's; and the download (`dl`) and API
 * hosts that index's `config.json` names. Nothing when cargo is neither installed nor configured.
 */
async function cargoRegistries(env: NodeJS.ProcessEnv, read: Read): Promise<string[]> {
  const home = env.CARGO_HOME || path.join(os.homedir(), '.cargo');
  let config = '';
  for (const name of ['config.toml', 'config']) {
    try {
      config = fs.readFileSync(path.join(home, name), 'utf8');
      break;
    } catch {
      // Not there: the next name, or cargo's defaults.
    }
  }
  if (!config && (await read('cargo', ['--version'])) === undefined) return [];
  const replacement = /\[source\.crates-io\][^[]*?replace-with\s*=\s*["']([^"']+)["']/s.exec(config)?.[1];
  const replaced = replacement
    ? new RegExp(
        `\\[source\\.${replacement.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\][^[]*?registry\\s*=\\s*["']([^"']+)["']`,
        's',
      ).exec(config)?.[1]
    : undefined;
  const index = (replaced ?? CARGO_DEFAULT_INDEX).replace(/^sparse\+/, '');
  const urls = [index];
  // A sparse index says where its crates and API are.
  try {
    const response = await fetch(new URL('config.json', index.endsWith('/') ? index : `${index}/`), {
      signal: AbortSignal.timeout(READ_LIMIT_MS),
    });
    const indexConfig = (await response.json()) as { dl?: unknown; api?: unknown };
    for (const url of [indexConfig.dl, indexConfig.api]) if (typeof url === 'string') urls.push(url);
  } catch {
    if (!replaced) urls.push(CARGO_DEFAULT_DOWNLOADS);
  }
  return urls;
}

function aptSources(): string[] {
  const urls: string[] = [];
  const read = (file: string): string => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const dir = '/etc/apt/sources.list.d';
  let files: string[] = [];
  try {
    files = fs.readdirSync(dir).map((f) => path.join(dir, f));
  } catch {
    // No sources directory.
  }
  for (const file of ['/etc/apt/sources.list', ...files]) {
    const text = read(file);
    if (file.endsWith('.list')) {
      for (const m of text.matchAll(/^\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)/gm)) urls.push(m[1]!);
    } else if (file.endsWith('.sources')) {
      for (const m of text.matchAll(/^URIs:\s*(.+)$/gim)) urls.push(...m[1]!.trim().split(/\s+/));
    }
  }
  return urls;
}
