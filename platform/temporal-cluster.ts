/**
 * A real Temporal cluster on this machine (`npm run cluster -- start|stop|status`): the Temporal
 * server at the dev server's version, built from its Go module with the Go toolchain (cached under
 * `<AGENT_TOOLS_DIR>/temporal-server/<version>/`), PostgreSQL from Debian's package for persistence
 * and visibility (schemas set up with the server's own SQL tool), and the four services — history,
 * matching, frontend, worker — each its own process, with `AGENT_CLUSTER_SHARDS` history shards.
 *
 * Nothing the harness relies on comes from the dev server here: the cluster gets the `default`
 * namespace and the project's search attributes as `agent setup` registers them
 * (`ensureSearchAttributes`), and its dynamic config file (`CLUSTER_DYNAMIC_CONFIG`) holds what the
 * dev server is started with (`DEV_SERVER_DYNAMIC_CONFIG`) plus what a fresh cluster lacks.
 *
 * Idempotent: `start` builds what is missing, reuses a running PostgreSQL and running services, and
 * starts only what is not running; `stop` stops the services, then PostgreSQL. Files: the data,
 * config, logs and pid files under `<AGENT_DATA_DIR>/cluster/` (PostgreSQL's under
 * `/var/lib/postgresql/` when run as root, which PostgreSQL refuses to run as).
 */
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  ensureSearchAttributes,
  isAlive,
  isPortFree,
  isTemporalServing,
} from './dev-server';
import { canInstallDebianPackages, installDebianPackages } from './debian-packages';
import { DATA_DIR, TOOLS_DIR } from './paths';
import { childEnvironment, clusterSettings, goEnvironment } from './settings';
import { cliVersion, ensureTemporalCli, PlatformError } from './temporal-cli';

const run = promisify(execFile);

/** In the order they start: the frontend last but one, once history and matching can answer it. */
export const CLUSTER_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type ClusterService = (typeof CLUSTER_SERVICES)[number];

/** Dynamic config of the cluster: the dev server's, and what a fresh cluster lacks for the harness. */
export const CLUSTER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  ...DEV_SERVER_DYNAMIC_CONFIG,
  // Updates (steering, approvals, abort) are the harness's; recent servers enable them by default.
  'frontend.enableUpdateWorkflowExecution': true,
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted': true,
  // A search attribute `agent setup` just added is usable at once, as on the dev server.
  'system.forceSearchAttributesCacheRefreshOnRead': true,
};

export interface ClusterLayout {
  version: string;
  /** `127.0.0.1:<frontend port>`: what `TEMPORAL_ADDRESS` is set to. */
  address: string;
  ports: Record<ClusterService, { grpc: number; membership: number }> & { http: number; postgres: number };
  shards: number;
  /** Config, logs and pid files. */
  dir: string;
  /** PostgreSQL's data directory (its socket too). */
  postgresDir: string;
}

export interface ServerBinaries {
  server: string;
  sqlTool: string;
  /** `schema/postgresql/v12` of the server's module. */
  schemaDir: string;
}

export interface ClusterStatus {
  address: string;
  version: string;
  postgres: boolean;
  services: Record<ClusterService, number | undefined>;
  /** The frontend answers and the `default` namespace is there. */
  serving: boolean;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/** The dev server's Temporal server version (`temporal --version`: "… (Server 1.32.0, UI …)"). */
export async function devServerVersion(log: (line: string) => void = () => undefined): Promise<string> {
  const version = /Server (\d+\.\d+\.\d+)/.exec(cliVersion(await ensureTemporalCli(log)))?.[1];
  if (!version) throw new PlatformError('could not read the Temporal server version from `temporal --version`');
  return version;
}

export function clusterLayout(version: string): ClusterLayout {
  const { port, postgresPort, shards } = clusterSettings();
  if (port + 110 > 65535) throw new PlatformError(`AGENT_CLUSTER_PORT=${port} leaves no room for the other ports`);
  const service = (offset: number) => ({ grpc: port + offset, membership: port + 100 + offset });
  const dir = path.join(DATA_DIR, 'cluster');
  return {
    version,
    address: `127.0.0.1:${port}`,
    ports: {
      frontend: service(0),
      history: service(1),
      matching: service(2),
      worker: service(3),
      http: port + 10,
      postgres: postgresPort,
    },
    shards,
    dir,
    postgresDir: isRoot() ? `/var/lib/postgresql/agent-cluster-${postgresPort}` : path.join(dir, 'postgres'),
  };
}

/** The server and its SQL tool at `version`, built with `go install` when missing (minutes, once). */
export async function ensureServerBinaries(
  version: string,
  log: (line: string) => void = () => undefined,
): Promise<ServerBinaries> {
  const home = path.join(TOOLS_DIR, 'temporal-server', version);
  const bin = path.join(home, 'bin');
  const env = goEnvironment({}, path.join(DATA_DIR, 'go-build-cache'));
  const go = async (args: string[], extra: Record<string, string> = {}) => {
    try {
      return (await run('go', args, { env: { ...env, ...extra }, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === 'ENOENT')
        throw new PlatformError('the Go toolchain (`go`) is not on PATH: install Go to build the Temporal server');
      throw new PlatformError(`go ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim().slice(-2000)}`);
    }
  };
  const modules = await go(['env', 'GOMODCACHE']);
  const schemaDir = path.join(modules, `go.temporal.io/server@v${version}`, 'schema', 'postgresql', 'v12');
  const binaries = { server: path.join(bin, 'server'), sqlTool: path.join(bin, 'sql'), schemaDir };
  if (fs.existsSync(binaries.server) && fs.existsSync(binaries.sqlTool) && fs.existsSync(schemaDir)) return binaries;
  log(`building the Temporal server ${version} from its Go module (minutes, once; cached in ${home})`);
  const building = `${bin}.building-${process.pid}`;
  fs.rmSync(building, { recursive: true, force: true });
  fs.mkdirSync(building, { recursive: true });
  await go(
    ['install', `go.temporal.io/server/cmd/server@v${version}`, `go.temporal.io/server/cmd/tools/sql@v${version}`],
    { GOBIN: building },
  );
  fs.rmSync(bin, { recursive: true, force: true });
  fs.renameSync(building, bin);
  if (!fs.existsSync(schemaDir))
    throw new PlatformError(`the server's module has no PostgreSQL schemas at ${schemaDir}`);
  return binaries;
}

/** Debian's PostgreSQL programs (the newest installed version). */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length)
    throw new PlatformError(
      'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql',
    );
  return path.join(root, versions[0]!, 'bin');
}

/** Runs a PostgreSQL program as the `postgres` user when this process is root (PostgreSQL refuses root). */
async function asPostgres(program: string, args: string[]): Promise<string> {
  const [file, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, args];
  try {
    return (await run(file, argv, { env: childEnvironment({ LC_ALL: 'C.UTF-8' }) })).stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string; stdout?: string };
    throw new PlatformError(
      `${path.basename(program)} ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim().slice(-1500)}`,
    );
  }
}

async function postgresRunning(layout: ClusterLayout): Promise<boolean> {
  if (!fs.existsSync(path.join(layout.postgresDir, 'PG_VERSION'))) return false;
  return asPostgres(path.join(postgresBin(), 'pg_ctl'), ['-D', layout.postgresDir, 'status']).then(
    () => true,
    () => false,
  );
}

/** PostgreSQL for the cluster on 127.0.0.1:<postgres port>, local connections trusted. */
export async function ensurePostgres(layout: ClusterLayout, log: (line: string) => void): Promise<void> {
  // As a person would: Debian's package when root on Debian, otherwise postgresBin() says what is missing.
  if (!fs.existsSync('/usr/lib/postgresql') && canInstallDebianPackages()) installDebianPackages(['postgresql'], log);
  const bin = postgresBin();
  if (await postgresRunning(layout)) return;
  if (!(await isPortFree(layout.ports.postgres)))
    throw new PlatformError(`port ${layout.ports.postgres} is taken by another program: set AGENT_CLUSTER_PG_PORT`);
  if (!fs.existsSync(path.join(layout.postgresDir, 'PG_VERSION'))) {
    log(`initialising PostgreSQL in ${layout.postgresDir}`);
    fs.mkdirSync(layout.postgresDir, { recursive: true, mode: 0o700 });
    if (isRoot()) await run('chown', ['-R', 'postgres:postgres', layout.postgresDir]);
    await asPostgres(path.join(bin, 'initdb'), [
      '-D',
      layout.postgresDir,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
  }
  log(`starting PostgreSQL on 127.0.0.1:${layout.ports.postgres}`);
  await asPostgres(path.join(bin, 'pg_ctl'), [
    '-D',
    layout.postgresDir,
    '-l',
    path.join(layout.postgresDir, 'server.log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-p ${layout.ports.postgres} -k ${layout.postgresDir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
    'start',
  ]);
}

/** The `temporal` and `temporal_visibility` databases with the server's schemas (made once, updated on every start). */
export async function ensureSchemas(
  layout: ClusterLayout,
  binaries: ServerBinaries,
  log: (line: string) => void,
): Promise<void> {
  const sql = async (database: string, args: string[]) => {
    const base = ['--plugin', 'postgres12', '--endpoint', '127.0.0.1', '--port', String(layout.ports.postgres)];
    try {
      return (await run(binaries.sqlTool, [...base, '--user', 'postgres', '--database', database, ...args])).stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string; stdout?: string };
      throw new PlatformError(
        `temporal-sql-tool ${args[0]} on ${database} failed: ${(e.stderr || e.stdout || e.message).trim().slice(-1500)}`,
      );
    }
  };
  for (const [database, schema] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ] as const) {
    const made = path.join(layout.postgresDir, `.agent-schema-${database}`);
    if (!fs.existsSync(made)) {
      log(`making the ${database} database`);
      await sql(database, ['create-database']).catch((err: Error) => {
        if (!/already exists/.test(err.message)) throw err;
      });
      await sql(database, ['setup-schema', '-v', '0.0']);
      fs.writeFileSync(made, `${layout.version}\n`);
    }
    await sql(database, ['update-schema', '-d', path.join(binaries.schemaDir, schema, 'versioned')]);
  }
}

/** The server's config (`<dir>/config/cluster.yaml`) and dynamic config, written on every start. */
function writeConfig(layout: ClusterLayout): string {
  const configDir = path.join(layout.dir, 'config');
  fs.mkdirSync(configDir, { recursive: true });
  const dynamicConfig = path.join(configDir, 'dynamic-config.yaml');
  fs.writeFileSync(
    dynamicConfig,
    Object.entries(CLUSTER_DYNAMIC_CONFIG)
      .map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}\n`)
      .join(''),
  );
  const store = (database: string, conns: number) =>
    [
      `      sql:`,
      `        pluginName: "postgres12"`,
      `        databaseName: "${database}"`,
      `        connectAddr: "127.0.0.1:${layout.ports.postgres}"`,
      `        connectProtocol: "tcp"`,
      `        user: "postgres"`,
      `        password: ""`,
      `        maxConns: ${conns}`,
      `        maxIdleConns: ${conns}`,
      `        maxConnLifetime: "1h"`,
    ].join('\n');
  const service = (name: ClusterService) =>
    [
      `  ${name}:`,
      `    rpc:`,
      `      grpcPort: ${layout.ports[name].grpc}`,
      `      membershipPort: ${layout.ports[name].membership}`,
      `      bindOnIP: "127.0.0.1"`,
      ...(name === 'frontend' ? [`      httpPort: ${layout.ports.http}`] : []),
    ].join('\n');
  const yaml = [
    'log:',
    '  stdout: true',
    '  level: warn',
    'persistence:',
    '  defaultStore: postgres-default',
    '  visibilityStore: postgres-visibility',
    `  numHistoryShards: ${layout.shards}`,
    '  datastores:',
    '    postgres-default:',
    store('temporal', 20),
    '    postgres-visibility:',
    store('temporal_visibility', 10),
    'global:',
    '  membership:',
    '    maxJoinDuration: 30s',
    '    broadcastAddress: "127.0.0.1"',
    'services:',
    ...CLUSTER_SERVICES.map(service),
    'clusterMetadata:',
    '  enableGlobalNamespace: false',
    '  failoverVersionIncrement: 10',
    '  masterClusterName: "active"',
    '  currentClusterName: "active"',
    '  clusterInformation:',
    '    active:',
    '      enabled: true',
    '      initialFailoverVersion: 1',
    '      rpcName: "frontend"',
    `      rpcAddress: "${layout.address}"`,
    'dcRedirectionPolicy:',
    '  policy: "noop"',
    'dynamicConfigClient:',
    `  filepath: "${dynamicConfig}"`,
    '  pollInterval: "10s"',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(configDir, 'cluster.yaml'), yaml);
  return configDir;
}

const pidFile = (layout: ClusterLayout, service: ClusterService) => path.join(layout.dir, `${service}.pid`);
const logFile = (layout: ClusterLayout, service: ClusterService) => path.join(layout.dir, 'logs', `${service}.log`);

/** The pid of the service's process when it runs. */
export function servicePid(layout: ClusterLayout, service: ClusterService): number | undefined {
  try {
    const pid = Number(fs.readFileSync(pidFile(layout, service), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts one service in the background (a no-op when it runs). */
export function startService(layout: ClusterLayout, binaries: ServerBinaries, service: ClusterService): number {
  const running = servicePid(layout, service);
  if (running) return running;
  const configDir = path.join(layout.dir, 'config');
  fs.mkdirSync(path.dirname(logFile(layout, service)), { recursive: true });
  const out = fs.openSync(logFile(layout, service), 'a');
  const child = spawn(
    binaries.server,
    ['--root', configDir, '--config', '.', '--env', 'cluster', '--allow-no-auth', 'start', '--service', service],
    { detached: true, stdio: ['ignore', out, out], env: childEnvironment({}) },
  );
  fs.closeSync(out);
  if (child.pid === undefined) throw new PlatformError(`could not start the ${service} service (${binaries.server})`);
  child.unref();
  fs.writeFileSync(pidFile(layout, service), `${child.pid}\n`);
  return child.pid;
}

/** Stops one service (SIGKILL: a crash, as a fault test wants; SIGTERM: a clean stop) and waits for it to go. */
export async function stopService(
  layout: ClusterLayout,
  service: ClusterService,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  const pid = servicePid(layout, service);
  if (!pid) return;
  process.kill(pid, signal);
  const deadline = Date.now() + 30_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) process.kill(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  fs.rmSync(pidFile(layout, service), { force: true });
}

function tail(file: string, lines = 8): string {
  try {
    const last = fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines);
    return last.map((line) => (line.length > 400 ? `${line.slice(0, 400)}…` : line)).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Builds what is missing and starts what is not running; resolves once the frontend serves `default`. */
export async function startCluster(log: (line: string) => void = () => undefined): Promise<ClusterStatus> {
  const layout = clusterLayout(await devServerVersion(log));
  for (const service of CLUSTER_SERVICES) {
    if (servicePid(layout, service)) continue;
    for (const port of [layout.ports[service].grpc, layout.ports[service].membership])
      if (!(await isPortFree(port)))
        throw new PlatformError(
          `port ${port} (the ${service} service's) is taken by another program: set AGENT_CLUSTER_PORT`,
        );
  }
  const binaries = await ensureServerBinaries(layout.version, log);
  await ensurePostgres(layout, log);
  await ensureSchemas(layout, binaries, log);
  writeConfig(layout);
  // One at a time, each once it listens: every service writes the cluster's metadata record at its
  // start, and two first starts at once collide on it.
  for (const service of CLUSTER_SERVICES) {
    if (servicePid(layout, service)) continue;
    log(`starting the ${service} service`);
    startService(layout, binaries, service);
    await waitListening(layout, service);
  }
  await waitServing(layout);
  const added = await registerSearchAttributes(layout);
  if (added.length) log(`registered search attributes: ${added.join(', ')}`);
  return clusterStatus(layout);
}

/** `agent setup`'s search attributes; a namespace just made is not known to every service at once. */
async function registerSearchAttributes(layout: ClusterLayout, timeoutMs = 60_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await ensureSearchAttributes(layout.address, 'default');
    } catch (err) {
      if (!/NOT_FOUND/.test((err as Error).message) || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Waits until the service listens on its gRPC port; fails with its log when it exits first. */
export async function waitListening(
  layout: ClusterLayout,
  service: ClusterService,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (await isPortFree(layout.ports[service].grpc)) {
    if (!servicePid(layout, service))
      throw new PlatformError(
        `the ${service} service exited; see ${logFile(layout, service)}:\n${tail(logFile(layout, service))}`,
      );
    if (Date.now() > deadline)
      throw new PlatformError(
        `the ${service} service did not listen on ${layout.ports[service].grpc}; see ${logFile(layout, service)}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits for the frontend, registers `default` when missing, and waits until it is served. */
export async function waitServing(layout: ClusterLayout, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const check = (what: string) => {
    for (const service of CLUSTER_SERVICES)
      if (!servicePid(layout, service))
        throw new PlatformError(
          `the ${service} service exited; see ${logFile(layout, service)}:\n${tail(logFile(layout, service))}`,
        );
    if (Date.now() > deadline)
      throw new PlatformError(
        `the cluster did not ${what} on ${layout.address}; see ${path.join(layout.dir, 'logs')}/`,
      );
  };
  while (!(await isTemporalServing(layout.address, 'temporal-system'))) {
    check('answer');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (!(await isTemporalServing(layout.address, 'default'))) {
    const cli = await ensureTemporalCli();
    await run(cli.path, [
      'operator',
      'namespace',
      'create',
      '--address',
      layout.address,
      '--namespace',
      'default',
      '--retention',
      '72h',
    ]).catch((err: Error & { stderr?: string }) => {
      if (!/already exists|AlreadyExists/i.test(`${err.stderr ?? ''} ${err.message}`))
        throw new PlatformError(`could not create the default namespace: ${(err.stderr ?? err.message).trim()}`);
    });
  }
  while (!(await isTemporalServing(layout.address, 'default'))) {
    check('serve the default namespace');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

export async function clusterStatus(layout?: ClusterLayout): Promise<ClusterStatus> {
  const l = layout ?? clusterLayout(await devServerVersion());
  const services = Object.fromEntries(CLUSTER_SERVICES.map((s) => [s, servicePid(l, s)])) as ClusterStatus['services'];
  return {
    address: l.address,
    version: l.version,
    postgres: await postgresRunning(l).catch(() => false),
    services,
    serving: await isTemporalServing(l.address, 'default'),
  };
}

/** Stops the services (frontend first), then PostgreSQL; the data stays. */
export async function stopCluster(log: (line: string) => void = () => undefined): Promise<void> {
  const layout = clusterLayout(await devServerVersion());
  for (const service of ['frontend', 'worker', 'matching', 'history'] as const) {
    if (servicePid(layout, service)) log(`stopping the ${service} service`);
    await stopService(layout, service);
  }
  if (await postgresRunning(layout)) {
    log('stopping PostgreSQL');
    await asPostgres(path.join(postgresBin(), 'pg_ctl'), ['-D', layout.postgresDir, '-m', 'fast', '-w', 'stop']);
  }
}
