/**
 * A tool call that ran into one of the sandbox's limits says so in its result: which limit, its
 * value, and how to work within it. The run wrapper reports the evidence (`RunExit`): forks the pid
 * limit refused and processes the kernel killed for memory while the command ran (the sandbox's
 * cgroup counters), and the free space left on /workspace; "No space left on device" in the output
 * counts too. Without these notes a fork bomb or an OOM kill reads as an empty result with an odd
 * exit code.
 */
import type { RunExit } from './scripts';
import { formatBytes } from './workspace-quota';

export interface SandboxResourceLimits {
  /** Most processes and threads at once. */
  pids: number;
  memoryBytes: number;
  /** The workspace's disk quota, when it has one. */
  workspaceQuotaBytes?: number;
}

/** Below this much free space the workspace counts as full. */
const FULL_BELOW_BYTES = 1024 * 1024;
const NO_SPACE = /No space left on device|Disk quota exceeded|ENOSPC/;

/** True when the run shows signs of a full workspace (so the quota is worth looking up). */
export function workspaceLooksFull(exit: RunExit, output: Buffer): boolean {
  const free = exit.workspaceFreeBytes ?? -1;
  return (free >= 0 && free < FULL_BELOW_BYTES) || NO_SPACE.test(output.toString('latin1'));
}

/** One note per limit the run hit, in the order pid limit, memory, disk. */
export function resourceNotes(exit: RunExit, output: Buffer, limits: SandboxResourceLimits): string[] {
  const notes: string[] = [];
  const forks = exit.pidLimitHits ?? 0;
  if (forks > 0) {
    notes.push(
      `[pid limit reached: this sandbox runs at most ${limits.pids} processes and threads at once, and this command tried to start more ` +
        `(${forks} fork${forks === 1 ? ' was' : 's were'} refused); what it left running was stopped. ` +
        'Start fewer processes at a time (e.g. `make -j4`, `xargs -P 4`, a smaller worker pool), wait for background jobs before starting more, or run the work in batches.]',
    );
  }
  const kills = exit.oomKills ?? 0;
  if (kills > 0) {
    notes.push(
      `[memory limit reached: this sandbox has ${formatBytes(limits.memoryBytes)} of memory, and the kernel killed ${kills} process${kills === 1 ? '' : 'es'} ` +
        'of this command for needing more (out of memory; exit code 137 is that kill). Use less memory at once: work on smaller pieces of the input, ' +
        'run fewer jobs in parallel (e.g. `--maxWorkers=2`), or stream data instead of loading it whole.]',
    );
  }
  const free = exit.workspaceFreeBytes ?? -1;
  if (workspaceLooksFull(exit, output)) {
    const size = limits.workspaceQuotaBytes ?? exit.workspaceBytes;
    const what =
      limits.workspaceQuotaBytes !== undefined
        ? `disk quota reached: /workspace holds at most ${formatBytes(limits.workspaceQuotaBytes)}`
        : `disk full: the file system of /workspace${size !== undefined && size > 0 ? ` (${formatBytes(size)})` : ''} has no space left`;
    notes.push(
      `[${what}${free >= 0 ? `, ${formatBytes(free)} free now` : ''}; writes fail with "No space left on device". ` +
        'Free space before going on: delete build outputs, caches and dependencies you can reinstall ' +
        '(the largest: `du -sh /workspace/* /workspace/.[!.]* 2>/dev/null | sort -h | tail`), and write large temporary files less often.]',
    );
  }
  return notes;
}
