/**
 * The chaos soak (`npm run soak`, and a three-minute one in the cluster stage's tests): on the Temporal
 * cluster of `npm run cluster`, two brain workers and two hands hosts on two Docker engines (real
 * `agent worker` processes) carry a steady load — at most `concurrency` units of work at once: a
 * coding task, a session with two lanes, and single operations with approvals, hooks, aborts, a
 * spent budget and egress — while the fault injector follows the seed's schedule. After the load
 * and the faults, every process is up again and the work drains; then every unit is accounted for
 * (accepted = completed + failed + aborted, nothing lost), every effect counted (no `never` effect
 * twice), the ledger checked against the model server's count, and what is left on the engines
 * listed (no leaks).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import Docker from 'dockerode';
import { ensureExtraDockerEngine } from '../../platform/docker-engines';
import { PROJECT_ROOT } from '../../platform/paths';
import { startService, waitServing, type ClusterLayout, type ServerBinaries } from '../../platform/temporal-cluster';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import {
  checkLedger,
  countEffects,
  countWork,
  latencies,
  summarizeFaults,
  verdictOf,
  type ServedRequest,
} from './accounting';
import { retriedModelAttempts } from './attempts';
import { Collector, finalLeaks, type Engine } from './collect';
import { FaultInjector } from './faults';
import { Fleet, HOSTS, type HostName } from './fleet';
import { readRefusedCompletions } from './refused';
import { SoakModel } from './model';
import { SOAK_SCHEMA_VERSION, type SoakResults } from './results';
import { planSoak, type SlotPlan, type SoakPlan } from './schedule';
import { expectedEnd, runUnit, sandboxesOf, type UnitContext, type UnitRecord } from './units';
import { ZERO_USAGE } from '../../common/model-types';

const run = promisify(execFile);

export interface SoakOptions {
  minutes: number;
  seed: string;
  concurrency: number;
  cluster: { layout: ClusterLayout; binaries: ServerBinaries };
  workflowBundlePath: string;
  image: string;
  /** The node arguments that run the `agent` CLI. */
  agentArgs: string[];
  /** Where the run keeps its files (process logs, the repository, workspace images, task clones). */
  dataDir: string;
  log: (line: string) => void;
  /** How long the work may take to drain once the load and the faults are over (default 10 min). */
  drainTimeoutMs?: number;
}

/** Settings the processes run with, for the report. */
export const SOAK_SETTINGS = {
  AGENT_WORKSPACE_QUOTA: '96M',
  AGENT_MODEL_IDLE_TIMEOUT_MS: '8000',
  stallMs: '12000',
} as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** This machine's first non-internal IPv4 address: the egress proxy reaches it like any other host. */
function hostAddress(): string {
  for (const addresses of Object.values(os.networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('the soak needs a non-loopback IPv4 address for its egress units');
}

/** The egress units' stand-in host: counts requests by path and answers each after 300 ms. */
async function startStandIn(): Promise<{ host: string; requests: Map<string, number>; close(): Promise<void> }> {
  const requests = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const key = req.url ?? '/';
    requests.set(key, (requests.get(key) ?? 0) + 1);
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end(`fetched ${key}\n`), 300);
  });
  const address = hostAddress();
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    host: `${address}:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `examples/textkit` as a bare repository with one commit on main (the coding tasks' remote). */
async function textkitRemote(dir: string): Promise<string> {
  const work = path.join(dir, 'textkit');
  fs.cpSync(path.join(PROJECT_ROOT, 'examples', 'textkit'), work, { recursive: true });
  const git = (cwd: string, ...args: string[]) => run('git', args, { cwd, env: { ...process.env, LANG: 'C' } });
  await git(work, 'init', '-q', '-b', 'main');
  await git(work, 'add', '-A');
  await git(work, '-c', 'user.name=soak', '-c', 'user.email=soak@example.invalid', 'commit', '-q', '-m', 'textkit');
  await git(dir, 'clone', '-q', '--bare', work, path.join(dir, 'textkit.git'));
  return `file://${path.join(dir, 'textkit.git')}`;
}

interface Parts {
  plan: SoakPlan;
  runId: string;
  model: ScriptedModelServer;
  soakModel: SoakModel;
  standIn: Awaited<ReturnType<typeof startStandIn>>;
  fleet: Fleet;
  engines: Record<HostName, Engine>;
  client: Client;
  connection: Connection;
  remoteUrl: string;
  brainQueue: string;
  handsQueue: string;
}

async function setUp(options: SoakOptions, plan: SoakPlan, runId: string): Promise<Parts> {
  const { log, dataDir } = options;
  fs.mkdirSync(dataDir, { recursive: true });
  const engineB = await ensureExtraDockerEngine('hands-b', { images: [options.image], log });
  const engines: Record<HostName, Engine> = {
    'host-a': { docker: new Docker(), dockerArgs: [], prefix: `soak${runId}a-`, imageDir: path.join(dataDir, 'ws-a') },
    'host-b': {
      docker: engineB.docker,
      dockerArgs: ['-H', engineB.dockerHost],
      prefix: `soak${runId}b-`,
      imageDir: path.join(dataDir, 'ws-b'),
    },
  };
  const standIn = await startStandIn();
  const soakModel = new SoakModel({ egressUrl: `http://${standIn.host}`, stallMs: Number(SOAK_SETTINGS.stallMs) });
  const model = await startScriptedModelServer({ script: soakModel.script, recordBodies: false });
  const remoteUrl = await textkitRemote(dataDir);
  const brainQueue = `soak-${runId}-brain`;
  const handsQueue = `soak-${runId}-hands`;
  const fleet = new Fleet({
    agentArgs: options.agentArgs,
    address: options.cluster.layout.address,
    brainQueue,
    handsQueue,
    modelUrl: model.url,
    workflowBundlePath: options.workflowBundlePath,
    image: options.image,
    hosts: {
      'host-a': { prefix: engines['host-a'].prefix, imageDir: engines['host-a'].imageDir },
      'host-b': {
        prefix: engines['host-b'].prefix,
        imageDir: engines['host-b'].imageDir,
        dockerHost: engineB.dockerHost,
      },
    },
    env: {
      AGENT_WORKSPACE_QUOTA: SOAK_SETTINGS.AGENT_WORKSPACE_QUOTA,
      AGENT_MODEL_IDLE_TIMEOUT_MS: SOAK_SETTINGS.AGENT_MODEL_IDLE_TIMEOUT_MS,
      AGENT_TASKS_DIR: path.join(dataDir, 'tasks'),
      AGENT_ALLOWED_ROOTS: dataDir,
    },
    logDir: path.join(dataDir, 'logs'),
    log,
  });
  log('starting two brain workers and two hands hosts');
  await fleet.start();
  const connection = await Connection.connect({ address: options.cluster.layout.address });
  const client = new Client({ connection, namespace: 'default' });
  return {
    plan,
    runId,
    model,
    soakModel,
    standIn,
    fleet,
    engines,
    client,
    connection,
    remoteUrl,
    brainQueue,
    handsQueue,
  };
}

/** The load: each slot runs its units back to back until `loadEnd`; resolves when their last units end. */
function startLoad(
  parts: Parts,
  ctx: UnitContext,
  loadEnd: number,
  units: UnitRecord[],
  live: Set<UnitRecord>,
  collector: Collector,
) {
  const runSlot = async (slot: SlotPlan) => {
    for (let i = 0; i < slot.kinds.length && Date.now() < loadEnd; i++) {
      const kind = slot.kinds[i]!;
      const id = `soak-${parts.runId}-${slot.slot}-${i}`;
      const unit: UnitRecord = {
        id,
        kind,
        slot: slot.slot,
        sandboxes: sandboxesOf(kind, id),
        submittedAt: Date.now(),
        expected: expectedEnd(kind),
        usage: { ...ZERO_USAGE },
        operations: [],
        forbiddenCalls: [],
      };
      units.push(unit);
      live.add(unit);
      await runUnit(ctx, unit, slot.choices[i]!);
      live.delete(unit);
      if (unit.state) collector.add(unit);
    }
  };
  return Promise.all(parts.plan.slots.map(runSlot));
}

export async function runSoak(options: SoakOptions): Promise<SoakResults> {
  const started = Date.now();
  const { log } = options;
  const durationMs = Math.round(options.minutes * 60_000);
  const plan = planSoak({ seed: options.seed, durationMs, concurrency: options.concurrency });
  const runId = Math.random().toString(36).slice(2, 8);
  const loadAverageStart = os.loadavg()[0]!;
  const parts = await setUp(options, plan, runId);
  const { fleet, soakModel, engines } = parts;
  const units: UnitRecord[] = [];
  const live = new Set<UnitRecord>();
  const collector = new Collector(engines, options.image);
  const problems: string[] = [];
  const t0 = Date.now();
  const loadEnd = t0 + durationMs;
  const drainTimeoutMs = options.drainTimeoutMs ?? 600_000;
  let giveUpAt = loadEnd + 180_000 + drainTimeoutMs;
  const ctx: UnitContext = {
    client: parts.client,
    brainQueue: parts.brainQueue,
    handsQueue: parts.handsQueue,
    remoteUrl: parts.remoteUrl,
    egressHost: parts.standIn.host,
    giveUpAt: () => giveUpAt,
    log: (line) => log(`  ${line}`),
  };
  log(
    `soak ${runId}: ${options.minutes} min, seed ${options.seed}, ${options.concurrency} units at most; faults from +${plan.warmupMs / 1000} s`,
  );
  const injector = new FaultInjector({
    plan,
    fleet,
    model: soakModel,
    cluster: options.cluster,
    engines,
    live: () => [...live],
    t0,
    log,
  });
  try {
    const load = startLoad(parts, ctx, loadEnd, units, live, collector);
    // The faults, then every kind not fired yet (for up to three minutes past the load).
    await injector.run(() => Date.now() < loadEnd + 180_000);
    injector.stop();
    const faultPhaseEndMs = Math.max(Date.now(), loadEnd) - t0;
    log('faults over: every process and service up again');
    await fleet.allUp();
    startService(options.cluster.layout, options.cluster.binaries, 'history');
    await waitServing(options.cluster.layout);
    giveUpAt = Math.max(Date.now(), loadEnd) + drainTimeoutMs;
    log(`draining the work (at most ${drainTimeoutMs / 1000} s)`);
    const drained = await Promise.race([
      load.then(() => true),
      sleep(giveUpAt - Date.now() + 30_000).then(() => false),
    ]);
    if (!drained) problems.push('the drain timed out: units still in flight are counted as lost');
    for (const unit of live) if (!unit.error) unit.error = 'did not end within the drain';
    const drainedAtMs = Date.now() - t0;
    return await account(options, parts, {
      units,
      live,
      collector,
      injector,
      problems,
      t0,
      started,
      loadAverageStart,
      faultPhaseEndMs,
      drainedAtMs,
      loadEnd,
    });
  } finally {
    await tearDown(parts, options);
  }
}

interface Bookkeeping {
  units: UnitRecord[];
  live: Set<UnitRecord>;
  collector: Collector;
  injector: FaultInjector;
  problems: string[];
  t0: number;
  started: number;
  loadAverageStart: number;
  faultPhaseEndMs: number;
  drainedAtMs: number;
  loadEnd: number;
}

/** Ends what still runs of the run (a lost unit's workflows), collects every workspace, and counts. */
async function account(options: SoakOptions, parts: Parts, b: Bookkeeping): Promise<SoakResults> {
  const { log } = options;
  const running = await runningWorkflows(parts);
  for (const id of running)
    await parts.client.workflow
      .getHandle(id)
      .terminate('soak: still running after the drain')
      .catch(() => undefined);
  for (const unit of b.live) b.collector.add(unit);
  log('reading every workspace and removing the sandboxes');
  await b.collector.flush();
  const cacheVolumesRemoved = await removeCacheVolumes(parts.engines);
  const afterRemoval = await finalLeaks(parts.engines);
  const orphanProcesses = parts.fleet.orphanProxies().map((pid) => `egress proxy pid ${pid} (of a killed hands host)`);
  const killedKeys = new Map(parts.fleet.restarts.filter((r) => r.apiKey).map((r) => [r.apiKey!, r.downAt] as const));
  const requests: ServedRequest[] = parts.model.requests.map((r) => ({
    index: r.index,
    path: r.path,
    receivedAt: r.receivedAt,
    apiKey: r.headers['x-api-key'] || /^Bearer\s+(.+)$/i.exec(r.headers.authorization ?? '')?.[1] || '',
    clientDisconnected: r.clientDisconnected,
    reportedUsage: r.reportedUsage,
    bodyHash: r.bodyHash,
  }));
  const refused = readRefusedCompletions(path.join(options.dataDir, 'logs'));
  // The histories are read only for the units whose usage the first check could not explain.
  const firstCheck = checkLedger(b.units, requests, parts.soakModel.unitOf, killedKeys, refused);
  const retried = await retriedModelAttempts(
    parts.client,
    firstCheck.mismatches.map((m) => m.unit),
  );
  const ledger = retried.size
    ? checkLedger(b.units, requests, parts.soakModel.unitOf, killedKeys, refused, retried)
    : firstCheck;
  // What the ledger was checked on, kept with the run's logs so that a verdict can be checked again.
  fs.writeFileSync(
    path.join(options.dataDir, 'ledger-input.json'),
    JSON.stringify({
      units: b.units.map((u) => ({ id: u.id, usage: u.usage, endedAt: u.endedAt })),
      requests: requests.map((r) => ({ ...r, unit: parts.soakModel.unitOf.get(r.index) })),
      killedKeys: [...killedKeys],
      refused,
      retried: [...retried],
    }),
  );
  const firstFault = b.injector.fired.find((f) => f.outcome === 'injected');
  const leaks = {
    containersLeftAfterEnd: b.collector.containersLeft,
    afterRemoval,
    workflowsRunning: running,
    orphanProcesses,
    cacheVolumesRemoved,
    total: 0,
  };
  leaks.total =
    leaks.containersLeftAfterEnd.length +
    afterRemoval.containers.length +
    afterRemoval.volumes.length +
    afterRemoval.loopDevices.length +
    afterRemoval.imageFiles.length +
    running.length +
    orphanProcesses.length;
  const results: Omit<SoakResults, 'verdict'> = {
    schemaVersion: SOAK_SCHEMA_VERSION,
    run: {
      seed: options.seed,
      runId: parts.runId,
      minutes: options.minutes,
      concurrency: options.concurrency,
      startedAt: new Date(b.started).toISOString(),
      endedAt: new Date().toISOString(),
      setupMs: b.t0 - b.started,
      warmupMs: parts.plan.warmupMs,
      loadEndMs: b.loadEnd - b.t0,
      faultPhaseEndMs: b.faultPhaseEndMs,
      drainedAtMs: b.drainedAtMs,
      temporal: `cluster of npm run cluster (Temporal ${options.cluster.layout.version}, ${options.cluster.layout.shards} history shards, PostgreSQL) at ${options.cluster.layout.address}`,
      machine: {
        cpus: os.cpus().length,
        memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
        loadAverage: {
          start: Math.round(b.loadAverageStart * 100) / 100,
          end: Math.round(os.loadavg()[0]! * 100) / 100,
        },
      },
      settings: { ...SOAK_SETTINGS },
    },
    work: countWork(b.units),
    effects: countEffects(b.units, b.collector.logs, parts.standIn.requests, b.collector.workspacesFound),
    ledger,
    leaks,
    faults: summarizeFaults(parts.plan.faults, b.injector.fired, parts.soakModel.served),
    latency: latencies(b.units, b.t0, firstFault?.atMs ?? parts.plan.warmupMs, b.faultPhaseEndMs),
    restarts: parts.fleet.restarts,
    problems: [
      ...b.problems,
      ...b.collector.problems,
      ...parts.model.scriptErrors.map((e) => `model request ${e.requestIndex}: ${e.message}`),
    ],
  };
  return { ...results, verdict: verdictOf(results) };
}

/** This run's workflows still running (found in visibility, confirmed by describing each). */
async function runningWorkflows(parts: Parts): Promise<string[]> {
  const prefixes = [`soak-${parts.runId}`, `session-soak-${parts.runId}`, `op-soak-${parts.runId}`];
  const query = `(${prefixes.map((p) => `WorkflowId STARTS_WITH '${p}'`).join(' OR ')}) AND ExecutionStatus = 'Running'`;
  const found: string[] = [];
  for await (const execution of parts.client.workflow.list({ query })) {
    const status = await parts.client.workflow
      .getHandle(execution.workflowId)
      .describe()
      .then((d) => d.status.name)
      .catch(() => 'UNKNOWN');
    if (status === 'RUNNING') found.push(execution.workflowId);
  }
  return found;
}

/** The repositories' dependency cache volumes of this run (kept by design across workspaces). */
async function removeCacheVolumes(engines: Record<HostName, Engine>): Promise<string[]> {
  const removed: string[] = [];
  for (const host of HOSTS) {
    const { docker, prefix } = engines[host];
    const volumes = (await docker.listVolumes()).Volumes ?? [];
    for (const volume of volumes.filter((v) => v.Name.startsWith(`${prefix}cache-`))) {
      await docker
        .getVolume(volume.Name)
        .remove()
        .catch(() => undefined);
      removed.push(`${volume.Name} (${host})`);
    }
  }
  return removed;
}

async function tearDown(parts: Parts, options: SoakOptions): Promise<void> {
  await parts.fleet.stop().catch((err: Error) => options.log(`stopping the workers: ${err.message}`));
  await parts.connection.close().catch(() => undefined);
  await parts.model.stop().catch(() => undefined);
  await parts.standIn.close().catch(() => undefined);
  // The logs stay; the repository and the task clones go (the workspace images went with their volumes).
  for (const entry of ['textkit', 'textkit.git', 'tasks'])
    fs.rmSync(path.join(options.dataDir, entry), { recursive: true, force: true });
}
