/**
 * Where the machine's CPU went during a scenario (Linux `/proc`): CPU time of chosen processes —
 * counting the children they reaped, so a container shim includes its `runc` calls and a sandbox's
 * executor its tool processes — against the whole machine's busy time. The concurrency scenario uses it to say what
 * bounds its throughput.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { round } from './stats';

export interface ProcessTicks {
  comm: string;
  args: string;
  ppid: number;
  /** `/proc/<pid>/cgroup` (a container's processes name its id there). */
  cgroup: string;
  /** utime + stime + cutime + cstime. */
  ticks: number;
}

export interface CpuSnapshot {
  atMs: number;
  /** Busy ticks of the whole machine (all cores). */
  busyTicks: number;
  processes: Map<number, ProcessTicks>;
}

export interface ProcessGroup {
  label: string;
  /** `processes`: every process of the later snapshot, for questions about ancestry. */
  matches(pid: number, process: ProcessTicks, processes: ReadonlyMap<number, ProcessTicks>): boolean;
}

/** Whether `pid` is `ancestor` or one of its descendants in `processes`. */
export function descendsFrom(processes: ReadonlyMap<number, ProcessTicks>, pid: number, ancestor: number): boolean {
  for (let at: number | undefined = pid, hops = 0; at && hops < 64; at = processes.get(at)?.ppid, hops++)
    if (at === ancestor) return true;
  return false;
}

export interface CpuUsage {
  wallS: number;
  cores: number;
  /** CPU seconds the whole machine was busy (all cores; at most wallS × cores). */
  machineBusyS: number;
  /** CPU seconds per group, largest first; the rest of the machine last. */
  byGroup: { label: string; cpuS: number; shareOfMachine: number }[];
}

const TICKS_PER_SECOND = 100;

/** The CPU counters now; undefined where `/proc` is missing (not Linux). */
export function cpuSnapshot(): CpuSnapshot | undefined {
  if (!fs.existsSync('/proc/stat')) return undefined;
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
  const busyTicks = cpu.slice(0, 8).reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
  const processes = new Map<number, ProcessTicks>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      // After the comm: state(0) … utime(11) stime(12) cutime(13) cstime(14).
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const cgroup = fs.readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      processes.set(Number(entry), {
        comm: stat.slice(stat.indexOf('(') + 1, close),
        args,
        ppid: Number(fields[1]),
        cgroup,
        ticks,
      });
    } catch {
      // The process ended while we looked.
    }
  }
  return { atMs: Date.now(), busyTicks, processes };
}

/**
 * CPU time per group between two snapshots. A process alive at both counts its difference, one
 * started in between counts all of its time; one that ended in between is lost unless its parent
 * reaped it (then it is in the parent's figure).
 */
export function cpuUsageBetween(before: CpuSnapshot, after: CpuSnapshot, groups: readonly ProcessGroup[]): CpuUsage {
  const totals = groups.map(() => 0);
  for (const [pid, process] of after.processes) {
    const index = groups.findIndex((group) => group.matches(pid, process, after.processes));
    if (index < 0) continue;
    const earlier = before.processes.get(pid);
    totals[index]! += process.ticks - (earlier && earlier.comm === process.comm ? earlier.ticks : 0);
  }
  const machineBusyS = (after.busyTicks - before.busyTicks) / TICKS_PER_SECOND;
  const grouped = totals.reduce((sum, ticks) => sum + ticks, 0) / TICKS_PER_SECOND;
  const rows = groups.map((group, index) => ({ label: group.label, cpuS: totals[index]! / TICKS_PER_SECOND }));
  rows.sort((a, b) => b.cpuS - a.cpuS);
  rows.push({ label: 'everything else on the machine', cpuS: Math.max(0, machineBusyS - grouped) });
  return {
    wallS: round((after.atMs - before.atMs) / 1000),
    cores: os.cpus().length,
    machineBusyS: round(machineBusyS),
    byGroup: rows.map((row) => ({
      label: row.label,
      cpuS: round(row.cpuS),
      shareOfMachine: round(machineBusyS > 0 ? row.cpuS / machineBusyS : 0, 3),
    })),
  };
}

/** One thread's scheduler times (Linux `schedstat`): on a core, and runnable but waiting for one. */
export interface ThreadTimes {
  onCpuNs: number;
  waitingNs: number;
}

/** The scheduler times of thread `tid` of process `pid` (its main thread by default); undefined without schedstat. */
export function threadTimes(pid: number, tid: number = pid): ThreadTimes | undefined {
  try {
    const [onCpu, waiting] = fs
      .readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return onCpu !== undefined && waiting !== undefined ? { onCpuNs: onCpu, waitingNs: waiting } : undefined;
  } catch {
    return undefined;
  }
}
