/**
 * Egress on a hands host: how a sandbox is wired to the proxy, and the per-call gate that gives the
 * proxy the call's policy and returns what the call reached.
 *
 * Wiring (`SandboxEgressWiring`, used by the sandbox manager when it creates a container):
 *  - `/run/agent-egress` (read-only): the sandbox's own directory on the host holding the proxy's
 *    unix socket. Its host name is an HMAC of the container name under a key only the worker can
 *    read, so other users of the host cannot find (and use) a sandbox's socket.
 *  - the forwarder: the sandbox tools' `forward` (`../hands/executor/sandbox-tools.ts`, mounted into
 *    every container), run by the container's first process: 127.0.0.1:3128 → the socket.
 *  - `/opt/agent-egress` (read-only): `ca.pem`, the host's trusted CA bundle (its system bundle plus
 *    `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, pip's `cert`), so a corporate TLS proxy the host trusts
 *    is trusted in the sandbox too.
 *  - the environment of every command: `HTTP(S)_PROXY`, the CA variables of the common tools, and the
 *    host's registry settings (`registries.ts`).
 *
 * Settings: `AGENT_EGRESS_DIR` (`EGRESS_PART`); the host's own tool configuration comes from the
 * environment it is given (the hands worker's).
 */
import { createHmac, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { ApplicationFailure } from '@temporalio/common';
import {
  EGRESS_PROXY_RESTARTED,
  parseHostEntry,
  summarizeEgress,
  type EgressPolicy,
  type EgressSummary,
} from '../../common/egress';
import { readPart, settingsPart, text, variable, type Environment } from '../../common/env-settings';
import type { SecretStore } from '../secrets/store';
import { SANDBOX_TOOLS } from '../hands/executor/sandbox-tools';
import { ProxySupervisor } from './proxy-supervisor';
import type { ResolvedEgress } from './proxy-rules';
import { readHostRegistries, type HostRegistries } from './registries';

/** The forwarder's port inside the container. */
export const SANDBOX_PROXY_PORT = 3128;
const SOCKET_DIR = '/run/agent-egress';
const SHARED_DIR = '/opt/agent-egress';
const CA_FILE = `${SHARED_DIR}/ca.pem`;

/** Where the proxy keeps its sockets and key without `AGENT_EGRESS_DIR`. */
function defaultEgressDir(): string {
  return path.join(os.tmpdir(), `agent-egress-${process.getuid?.() ?? 'user'}`);
}

/** The egress proxy's variable (the hands worker). */
export const EGRESS_PART = settingsPart({
  title: 'Egress proxy',
  intro:
    "The proxy on the hands host through which alone a sandbox reaches the network (`activities/egress/`). The `registries` policy allows what the host's own npm, pip, Go, Maven and apt are configured to use (their usual configuration and variables: `PIP_INDEX_URL`, `GOPROXY`, …), and the sandbox trusts the host's CA bundle (with `SSL_CERT_FILE`, `NODE_EXTRA_CA_CERTS`, `PIP_CERT`, `REQUESTS_CA_BUNDLE`).",
  variables: {
    dir: variable(
      'AGENT_EGRESS_DIR',
      {
        description:
          "where the proxy keeps each sandbox's socket directory, its key and the files it shares with sandboxes",
        default: '`<tmp>/agent-egress-<uid>`',
        values: 'a directory',
      },
      text(undefined),
    ),
  },
  build: ({ dir }) => ({ dir: dir ?? defaultEgressDir() }),
});

/** What the sandbox manager needs to give a container its way out. */
export interface SandboxEgressWiring {
  /**
   * Resolves once `env()` is complete (the host's registries are read at start, asynchronously);
   * rejects, retryably, while they cannot be read.
   */
  ready(): Promise<void>;
  /** Environment of every command in the sandbox. */
  env(): string[];
  /** Bind mounts of a new container (its socket directory is made here). */
  mounts(containerName: string): Docker.MountSettings[];
  /** The container's first process: the forwarder (restarted if it stops) and the idle sleep. */
  command: string[];
  /** The sandbox's container is gone: stop serving its socket and remove its directory. */
  release(containerName: string): void;
  /** A container without a mount at this path was made without egress and is replaced. */
  marker: string;
}

/** One tool call's view of the proxy: `settle`, then `finish`, after the command to get what it reached. */
export interface EgressCall {
  /** Waits until the proxy has reported the call's connections (they close as its command ends). */
  settle(): Promise<void>;
  finish(): EgressSummary;
}

export class EgressHost implements SandboxEgressWiring {
  readonly root: string;
  readonly command: string[];
  readonly marker = SOCKET_DIR;
  private readonly key: Buffer;
  private readonly supervisor: ProxySupervisor;
  private registries: HostRegistries | undefined;
  /** The read of the host's registries in flight (none once they are known, or after one that failed). */
  private reading: Promise<HostRegistries> | undefined;
  private readonly readRegistries: () => Promise<HostRegistries>;
  private readonly warn: (line: string) => void;

  constructor(
    private readonly options: {
      secrets: SecretStore;
      /** The hands host's environment: `AGENT_EGRESS_DIR`, and its tools' registry and CA settings. */
      env: Environment;
      warn?: (line: string) => void;
      /** The host's registries (tests pass their own); default: read from the host's configuration. */
      registries?: HostRegistries;
    },
  ) {
    const env = options.env;
    this.root = readPart('egress', EGRESS_PART, env).dir;
    fs.mkdirSync(path.join(this.root, 'shared'), { recursive: true, mode: 0o711 });
    fs.mkdirSync(path.join(this.root, 's'), { recursive: true, mode: 0o711 });
    this.key = loadKey(path.join(this.root, 'key'));
    writeIfChanged(path.join(this.root, 'shared', 'ca.pem'), Buffer.from(hostCaBundle(env)));
    this.command = [
      'bash',
      '-c',
      `(while :; do ${SANDBOX_TOOLS} forward ${SANDBOX_PROXY_PORT} ${SOCKET_DIR}/proxy.sock; sleep 1; done) & exec sleep infinity`,
    ];
    this.warn = options.warn ?? ((line: string) => process.stderr.write(`${line}\n`));
    this.supervisor = new ProxySupervisor(this.warn, env);
    const given = options.registries;
    this.readRegistries = given ? () => Promise.resolve(given) : () => readHostRegistries(env);
    // Read at once, so the first sandbox need not wait; one that fails is read again by the next caller.
    this.hostRegistries().catch(() => undefined);
  }

  /**
   * The host's registries, read once. A read that failed (a tool that did not answer) is never taken
   * for "no registries": the callers waiting on it fail (retryably) and the next caller reads again.
   * A sandbox whose `registries` policy silently lacked npm's registry would fail much later, with
   * the proxy's refusal of a host the task was promised.
   */
  private hostRegistries(): Promise<HostRegistries> {
    if (this.registries) return Promise.resolve(this.registries);
    this.reading ??= this.readRegistries().then(
      (registries) => {
        this.registries = registries;
        this.reading = undefined;
        return registries;
      },
      (err: unknown) => {
        this.reading = undefined;
        const why = err instanceof Error ? err.message : String(err);
        this.warn(`WARNING: egress: the host's package registries could not be read (${why}); reading them again`);
        throw ApplicationFailure.create({
          type: 'EgressProxyFailed',
          message: `the host's package registries could not be read: ${why}`,
        });
      },
    );
    return this.reading;
  }

  /** The host's secret store (credentials the proxy adds; what tool outputs are masked with). */
  get secrets(): SecretStore {
    return this.options.secrets;
  }

  /** The proxy process id (tests stop it to prove the restart). */
  get proxyPid(): number | undefined {
    return this.supervisor.pid;
  }

  /**
   * Starts the proxy process ahead of the first tool call (a hands worker does at start: a worker
   * that takes over a dead one's call then does not wait for a process to boot).
   */
  warm(): void {
    this.supervisor.start();
  }

  /** Resolves once the host's registries are read (`env()` is then complete); see `hostRegistries`. */
  async ready(): Promise<void> {
    await this.hostRegistries();
  }

  /** Whether `url`'s host is one of the host's registries (what the `registries` policy reaches). */
  async isRegistry(url: string): Promise<boolean> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return false;
    }
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'http:' ? 80 : 443;
    const host = parsed.hostname.toLowerCase();
    return (await this.hostRegistries()).hosts.some(
      (h) => h.host === host && (h.port === undefined || h.port === port),
    );
  }

  env(): string[] {
    const proxy = `http://127.0.0.1:${SANDBOX_PROXY_PORT}`;
    return [
      // The usual variables, and the tools that read only their own: npm's, yarn's, cargo's.
      ...[
        'HTTP_PROXY',
        'HTTPS_PROXY',
        'http_proxy',
        'https_proxy',
        'NPM_CONFIG_PROXY',
        'NPM_CONFIG_HTTPS_PROXY',
        'YARN_HTTP_PROXY',
        'YARN_HTTPS_PROXY',
        'CARGO_HTTP_PROXY',
      ].map((name) => `${name}=${proxy}`),
      'NO_PROXY=localhost,127.0.0.1,::1',
      'no_proxy=localhost,127.0.0.1,::1',
      ...[
        'SSL_CERT_FILE',
        'NODE_EXTRA_CA_CERTS',
        'NPM_CONFIG_CAFILE',
        'PIP_CERT',
        'REQUESTS_CA_BUNDLE',
        'GIT_SSL_CAINFO',
        'CURL_CA_BUNDLE',
        // cargo ignores SSL_CERT_FILE.
        'CARGO_HTTP_CAINFO',
        'YARN_CA_FILE_PATH',
      ].map((name) => `${name}=${CA_FILE}`),
      ...(this.registries?.env ?? []),
    ];
  }

  mounts(containerName: string): Docker.MountSettings[] {
    const dir = this.socketDir(containerName);
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    return [
      { Type: 'bind', Source: path.join(this.root, 'shared'), Target: SHARED_DIR, ReadOnly: true },
      { Type: 'bind', Source: dir, Target: SOCKET_DIR, ReadOnly: true },
    ];
  }

  /**
   * Before a tool call in `containerName`: the proxy serves `policy` there. Throws `SecretNotFound`
   * (non-retryable) for a credential the store does not hold, `EgressProxyFailed` when the proxy
   * cannot start.
   */
  async begin(containerName: string, policy: EgressPolicy | undefined): Promise<EgressCall> {
    const resolved = this.resolve(policy ?? 'none', await this.hostRegistries());
    const deathsBefore = this.supervisor.deaths;
    try {
      await this.supervisor.serve(containerName, path.join(this.socketDir(containerName), 'proxy.sock'), resolved);
    } catch (err) {
      throw ApplicationFailure.create({
        type: 'EgressProxyFailed',
        message: `the egress proxy did not start: ${(err as Error).message}`,
      });
    }
    this.supervisor.drain(containerName);
    return {
      settle: () => this.supervisor.flush(containerName),
      finish: () => {
        const summary = summarizeEgress(this.supervisor.drain(containerName));
        return this.supervisor.deaths !== deathsBefore ? { ...summary, proxyRestarted: true } : summary;
      },
    };
  }

  release(containerName: string): void {
    this.supervisor.close(containerName);
    fs.rmSync(this.socketDir(containerName), { recursive: true, force: true });
  }

  /** Stops the proxy process (worker shutdown). */
  shutdown(): void {
    this.supervisor.shutdown();
  }

  private socketDir(containerName: string): string {
    const id = createHmac('sha256', this.key).update(containerName).digest('hex').slice(0, 24);
    return path.join(this.root, 's', id);
  }

  private resolve(policy: EgressPolicy, registries: HostRegistries): ResolvedEgress {
    const hostRules = registries.hosts.map((h) =>
      h.port === undefined ? { host: h.host } : { host: h.host, port: h.port },
    );
    if (policy === 'none') return { label: 'none', allow: [], registries: [], credentials: {} };
    if (policy === 'registries') return { label: 'registries', allow: [], registries: hostRules, credentials: {} };
    const credentials: ResolvedEgress['credentials'] = {};
    for (const [entry, credential] of Object.entries(policy.credentials ?? {})) {
      const host = parseHostEntry(entry)!.host.replace(/^\[(.*)\]$/, '$1');
      const token = this.options.secrets.require(credential.secret, `the egress credential for ${entry}`);
      credentials[host] = {
        header: credential.header,
        value: credential.scheme ? `${credential.scheme} ${token}` : token,
        secret: credential.secret,
        upstream: credential.upstream,
      };
    }
    return {
      label: policy.registries ? 'allow-list and registries' : 'allow-list',
      allow: policy.allow.map((entry) => parseHostEntry(entry)!),
      registries: policy.registries ? hostRules : [],
      credentials,
    };
  }
}

/** A tool call during which the proxy stopped fails retryably; the proxy is already restarted. */
export function proxyRestartedFailure(): ApplicationFailure {
  return ApplicationFailure.create({
    type: EGRESS_PROXY_RESTARTED,
    message: 'the egress proxy stopped during this call (it has been restarted); requests in flight failed',
  });
}

function loadKey(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch {
    const key = randomBytes(32);
    fs.writeFileSync(file, key, { mode: 0o600, flag: 'wx' });
    return fs.readFileSync(file);
  }
}

function writeIfChanged(file: string, content: Buffer): void {
  let current: Buffer | undefined;
  try {
    current = fs.readFileSync(file);
  } catch {
    current = undefined;
  }
  // In place (not a rename): running containers keep seeing the same file.
  if (!current || !current.equals(content)) fs.writeFileSync(file, content, { mode: 0o644 });
}

/** The host's trusted certificates: its system bundle and every extra bundle its tools are told about. */
function hostCaBundle(env: Environment): string {
  const files = [
    '/etc/ssl/certs/ca-certificates.crt',
    '/etc/pki/tls/certs/ca-bundle.crt',
    env.SSL_CERT_FILE,
    env.NODE_EXTRA_CA_CERTS,
    env.PIP_CERT,
    env.REQUESTS_CA_BUNDLE,
  ];
  const seen = new Set<string>();
  const out: string[] = [];
  for (const file of files) {
    if (!file) continue;
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const block of text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) {
      if (seen.has(block)) continue;
      seen.add(block);
      out.push(block);
    }
  }
  return `${out.join('\n')}\n`;
}
