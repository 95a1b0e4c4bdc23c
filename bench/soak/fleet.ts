/**
 * The soak's worker processes: two brain workers (`agent worker brain`) and two hands hosts (`agent
 * worker hands`: host-a on the default Docker engine, host-b on a second `dockerd`), each a real
 * process of the CLI the way a deployment runs them, all polling the same queues. The fleet kills one
 * (SIGKILL, as a crash), starts it again, and records every restart; a process that exits without
 * being killed is restarted too, and recorded as an unexpected exit (the report shows its last
 * lines).
 *
 * Each brain process runs with an API key of its own (`soak-<name>.<generation>`), so the model
 * server's log says which process made each request: a request cut off when its process was killed
 * is told apart from one the harness gave up itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const BRAINS = ['brain-1', 'brain-2'] as const;
export const HOSTS = ['host-a', 'host-b'] as const;
export type HostName = (typeof HOSTS)[number];
export type ProcessName = (typeof BRAINS)[number] | HostName;

export interface FleetOptions {
  /** The node arguments that run the `agent` CLI (before `worker <role>`). */
  agentArgs: string[];
  address: string;
  brainQueue: string;
  /** The hands queue both hosts poll (each also polls its own, `<queue>@<host>`). */
  handsQueue: string;
  modelUrl: string;
  workflowBundlePath: string;
  image: string;
  /** Per host: its sandboxes' name prefix, its Docker engine (`DOCKER_HOST`; default engine when absent), its workspace images. */
  hosts: Record<HostName, { prefix: string; dockerHost?: string; imageDir: string }>;
  /** Environment every process gets on top of this one's (model timeouts, quota, tasks folder). */
  env: Record<string, string>;
  /** Where each process's output goes (`<name>.<generation>.log`). */
  logDir: string;
  log: (line: string) => void;
}

export interface RestartRecord {
  process: ProcessName;
  /** Why it went down: `fault <kind> #<n>`, or `exited unexpectedly (code …)`. */
  cause: string;
  oldPid: number;
  newPid?: number;
  /** A brain's API key before the restart: the model requests it made. */
  apiKey?: string;
  /** Epoch ms: went down, started again, ready (polling) again. */
  downAt: number;
  startedAt?: number;
  readyAt?: number;
}

interface Managed {
  name: ProcessName;
  generation: number;
  child?: ChildProcess;
  /** True once it printed that it runs, until it exits. */
  ready: boolean;
  /** Set while the fleet itself is taking it down (a kill or the final stop). */
  expectedExit: boolean;
  logFile: string;
  exited?: Promise<void>;
}

const READY = / worker running on /;

export class Fleet {
  readonly restarts: RestartRecord[] = [];
  /** Restarts on their way (each resolves once its process polls again). */
  private readonly restarting: Promise<void>[] = [];
  private readonly processes = new Map<ProcessName, Managed>();
  private readonly killedProxies: number[] = [];
  private stopping = false;

  constructor(private readonly options: FleetOptions) {
    fs.mkdirSync(options.logDir, { recursive: true });
    for (const name of [...BRAINS, ...HOSTS])
      this.processes.set(name, { name, generation: 0, ready: false, expectedExit: false, logFile: '' });
  }

  /** Starts the four processes and resolves once all poll. */
  async start(): Promise<void> {
    await Promise.all([...this.processes.values()].map((p) => this.spawn(p)));
  }

  isUp(name: ProcessName): boolean {
    return this.processes.get(name)!.ready;
  }

  pidOf(name: ProcessName): number | undefined {
    const p = this.processes.get(name)!;
    return p.ready ? p.child?.pid : undefined;
  }

  /** The API key the brain process `name` uses now (`soak-<name>.<generation>`). */
  static keyOf(name: string, generation: number): string {
    return `soak-${name}.${generation}`;
  }

  /** SIGKILLs `name`, waits for it to go, and starts it again after `downMs` (in the background). */
  async kill(name: ProcessName, cause: string, downMs: number): Promise<RestartRecord> {
    const p = this.processes.get(name)!;
    const oldPid = p.child?.pid ?? -1;
    // A killed host's egress proxy must go with it (checked at the end: `orphanProxies`).
    const proxy = (HOSTS as readonly string[]).includes(name) ? this.proxyPidOf(name as HostName) : undefined;
    if (proxy) this.killedProxies.push(proxy);
    p.expectedExit = true;
    p.ready = false;
    p.child?.kill('SIGKILL');
    await p.exited;
    const record: RestartRecord = { process: name, cause, oldPid, downAt: Date.now(), ...this.keyField(p) };
    this.restarts.push(record);
    this.options.log(`${name} (pid ${oldPid}) killed: ${cause}; back in ${(downMs / 1000).toFixed(1)} s`);
    this.restarting.push(this.later(downMs).then(() => this.restart(p, record)));
    return record;
  }

  /** Resolves when every process polls again (restarts in flight included). */
  async allUp(): Promise<void> {
    for (let seen = -1; seen !== this.restarting.length;) {
      seen = this.restarting.length;
      await Promise.all(this.restarting);
    }
  }

  /** The egress proxy process of a hands host (a child of the worker), if it runs. */
  proxyPidOf(host: HostName): number | undefined {
    const parent = this.pidOf(host);
    if (!parent) return undefined;
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid !== parent) continue;
        if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('proxy-process')) return Number(entry);
      } catch {
        // gone meanwhile
      }
    }
    return undefined;
  }

  /** Egress proxy processes of killed hands hosts that still run (pid reuse excluded). */
  orphanProxies(): number[] {
    return this.killedProxies.filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('proxy-process');
      } catch {
        return false;
      }
    });
  }

  /** SIGTERM to every process (a graceful stop, SIGKILL after 15 s). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.restarting.map((r) => r.catch(() => undefined)));
    await Promise.all(
      [...this.processes.values()].map(async (p) => {
        if (!p.child || p.child.exitCode !== null || p.child.signalCode !== null) return;
        p.expectedExit = true;
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child?.kill('SIGKILL'), 15_000);
        await p.exited;
        clearTimeout(timer);
      }),
    );
  }

  private keyField(p: Managed): { apiKey?: string } {
    return (BRAINS as readonly string[]).includes(p.name) ? { apiKey: Fleet.keyOf(p.name, p.generation) } : {};
  }

  private later(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async restart(p: Managed, record: RestartRecord): Promise<void> {
    if (this.stopping) return;
    record.startedAt = Date.now();
    await this.spawn(p);
    record.newPid = p.child?.pid;
    record.readyAt = Date.now();
    this.options.log(`${p.name} is back (pid ${record.newPid})`);
  }

  private environment(p: Managed): Record<string, string> {
    const o = this.options;
    const common = {
      ...o.env,
      TEMPORAL_ADDRESS: o.address,
      TEMPORAL_NAMESPACE: 'default',
      AGENT_SANDBOX_IMAGE: o.image,
      AGENT_HANDS_QUEUE: o.handsQueue,
      AGENT_LOG_LEVEL: process.env.AGENT_LOG_LEVEL ?? 'WARN',
    };
    if ((BRAINS as readonly string[]).includes(p.name))
      return {
        ...common,
        ANTHROPIC_API_KEY: Fleet.keyOf(p.name, p.generation),
        ANTHROPIC_BASE_URL: o.modelUrl,
        AGENT_MODEL: 'scripted-model',
        AGENT_BRAIN_QUEUE: o.brainQueue,
        AGENT_WORKFLOW_BUNDLE: o.workflowBundlePath,
      };
    const host = o.hosts[p.name as HostName];
    return {
      ...common,
      AGENT_HANDS_HOST: p.name,
      AGENT_SANDBOX_PREFIX: host.prefix,
      AGENT_WORKSPACE_IMAGE_DIR: host.imageDir,
      ...(host.dockerHost ? { DOCKER_HOST: host.dockerHost } : {}),
    };
  }

  /** Starts generation n+1 of `p` and resolves once it polls (a start that fails is tried again). */
  private async spawn(p: Managed): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      p.generation += 1;
      p.expectedExit = false;
      p.logFile = path.join(this.options.logDir, `${p.name}.${p.generation}.log`);
      const role = (BRAINS as readonly string[]).includes(p.name) ? 'brain' : 'hands';
      const out = fs.createWriteStream(p.logFile);
      const child = spawn(process.execPath, [...this.options.agentArgs, 'worker', role], {
        env: { ...process.env, ...this.environment(p) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      p.child = child;
      p.exited = new Promise((resolve) => child.once('exit', () => resolve()));
      const ready = new Promise<boolean>((resolve) => {
        let seen = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out.write(chunk);
          if (p.ready) return;
          seen = (seen + chunk.toString('utf8')).slice(-4096);
          if (READY.test(seen)) resolve(true);
        });
        child.stderr!.on('data', (chunk: Buffer) => out.write(chunk));
        void p.exited!.then(() => resolve(false));
      });
      void p.exited.then(() => {
        p.ready = false;
        out.end();
        if (!p.expectedExit && !this.stopping) this.unexpectedExit(p, child);
      });
      if (await ready) {
        p.ready = true;
        return;
      }
      if (this.stopping) return;
      this.options.log(`${p.name} exited before it was ready (attempt ${attempt}); see ${p.logFile}`);
      if (attempt >= 5) throw new Error(`${p.name} did not start five times in a row; see ${p.logFile}`);
      await this.later(2_000);
    }
  }

  /** A process that died on its own: recorded with its last lines, and started again. */
  private unexpectedExit(p: Managed, child: ChildProcess): void {
    const record: RestartRecord = {
      process: p.name,
      cause: `exited unexpectedly (code ${child.exitCode}, signal ${child.signalCode}): ${lastLines(p.logFile)}`,
      oldPid: child.pid ?? -1,
      downAt: Date.now(),
      ...this.keyField(p),
    };
    this.restarts.push(record);
    this.options.log(`${p.name} (pid ${record.oldPid}) ${record.cause}`);
    this.restarting.push(this.later(1_000).then(() => this.restart(p, record)));
  }
}

function lastLines(file: string, count = 5): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-count).join(' | ').slice(-1500);
  } catch {
    return '(no log)';
  }
}
