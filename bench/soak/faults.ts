/**
 * The fault injector: fires the plan's faults at their times, each at a target the plan's `pick`
 * chooses among those available then (a live brain, a running sandbox, a workspace in use). A fault
 * with no target yet waits for one (up to 30 s) and is otherwise tried again after the plan; once
 * the plan is spent, every kind not injected yet is, so a run long enough for one round of faults
 * has every kind. Each fault is recorded with what it hit.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { containerNameOf } from '../../common/sandbox-names';
import {
  startService,
  stopService,
  waitServing,
  type ClusterLayout,
  type ServerBinaries,
} from '../../platform/temporal-cluster';
import { BRAINS, HOSTS, type Fleet, type HostName, type ProcessName } from './fleet';
import { FILLER, isModelFault, type SoakModel } from './model';
import { FAULT_KINDS, type FaultKind, type PlannedFault, type SoakPlan } from './schedule';
import type { UnitRecord } from './units';

const run = promisify(execFile);

export interface InjectedFault {
  /** 1-based, in the order fired. */
  n: number;
  kind: FaultKind;
  /** Ms from the run's start: planned, and when it fired (or was given up). */
  plannedAtMs: number;
  atMs: number;
  outcome: 'injected' | 'no target';
  /** What it hit: a process and its pid, a container, a unit, a model request. */
  target?: string;
  detail?: string;
}

export interface InjectorOptions {
  plan: SoakPlan;
  fleet: Fleet;
  model: SoakModel;
  cluster: { layout: ClusterLayout; binaries: ServerBinaries };
  engines: Record<HostName, { docker: Docker; dockerArgs: string[]; prefix: string }>;
  /** The units in flight (the disk-full fault picks among them). */
  live: () => UnitRecord[];
  /** The run's start (epoch ms). */
  t0: number;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TARGET_WAIT_MS = 30_000;

export class FaultInjector {
  readonly fired: InjectedFault[] = [];
  private stopped = false;

  constructor(private readonly o: InjectorOptions) {}

  /** Stops after the fault in progress (the end of the fault phase). */
  stop(): void {
    this.stopped = true;
  }

  /** Fires the plan, then every kind not injected yet (while `mayCover` allows), and resolves when done. */
  async run(mayCover: () => boolean): Promise<void> {
    const retry: PlannedFault[] = [];
    for (const fault of this.o.plan.faults) {
      const wait = this.o.t0 + fault.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      if (this.stopped) return;
      if ((await this.fire(fault)).outcome !== 'injected') retry.push(fault);
    }
    for (const kind of FAULT_KINDS) {
      if (this.stopped || !mayCover()) return;
      if (this.injected(kind) > 0) continue;
      const fault = retry.find((f) => f.kind === kind) ?? {
        atMs: Date.now() - this.o.t0,
        kind,
        pick: 0.5,
        downMs: 3_000,
      };
      await sleep(this.o.plan.meanGapMs / 2);
      await this.fire(fault);
    }
  }

  injected(kind: FaultKind): number {
    return this.fired.filter((f) => f.kind === kind && f.outcome === 'injected').length;
  }

  private async fire(fault: PlannedFault): Promise<InjectedFault> {
    const record: InjectedFault = {
      n: this.fired.length + 1,
      kind: fault.kind,
      plannedAtMs: fault.atMs,
      atMs: Date.now() - this.o.t0,
      outcome: 'no target',
    };
    this.fired.push(record);
    const deadline = Date.now() + TARGET_WAIT_MS;
    try {
      for (;;) {
        const hit = await this.inject(fault, record.n);
        if (hit) {
          Object.assign(record, { outcome: 'injected', atMs: Date.now() - this.o.t0, ...hit });
          break;
        }
        if (Date.now() > deadline || this.stopped) break;
        await sleep(500);
      }
    } catch (err) {
      record.detail = `failed: ${(err as Error).message}`;
    }
    this.o.log(`fault #${record.n} ${fault.kind}: ${record.outcome}${record.target ? ` → ${record.target}` : ''}`);
    return record;
  }

  /** Injects `fault` now; what it hit, or undefined when it has no target yet. */
  private async inject(fault: PlannedFault, n: number): Promise<{ target: string; detail?: string } | undefined> {
    const cause = `fault ${fault.kind} #${n}`;
    switch (fault.kind) {
      case 'brain-kill':
        return this.killProcess(BRAINS, fault, cause);
      case 'hands-kill':
        return this.killProcess(HOSTS, fault, cause);
      case 'sandbox-kill':
        return this.killSandbox(fault);
      case 'history-kill':
        return this.killHistory(fault);
      case 'disk-full':
        return this.fillWorkspace(fault);
      case 'egress-proxy-kill':
        return this.killProxy(fault);
      default:
        if (!isModelFault(fault.kind)) throw new Error(`unknown fault ${fault.kind}`);
        return this.modelFault(fault.kind);
    }
  }

  private choose<T>(items: readonly T[], pick: number): T | undefined {
    return items.length ? items[Math.min(items.length - 1, Math.floor(pick * items.length))] : undefined;
  }

  private async killProcess(names: readonly ProcessName[], fault: PlannedFault, cause: string) {
    const name = this.choose(
      names.filter((n) => this.o.fleet.isUp(n)),
      fault.pick,
    );
    if (!name) return undefined;
    const record = await this.o.fleet.kill(name, cause, fault.downMs);
    return { target: `${name} pid ${record.oldPid}`, detail: `down ${fault.downMs} ms` };
  }

  /** The running sandbox containers of this run, on both engines. */
  private async runningSandboxes(): Promise<Array<{ host: HostName; name: string }>> {
    const found: Array<{ host: HostName; name: string }> = [];
    for (const host of HOSTS) {
      const { docker, prefix } = this.o.engines[host];
      for (const container of await docker.listContainers({ filters: { name: [`${prefix}sbx-`] } }))
        for (const name of container.Names)
          if (name.startsWith(`/${prefix}sbx-`)) found.push({ host, name: name.slice(1) });
    }
    return found.sort((a, b) => a.name.localeCompare(b.name));
  }

  private async killSandbox(fault: PlannedFault) {
    const target = this.choose(await this.runningSandboxes(), fault.pick);
    if (!target) return undefined;
    await this.o.engines[target.host].docker.getContainer(target.name).kill({ signal: 'SIGKILL' });
    return { target: `${target.name} on ${target.host}` };
  }

  private async killHistory(fault: PlannedFault) {
    const { layout, binaries } = this.o.cluster;
    await stopService(layout, 'history', 'SIGKILL');
    await sleep(fault.downMs);
    startService(layout, binaries, 'history');
    await waitServing(layout);
    return {
      target: 'history service',
      detail: `down ${fault.downMs} ms, serving again after ${Date.now() - this.o.t0} ms`,
    };
  }

  /** Fills the workspace of a running operation's sandbox (a single-operation or a session unit). */
  private async fillWorkspace(fault: PlannedFault) {
    const running = new Map((await this.runningSandboxes()).map((s) => [s.name, s.host]));
    const candidates = this.o
      .live()
      .filter((unit) => ['op', 'hook', 'session'].includes(unit.kind))
      .flatMap((unit) =>
        HOSTS.map((host) => ({ unit, host, name: containerNameOf(unit.sandboxes[0]!, this.o.engines[host].prefix) })),
      )
      .filter(({ name, host }) => running.get(name) === host);
    const target = this.choose(candidates, fault.pick);
    if (!target) return undefined;
    // Only a workspace with a quota is filled: without one it is the host's disk.
    const script = `size=$(df -k --output=size /workspace | tail -n 1); if [ "$size" -gt 2097152 ]; then echo "no quota ($size KiB)"; exit 3; fi; cat /dev/zero > ${FILLER} 2>/dev/null; df -k --output=avail /workspace | tail -n 1`;
    const { dockerArgs } = this.o.engines[target.host];
    const out = await run('docker', [...dockerArgs, 'exec', '-u', '1000', target.name, 'bash', '-c', script], {
      encoding: 'utf8',
    }).catch((err: { stdout?: string; message: string }) => ({ stdout: `not filled: ${err.stdout || err.message}` }));
    return {
      target: `${target.unit.id} (${target.name} on ${target.host})`,
      detail: `free after: ${out.stdout.trim()} KiB`,
    };
  }

  private async killProxy(fault: PlannedFault) {
    const proxies = HOSTS.map((host) => ({ host, pid: this.o.fleet.proxyPidOf(host) })).filter((p) => p.pid);
    const target = this.choose(proxies, fault.pick);
    if (!target) return undefined;
    process.kill(target.pid!, 'SIGKILL');
    return { target: `egress proxy of ${target.host} pid ${target.pid}` };
  }

  /** Asks the model server for the fault on the next request (one at a time: the previous one served first). */
  private async modelFault(kind: Parameters<SoakModel['inject']>[0]) {
    if (this.o.model.waiting > 0) return undefined;
    const before = this.o.model.served.length;
    this.o.model.inject(kind);
    while (this.o.model.served.length === before && !this.stopped) await sleep(100);
    const served = this.o.model.served[before];
    return served ? { target: `model request ${served.requestIndex} of ${served.unitId}` } : { target: 'not served' };
  }
}
