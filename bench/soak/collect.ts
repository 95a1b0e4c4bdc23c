/**
 * After a unit ends: what its work left in its workspace, read, and its sandbox removed — in
 * batches, so the soak holds few workspaces at a time. A container the harness should have removed
 * and did not (an operation's, at its end; a session's, once idle; a task's, at its end) is recorded
 * as a leak before it is removed. The logs are read in one container per batch and engine, mounting
 * the batch's workspace volumes read-only.
 *
 * At the very end, `finalLeaks` lists everything of this run still on either engine after every
 * sandbox was removed the way `agent sandbox rm` removes one: containers, volumes, loop devices and
 * workspace images (platform/sandbox-leaks.ts, restricted to this run's names and image folders).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { createSandboxes, type Sandboxes } from '../../activities/hands/sandboxes';
import { containerNameOf, journalVolumeNameOf, volumeNameOf } from '../../common/sandbox-names';
import { findSandboxLeaks, type SandboxLeaks } from '../../platform/sandbox-leaks';
import { ensureSandboxTools } from '../../platform/sandbox-tools';
import { HOSTS, type HostName } from './fleet';
import { COMMIT_EFFECTS_LOG, EFFECTS_LOG, HOOKS_LOG } from './model';
import type { UnitRecord } from './units';

const run = promisify(execFile);

export interface Engine {
  docker: Docker;
  /** `docker` CLI arguments that reach it (`-H unix://…`, or none for the default engine). */
  dockerArgs: string[];
  prefix: string;
  imageDir: string;
}

/** What one workspace's logs hold: the lines of each log, as written. */
export interface WorkspaceLogs {
  sandbox: string;
  host: HostName;
  effects: string[];
  hooks: string[];
  commits: string[];
}

export interface LeftContainer {
  unit: string;
  container: string;
  host: HostName;
  state: string;
}

const BATCH = 16;
const LOGS = { effects: EFFECTS_LOG, hooks: HOOKS_LOG, commits: COMMIT_EFFECTS_LOG } as const;

export class Collector {
  readonly logs: WorkspaceLogs[] = [];
  readonly containersLeft: LeftContainer[] = [];
  readonly problems: string[] = [];
  /** Workspaces of ended units found on the engines (each is read, then removed). */
  workspacesFound = 0;
  private readonly queue: UnitRecord[] = [];
  private readonly sandboxes: Record<HostName, Sandboxes>;
  private busy: Promise<void> = Promise.resolve();

  constructor(
    private readonly engines: Record<HostName, Engine>,
    private readonly image: string,
  ) {
    const tools = ensureSandboxTools().path;
    this.sandboxes = {
      'host-a': createSandboxes({
        docker: engines['host-a'].docker,
        image,
        sandboxTools: tools,
        namePrefix: engines['host-a'].prefix,
      }),
      'host-b': createSandboxes({
        docker: engines['host-b'].docker,
        image,
        sandboxTools: tools,
        namePrefix: engines['host-b'].prefix,
      }),
    };
  }

  /** Queues an ended unit; a full batch is collected in the background. */
  add(unit: UnitRecord): void {
    this.queue.push(unit);
    if (this.queue.length >= BATCH) void this.flush();
  }

  /** Collects what is queued (after any collection in progress); resolves when done. */
  flush(): Promise<void> {
    const batch = this.queue.splice(0);
    this.busy = this.busy
      .then(() => this.collect(batch))
      .catch((err: Error) => {
        this.problems.push(`collecting ${batch.map((u) => u.id).join(', ')}: ${err.message}`);
      });
    return this.busy;
  }

  private async collect(units: UnitRecord[]): Promise<void> {
    if (units.length === 0) return;
    for (const host of HOSTS) {
      const present: string[] = [];
      // A sandbox whose workspace volume is not on this host may still have its journal volume there
      // (made first: a host lost while provisioning, say): nothing to read, but it is removed.
      const journalOnly: string[] = [];
      for (const unit of units)
        for (const sandbox of unit.sandboxes) {
          await this.checkContainer(unit, sandbox, host);
          if (await this.volumeExists(host, volumeNameOf(sandbox, this.engines[host].prefix))) present.push(sandbox);
          else if (await this.volumeExists(host, journalVolumeNameOf(sandbox, this.engines[host].prefix)))
            journalOnly.push(sandbox);
        }
      this.workspacesFound += present.length;
      try {
        for (let i = 0; i < present.length; i += BATCH) await this.readLogs(host, present.slice(i, i + BATCH));
      } finally {
        // A read that failed is a problem of the run (reported), never a reason to leave its sandboxes.
        for (const sandbox of [...present, ...journalOnly])
          await this.sandboxes[host].lifecycle.remove(sandbox, { keepVolume: false });
      }
    }
  }

  private async checkContainer(unit: UnitRecord, sandbox: string, host: HostName): Promise<void> {
    const name = containerNameOf(sandbox, this.engines[host].prefix);
    const info = await this.engines[host].docker
      .getContainer(name)
      .inspect()
      .catch(() => undefined);
    if (info) this.containersLeft.push({ unit: unit.id, container: name, host, state: info.State.Status });
  }

  private async volumeExists(host: HostName, volume: string): Promise<boolean> {
    return this.engines[host].docker
      .getVolume(volume)
      .inspect()
      .then(
        () => true,
        () => false,
      );
  }

  /** One container mounting the workspaces read-only prints every log of each, marked. */
  private async readLogs(host: HostName, sandboxes: string[]): Promise<void> {
    const { dockerArgs, prefix } = this.engines[host];
    const mounts = sandboxes.flatMap((sandbox, i) => ['-v', `${volumeNameOf(sandbox, prefix)}:/v/${i}:ro`]);
    const reads = sandboxes
      .map((_, i) =>
        Object.entries(LOGS)
          .map(([log, file]) => `echo '@@@ ${i} ${log}'; cat /v/${i}${file.slice('/workspace'.length)} 2>/dev/null;`)
          .join(' '),
      )
      .join(' ');
    // A workspace without one of the logs is normal: the script's status must not be the last `cat`'s.
    const script = `${reads} exit 0`;
    const args = [
      ...dockerArgs,
      'run',
      '--rm',
      '--network',
      'none',
      '--user',
      '0',
      ...mounts,
      this.image,
      'bash',
      '-c',
      script,
    ];
    const { stdout } = await run('docker', args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const parsed = sandboxes.map(
      (sandbox) => ({ sandbox, host, effects: [], hooks: [], commits: [] }) as WorkspaceLogs,
    );
    let current: string[] | undefined;
    for (const line of stdout.split('\n')) {
      const mark = /^@@@ (\d+) (effects|hooks|commits)$/.exec(line);
      if (mark) current = parsed[Number(mark[1])]![mark[2] as keyof typeof LOGS];
      else if (line.trim() && current) current.push(line.trim());
    }
    this.logs.push(...parsed);
  }
}

/** What of this run is still on the engines: names with its prefixes, loop devices and images of its folders. */
export async function finalLeaks(engines: Record<HostName, Engine>): Promise<SandboxLeaks> {
  const all: SandboxLeaks = { containers: [], volumes: [], loopDevices: [], imageFiles: [], kept: [] };
  const dirs = HOSTS.map((host) => engines[host].imageDir);
  for (const host of HOSTS) {
    const { docker, prefix } = engines[host];
    const found = await findSandboxLeaks(docker, dirs);
    const ours = (name: string) => name.startsWith(prefix);
    all.containers.push(...found.containers.filter(ours).map((n) => `${n} (${host})`));
    all.volumes.push(...found.volumes.filter(ours).map((n) => `${n} (${host})`));
    all.kept.push(...found.kept.filter(ours));
    // Loop devices and image files are the machine's, not an engine's: listed once.
    if (host === 'host-a') {
      all.loopDevices.push(...found.loopDevices.filter((d) => dirs.some((dir) => d.includes(`${dir}/`))));
      all.imageFiles.push(...found.imageFiles);
    }
  }
  return all;
}
