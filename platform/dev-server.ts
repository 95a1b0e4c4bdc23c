/**
 * Starts, probes and stops a Temporal dev server (`temporal server start-dev`).
 *
 * Used by `npm run server` (a persistent server with its SQLite file under `.data/temporal/`) and by
 * the test suite (an ephemeral server on a free port). Readiness means the frontend answers gRPC and
 * the namespace exists, never merely that a port is open.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES, searchAttributeFlags } from '../common/search-attributes';
import { PlatformError, ResolvedCli } from './temporal-cli';

export interface DevServerOptions {
  cli: ResolvedCli;
  /** gRPC port of the frontend. */
  port: number;
  /** Web UI port; `undefined` runs headless. */
  uiPort?: number;
  ip?: string;
  namespace?: string;
  /** SQLite file for persistence; omit for an in-memory server. */
  dbFile?: string;
  /** Where the server's stdout/stderr go. */
  logFile: string;
  /** Keep running after this process exits (for `npm run server`). */
  detached?: boolean;
  /** `--dynamic-config-value KEY=JSON` pairs, on top of (and overriding) `DEV_SERVER_DYNAMIC_CONFIG`. */
  dynamicConfig?: Record<string, unknown>;
  /** How long to wait for readiness. */
  readyTimeoutMs?: number;
  /** Register the project's search attributes at start (default true; false gives a bare server, as a cluster is). */
  searchAttributes?: boolean;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  pid: number;
  /** Stops the server (SIGTERM, then SIGKILL after a grace period) and waits for it to exit. */
  stop(): Promise<void>;
  /** Kills the server abruptly (SIGKILL), as a crash would. */
  kill(): Promise<void>;
}

/**
 * Dynamic config every dev server started here gets, unless the caller sets the same key.
 *
 * `history.transferProcessorMaxPollRPS` (server default 20): how often a history shard may read its
 * transfer queue — the queue through which every completed activity hands its workflow a new
 * workflow task. The dev server has a single shard, so at the default every such hand-off waits for
 * the next 50 ms slot once the first 20 reads of a second are spent: an operation's steps (two
 * hand-offs each) settle at about 100 ms however fast the model and tools are. At 1000 the reads
 * happen when there is work, and a step takes what its parts take. Ordering, exactly-once dispatch
 * and durability do not depend on it (it only paces the shard's reads of its own queue); the cost
 * is more, smaller database reads. On a production cluster it is the operator's call (many shards,
 * and each read takes up to 100 tasks, so the pacing costs a busy cluster little).
 *
 * `history.timerProcessorMaxTimeShift` (server default 1 s): a new timer task never fires earlier
 * than "now + the shift" at the shard's last read of its timer queue — a margin for clocks that
 * differ between the hosts of a cluster. Every timer shorter than that fires up to a second late:
 * an activity's retry after 0.25 s, and the re-armed heartbeat timeout that notices a dead worker.
 * Failover after a killed worker took about a second longer for it. A dev server is one process
 * with one clock, so 50 ms keeps timers close to their time; the cost is more frequent reads of
 * the timer queue when timers are short. On a production cluster it is the operator's call.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxTimeShift': '50ms',
};

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const address = `${ip}:${opts.port}`;
  if (!(await isPortFree(opts.port, ip))) {
    throw new PlatformError(
      `port ${opts.port} is already in use by another program: stop it or choose another port (TEMPORAL_PORT)`,
    );
  }
  if (opts.uiPort !== undefined && !(await isPortFree(opts.uiPort, ip))) {
    throw new PlatformError(
      `Web UI port ${opts.uiPort} is already in use: stop the program using it or choose another port (TEMPORAL_UI_PORT)`,
    );
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(opts.port),
    '--namespace',
    namespace,
    '--log-level',
    'warn',
  ];
  if (opts.uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(opts.uiPort));
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push(
      '--db-filename',
      opts.dbFile,
      '--sqlite-pragma',
      'journal_mode=WAL',
      '--sqlite-pragma',
      'synchronous=NORMAL',
    );
  }
  if (opts.searchAttributes !== false) for (const flag of searchAttributeFlags()) args.push('--search-attribute', flag);
  for (const [key, value] of Object.entries({ ...DEV_SERVER_DYNAMIC_CONFIG, ...opts.dynamicConfig })) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  // The server takes a port of its own choosing for its HTTP API and its metrics, and binds it a
  // moment later; on a busy machine another program may take it in between. Only that is retried.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchDevServer(opts, args, ip, address, namespace);
    } catch (err) {
      if (!(err instanceof OwnPortTaken) || attempt === PORT_RACE_ATTEMPTS) throw err;
    }
  }
}

const PORT_RACE_ATTEMPTS = 3;

/** The server lost a race for a port it chose itself (not one the caller asked for). */
class OwnPortTaken extends PlatformError {}

async function launchDevServer(
  opts: DevServerOptions,
  args: string[],
  ip: string,
  address: string,
  namespace: string,
): Promise<DevServer> {
  const logStart = fs.existsSync(opts.logFile) ? fs.statSync(opts.logFile).size : 0;
  const log = fs.openSync(opts.logFile, 'a');
  const child = spawn(opts.cli.path, args, { detached: opts.detached ?? false, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  if (child.pid === undefined) throw new PlatformError(`could not start ${opts.cli.path}`);
  const pid = child.pid;
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  if (opts.detached) child.unref();

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  while (!(await isTemporalServing(address, namespace))) {
    if (exited !== undefined) {
      const message = `temporal dev server exited with code ${exited} before it was ready; see ${opts.logFile}:\n${tail(opts.logFile)}`;
      const log = fs.readFileSync(opts.logFile).subarray(logStart).toString('utf8');
      throw lostOwnPort(log, [opts.port, opts.uiPort]) ? new OwnPortTaken(message) : new PlatformError(message);
    }
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      throw new PlatformError(
        `temporal dev server did not become ready on ${address}; see ${opts.logFile}:\n${tail(opts.logFile)}`,
      );
    }
    await delay(200);
  }

  const waitExit = (): Promise<void> => waitForPidExit(pid);
  return {
    address,
    namespace,
    uiUrl: opts.uiPort === undefined ? undefined : `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${opts.uiPort}`,
    pid,
    async stop() {
      if (!isAlive(pid)) return;
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => isAlive(pid) && process.kill(pid, 'SIGKILL'), 10_000);
      await waitExit();
      clearTimeout(timer);
    },
    async kill() {
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      await waitExit();
    },
  };
}

/**
 * Whether a server's log says it could not bind a port it chose itself: one in use that is none of
 * `requested` (the frontend's and the Web UI's, which the caller asked for and a retry would not change).
 */
export function lostOwnPort(log: string, requested: ReadonlyArray<number | undefined>): boolean {
  const taken = [...log.matchAll(/listen tcp [^ ]*:(\d+): bind: address already in use/g)].map((m) => Number(m[1]));
  return taken.length > 0 && taken.every((port) => !requested.includes(port));
}

/** True when a Temporal frontend answers on `address` and `namespace` is registered. */
export async function isTemporalServing(address: string, namespace = 'default'): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: 1_000 });
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/**
 * Registers any of the project's search attributes that `namespace` lacks (a server started by
 * someone else, or an older version of this project). Returns the names it added.
 */
export async function ensureSearchAttributes(address: string, namespace = 'default'): Promise<string[]> {
  const connection = await Connection.connect({ address });
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const have = new Set([
      ...Object.keys(existing.customAttributes ?? {}),
      ...Object.keys(existing.systemAttributes ?? {}),
    ]);
    const missing = Object.values(SEARCH_ATTRIBUTES).filter((key) => !have.has(key.name));
    if (missing.length === 0) return [];
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.flatMap((key) => {
          const type = encodeSearchAttributeIndexedValueType(key.type);
          return type === undefined ? [] : [[key.name, type] as const];
        }),
      ),
    });
    return missing.map((key) => key.name);
  } finally {
    await connection.close();
  }
}

export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the OS says is free now (the usual small race is acceptable for tests). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ port: 0, host }, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitForPidExit(pid: number): Promise<void> {
  while (isAlive(pid)) await delay(50);
}

function tail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
