/**
 * Sandboxes (what one is: `sandbox-spec.ts`), and the one way to run anything in them. All Docker
 * access of the hands goes through this class.
 *
 * - Created lazily by `ensure`. A container that died (exited, was killed or removed) is replaced on
 *   the same volumes and `ensure` says why, so the tool result can tell the model; so is a container
 *   made by an older harness version (without the journal volume). Concurrent `ensure` calls for one
 *   id share one creation; a creation that loses a race with another process adopts the winner's
 *   container.
 * - Commands in them: `sandbox-commands.ts` (`commands`; `exec`, `script` and `kill` pass through).
 */
import type Docker from 'dockerode';
import { containerNameOf, isSessionId, SESSION_ID_RULE } from '../../common/sandbox-names';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from './docker-calls';
import { JOURNAL_DIR } from './journal-store';
import type { ExecOptions } from './run-wrapper';
import { SandboxInventory, type GcOptions, type GcResult, type SandboxInfo } from './sandbox-inventory';
import { SandboxFiles, type WorkspaceFile } from './sandbox-files';
import { SandboxCommands, type ExecResult, type ScriptResult } from './sandbox-commands';
import {
  AGENT_UID,
  containerSpec,
  DEFAULT_SANDBOX_LIMITS,
  namePrefixOf,
  sandboxLabels,
  type SandboxLimits,
} from './sandbox-spec';
import { SandboxVolumes } from './sandbox-volumes';
import { quotaUnsupportedReason, type WorkspaceQuota } from './workspace-quota';
// egress hook: the container's way out through the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';

export interface SandboxManagerOptions {
  docker: Docker;
  /** The sandbox image tag (`sandboxImageTag()`). */
  image: string;
  limits?: Partial<SandboxLimits>;
  /** Only `none` is supported: sandboxes have no network. */
  network?: 'none';
  /** What container and volume names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /**
   * A disk quota for new workspace volumes (`workspace-quota.ts`); none when absent or null. Where the
   * host cannot make one (not root, remote engine, missing tools) the manager says why through `warn`
   * once and makes plain volumes.
   */
  quota?: WorkspaceQuota | null;
  /**
   * Extra labels on every container and volume it makes; `list` and `gc` then see only sandboxes
   * that carry them (a manager scoped to, say, one test run), and `agent.keep` marks a sandbox kept
   * on purpose.
   */
  labels?: Record<string, string>;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  /**
   * egress hook: the wiring to the hands worker's egress proxy (`activities/egress/egress-host.ts`):
   * the proxy socket and CA mounts, the forwarder as the container's first process, and the proxy
   * and registry environment of every command. Without it the sandbox has no way out at all.
   */
  egress?: SandboxEgressWiring;
  /** Run commands through a persistent executor per sandbox (default), or `false`: a `docker exec` each. */
  executor?: boolean;
}

export interface EnsureResult {
  sessionId: string;
  containerName: string;
  containerId: string;
  /** True when this call created the container. */
  created: boolean;
  /** Set when a dead container was replaced: why, in words (`the previous container was gone (exited 137)`). */
  replaced?: string;
}

export class SandboxManager {
  private readonly docker: Docker;
  private readonly image: string;
  readonly limits: SandboxLimits;
  /** The disk quota of new workspaces, or null when they get none. */
  readonly quota: WorkspaceQuota | null;
  private readonly extraLabels: Record<string, string>;
  private readonly volumes: SandboxVolumes;
  private readonly pending = new Map<string, Promise<EnsureResult>>();
  /** Files copied into the workspaces (`sandbox-files.ts`). */
  readonly files: SandboxFiles;
  /** The sandboxes of this manager's labels (`sandbox-inventory.ts`). */
  readonly inventory: SandboxInventory;
  /** Commands in the sandboxes (`sandbox-commands.ts`). */
  readonly commands: SandboxCommands;
  readonly namePrefix: string;
  private readonly egress: SandboxEgressWiring | undefined;

  constructor(options: SandboxManagerOptions) {
    if (options.network !== undefined && options.network !== 'none')
      throw new SandboxError('invalid', `network ${String(options.network)} is not supported`);
    this.docker = options.docker;
    this.image = options.image;
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.namePrefix = namePrefixOf(options.namePrefix);
    this.egress = options.egress;
    this.extraLabels = options.labels ?? {};
    const unsupported = options.quota ? quotaUnsupportedReason() : undefined;
    if (options.quota && unsupported) {
      (options.warn ?? ((line: string) => console.warn(line)))(
        `WARNING: workspaces get NO disk quota: ${unsupported}. A tool can fill the host's disk. ` +
          'Run the hands worker as root on the Docker host for quotas, or set AGENT_WORKSPACE_QUOTA=off to accept this.',
      );
    }
    this.quota = options.quota && !unsupported ? options.quota : null;
    this.volumes = new SandboxVolumes(this.docker, this.quota, AGENT_UID, this.namePrefix);
    this.inventory = new SandboxInventory({
      docker: this.docker,
      namePrefix: this.namePrefix,
      labels: this.extraLabels,
      quota: this.quota,
    });
    this.files = new SandboxFiles({ docker: this.docker, namePrefix: this.namePrefix });
    this.commands = new SandboxCommands({
      docker: this.docker,
      namePrefix: this.namePrefix,
      ...(this.egress ? { egress: this.egress } : {}),
      ...(options.executor !== undefined ? { executor: options.executor } : {}),
    });
  }

  /** The pid of the session's executor in its container, when one is live (diagnostics, tests). */
  executorPid(sessionId: string): Promise<number | undefined> {
    return this.commands.executorPid(sessionId);
  }

  /** Closes the executors this manager started (they exit once their commands end). */
  close(): void {
    this.commands.close();
  }

  /** The disk quota of the session's workspace, or undefined when it has none (a plain volume). */
  workspaceQuotaBytes(sessionId: string): Promise<number | undefined> {
    return this.volumes.quotaBytesOf(sessionId);
  }

  /** Makes sure a running container exists for the sandbox; creates or replaces one as needed. */
  ensure(sessionId: string, options: { operationId?: string } = {}): Promise<EnsureResult> {
    checkSessionId(sessionId);
    const inFlight = this.pending.get(sessionId);
    if (inFlight) return inFlight;
    const creation = this.doEnsure(sessionId, options.operationId)
      .then((result) => {
        // A new container: whatever executor the session had belonged to the old one.
        if (result.created) this.commands.forget(sessionId);
        return result;
      })
      .finally(() => this.pending.delete(sessionId));
    this.pending.set(sessionId, creation);
    return creation;
  }

  private async doEnsure(sessionId: string, operationId: string | undefined, round = 0): Promise<EnsureResult> {
    const name = containerNameOf(sessionId, this.namePrefix);
    const container = this.docker.getContainer(name);
    const info = await dockerCall('inspect the sandbox container', () => container.inspect(), [404]);
    let replaced: string | undefined;
    if (info) {
      const state = info.State;
      const result = { sessionId, containerName: name, containerId: info.Id, created: false };
      const mounted = (target: string) => (info.Mounts ?? []).some((mount) => mount.Destination === target);
      const withoutEgress = this.egress !== undefined && !mounted(this.egress.marker);
      const current = mounted(JOURNAL_DIR) && !withoutEgress;
      if (current && state.Running && state.Paused)
        await dockerCall('unpause the sandbox container', () => container.unpause());
      if (current && state.Running) return result;
      if (current && state.Status === 'created') {
        await this.start(container);
        return result;
      }
      replaced = !current
        ? `the previous container was made by an older version of the harness (without the ${withoutEgress ? 'egress proxy socket' : 'tool-call journal volume'})`
        : `the previous container was gone (${state.OOMKilled ? `out of memory, exit ${state.ExitCode}` : state.Status === 'dead' ? 'dead' : `exited ${state.ExitCode}`})`;
      await dockerCall('remove the dead sandbox container', () => container.remove({ force: true }), [404, 409]);
    } else if (await this.volumes.workspaceExists(sessionId)) {
      replaced = 'the previous container was gone (removed)';
    }

    await this.volumes.ensure(sessionId, this.labels(sessionId, operationId));
    await this.egress?.ready();
    let created: Docker.Container;
    try {
      created = await this.docker.createContainer(this.containerSpec(sessionId, operationId));
    } catch (err) {
      if (statusOf(err) === 409 && round < 50) {
        // Another process is creating it (Docker reserves the name before the container can be
        // inspected): wait, then adopt theirs.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const theirs = await this.doEnsure(sessionId, operationId, round + 1);
        return { ...theirs, ...(replaced ? { replaced } : {}) };
      }
      if (statusOf(err) === 404)
        throw new SandboxError(
          'image-missing',
          `the sandbox image ${this.image} does not exist: build it with \`npm run sandbox:build\``,
          { cause: err },
        );
      throw classifyDockerError('create the sandbox container', err);
    }
    await this.start(created);
    return {
      sessionId,
      containerName: name,
      containerId: created.id,
      created: true,
      ...(replaced ? { replaced } : {}),
    };
  }

  private async start(container: Docker.Container): Promise<void> {
    await dockerCall('start the sandbox container', () => container.start(), [304]);
  }

  private containerSpec(sessionId: string, operationId: string | undefined): Docker.ContainerCreateOptions {
    return containerSpec({
      sessionId,
      image: this.image,
      namePrefix: this.namePrefix,
      limits: this.limits,
      labels: this.labels(sessionId, operationId),
      egress: this.egress,
    });
  }

  private labels(sessionId: string, operationId: string | undefined): Record<string, string> {
    return sandboxLabels(this.extraLabels, sessionId, operationId);
  }

  /** Runs a command under the run wrapper (`SandboxCommands.exec`). */
  exec(sessionId: string, options: ExecOptions): Promise<ExecResult> {
    return this.commands.exec(sessionId, options);
  }

  /** Kills a process group in the sandbox (`SandboxCommands.kill`). */
  kill(sessionId: string, pid: number, options: { graceSeconds?: number; runDir?: string } = {}): Promise<void> {
    return this.commands.kill(sessionId, pid, options);
  }

  /** Runs a short bash script in /workspace (`SandboxCommands.script`). */
  script(
    sessionId: string,
    script: string,
    args: string[] = [],
    options: { user?: string } = {},
  ): Promise<ScriptResult> {
    return this.commands.script(sessionId, script, args, options);
  }

  /** Writes files under /workspace (`SandboxFiles.put`). */
  putFiles(sessionId: string, files: WorkspaceFile[]): Promise<void> {
    return this.files.put(sessionId, files);
  }

  /** Extracts a tar stream at /workspace (`SandboxFiles.putArchive`). */
  putArchive(sessionId: string, archive: NodeJS.ReadableStream): Promise<void> {
    return this.files.putArchive(sessionId, archive);
  }

  /**
   * Removes the container and, unless `keepVolume`, the workspace and journal volumes (a quota
   * workspace's loop device is detached and its image deleted). Missing parts are fine.
   */
  async remove(sessionId: string, options: { keepVolume: boolean }): Promise<{ container: boolean; volume: boolean }> {
    checkSessionId(sessionId);
    await this.pending.get(sessionId)?.catch(() => undefined);
    this.commands.forget(sessionId);
    const container = await dockerCall(
      'remove the sandbox container',
      async () => {
        await this.docker.getContainer(containerNameOf(sessionId, this.namePrefix)).remove({ force: true, v: false });
        return true;
      },
      [404],
    );
    const volume = options.keepVolume ? false : await this.volumes.remove(sessionId);
    // egress hook: the removed container's proxy socket goes with it.
    this.egress?.release(containerNameOf(sessionId, this.namePrefix));
    return { container: container ?? false, volume };
  }

  /** The sandboxes of this manager's labels (`SandboxInventory.list`). */
  list(): Promise<SandboxInfo[]> {
    return this.inventory.list();
  }

  /** Removes old sandboxes (`SandboxInventory.gc`). */
  gc(options: GcOptions): Promise<GcResult> {
    return this.inventory.gc(options);
  }
}

function checkSessionId(sessionId: string): void {
  if (!isSessionId(sessionId)) {
    throw new SandboxError('invalid', `invalid session id ${JSON.stringify(sessionId)}: use ${SESSION_ID_RULE}`);
  }
}
