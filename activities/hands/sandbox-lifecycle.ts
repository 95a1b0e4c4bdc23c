/**
 * A session's sandbox comes and goes (what one is: `sandbox-spec.ts`):
 *
 * - Created lazily by `ensure`. A container that died (exited, was killed or removed) is replaced on
 *   the same volumes and `ensure` says why, so the tool result can tell the model; so is a container
 *   made without the journal volume or without the egress proxy socket (by a harness version before
 *   them, still running for a session that kept its container) or with another build of the sandbox
 *   tools than this worker's (`outdatedContainer` in `sandbox-spec.ts`). Concurrent `ensure` calls
 *   for one id share one creation; a creation that loses a race with another process adopts the
 *   winner's container.
 * - `remove` takes the container and, unless asked to keep it, the workspace; with a new or removed
 *   container the session's executor goes too (`SandboxCommands.forget`). Each removal is counted
 *   (`removalsOf`): a call that began before one never brings the container back (`runTool`), since
 *   whoever removed it — the operation's end, its abort — is done with it, and a call still running
 *   then is one the server gave up on (its heartbeats did not reach it while the history service was
 *   down) whose container nobody would remove again.
 */
import type Docker from 'dockerode';
import { containerNameOf, isSessionId, SANDBOX_LABELS, SESSION_ID_RULE } from '../../common/sandbox-names';
// egress hook: the container's way out through the host's proxy (activities/egress/).
import type { SandboxEgressWiring } from '../egress/egress-host';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from './docker-calls';
import type { SandboxCommands } from './sandbox-commands';
import {
  AGENT_UID,
  containerSpec,
  DEFAULT_SANDBOX_LIMITS,
  environmentLabels,
  environmentOf,
  namePrefixOf,
  outdatedContainer,
  sandboxLabels,
  type SandboxLimits,
  type WorkspaceEnvironment,
} from './sandbox-spec';
import { SandboxVolumes } from './sandbox-volumes';
import { HostCommandHelper } from './host-commands';
import { refuseStaleAttempt } from './stale-attempt';
import { quotaUnsupportedReason, type WorkspaceQuota } from './workspace-quota';

export interface SandboxLifecycleOptions {
  docker: Docker;
  /** The sandbox image tag (`sandboxImageTag()`). */
  image: string;
  /**
   * The sandbox tools binary on this host (`ensureSandboxTools()` of `platform/sandbox-tools.ts`),
   * mounted read-only into every container. A container with another build (or none) is replaced.
   */
  sandboxTools: string;
  limits?: Partial<SandboxLimits>;
  /** What container and volume names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /**
   * A disk quota for new workspace volumes (`workspace-quota.ts`); none when absent or null. Where the
   * host cannot make one (not root, remote engine, missing tools) it says why through `warn` once and
   * makes plain volumes.
   */
  quota?: WorkspaceQuota | null;
  /** Extra labels on every container and volume it makes (`sandbox-inventory.ts` can scope by them). */
  labels?: Record<string, string>;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  /**
   * egress hook: the wiring to the hands worker's egress proxy (`activities/egress/egress-host.ts`):
   * the proxy socket and CA mounts, the forwarder as the container's first process, and the proxy
   * and registry environment of every command. Without it the sandbox has no way out at all.
   */
  egress?: SandboxEgressWiring;
  /** The commands in these sandboxes: a replaced or removed container's executor is dropped there. */
  commands: SandboxCommands;
  /**
   * Runs before a container is created (not when one runs already) and throws to refuse it; default:
   * `refuseStaleAttempt`, which refuses a hands activity whose attempt the server already gave up on.
   */
  beforeCreate?: () => Promise<void>;
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

/**
 * Sessions whose removals a process remembers: far more than run calls at once on one hands host (a
 * forgotten one only matters to a call that began before its removal and still runs).
 */
const MAX_REMOVALS_KEPT = 10_000;

export class SandboxLifecycle {
  readonly limits: SandboxLimits;
  /** The disk quota of new workspaces, or null when they get none. */
  readonly quota: WorkspaceQuota | null;
  readonly namePrefix: string;
  private readonly docker: Docker;
  private readonly image: string;
  /** The host path of the sandbox tools binary every container mounts (`executor/sandbox-tools.ts`). */
  readonly sandboxTools: string;
  private readonly labels: Record<string, string>;
  private readonly egress: SandboxEgressWiring | undefined;
  private readonly commands: SandboxCommands;
  private readonly beforeCreate: () => Promise<void>;
  private readonly volumes: SandboxVolumes;
  private readonly pending = new Map<string, Promise<EnsureResult>>();
  /** Per session, how many times this process removed its container (the oldest forgotten past `MAX_REMOVALS_KEPT`). */
  private readonly removals = new Map<string, number>();

  constructor(options: SandboxLifecycleOptions) {
    this.docker = options.docker;
    this.image = options.image;
    this.sandboxTools = options.sandboxTools;
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
    this.namePrefix = namePrefixOf(options.namePrefix);
    this.labels = options.labels ?? {};
    this.egress = options.egress;
    this.commands = options.commands;
    this.beforeCreate = options.beforeCreate ?? refuseStaleAttempt;
    const unsupported = options.quota ? quotaUnsupportedReason(this.docker) : undefined;
    if (options.quota && unsupported) {
      (options.warn ?? ((line: string) => console.warn(line)))(
        `WARNING: workspaces get NO disk quota: ${unsupported}. A tool can fill the host's disk. ` +
          'Run the hands worker as root on the Docker host for quotas, or set AGENT_WORKSPACE_QUOTA=off to accept this.',
      );
    }
    this.quota = options.quota && !unsupported ? options.quota : null;
    this.volumes = new SandboxVolumes(
      this.docker,
      this.quota,
      AGENT_UID,
      this.namePrefix,
      this.quota ? new HostCommandHelper(options.sandboxTools).run : undefined,
    );
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

  /**
   * Removes the container and, unless `keepVolume`, the workspace and journal volumes (a quota
   * workspace's loop device is detached and its image deleted). Missing parts are fine.
   */
  async remove(sessionId: string, options: { keepVolume: boolean }): Promise<{ container: boolean; volume: boolean }> {
    checkSessionId(sessionId);
    // Counted before anything is awaited: a call that sees its container go sees the removal too.
    const removals = this.removalsOf(sessionId) + 1;
    this.removals.delete(sessionId);
    this.removals.set(sessionId, removals);
    if (this.removals.size > MAX_REMOVALS_KEPT) this.removals.delete(this.removals.keys().next().value!);
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

  /** How many times this process removed the session's container: compared before and after a call. */
  removalsOf(sessionId: string): number {
    return this.removals.get(sessionId) ?? 0;
  }

  /** The worker's default sandbox image (what a workspace without an environment of its own runs). */
  get defaultImage(): string {
    return this.image;
  }

  /**
   * Gives a workspace its environment before any container of it exists: the workspace volume is
   * made with the environment's image and cache volume as labels, which every later container of
   * the session follows. A workspace that already exists keeps what it has (returned).
   */
  async assignEnvironment(
    sessionId: string,
    environment: WorkspaceEnvironment,
    options: { operationId?: string; cacheOf?: string } = {},
  ): Promise<WorkspaceEnvironment & { existed: boolean }> {
    checkSessionId(sessionId);
    const existing = await this.workspaceEnvironment(sessionId);
    if (existing) return { ...existing, existed: true };
    if (environment.cache)
      await this.volumes.ensureCache(environment.cache, {
        ...this.labels,
        [SANDBOX_LABELS.cache]: options.cacheOf || environment.cache,
      });
    await this.volumes.ensure(sessionId, {
      ...sandboxLabels(this.labels, sessionId, options.operationId),
      ...environmentLabels(environment, this.image),
    });
    return { ...environment, existed: false };
  }

  /** The environment a workspace was given, or undefined when the workspace does not exist yet. */
  async workspaceEnvironment(sessionId: string): Promise<WorkspaceEnvironment | undefined> {
    const labels = await this.volumes.workspaceLabels(sessionId);
    return labels ? environmentOf(labels, this.image) : undefined;
  }

  /** The disk quota of the session's workspace, or undefined when it has none (a plain volume). */
  workspaceQuotaBytes(sessionId: string): Promise<number | undefined> {
    return this.volumes.quotaBytesOf(sessionId);
  }

  private async doEnsure(sessionId: string, operationId: string | undefined, round = 0): Promise<EnsureResult> {
    const name = containerNameOf(sessionId, this.namePrefix);
    const container = this.docker.getContainer(name);
    const info = await dockerCall('inspect the sandbox container', () => container.inspect(), [404]);
    let replaced: string | undefined;
    if (info) {
      const state = info.State;
      const result = { sessionId, containerName: name, containerId: info.Id, created: false };
      const outdated = outdatedContainer(info.Mounts ?? [], { egress: this.egress, sandboxTools: this.sandboxTools });
      const current = outdated === undefined;
      if (current && state.Running && state.Paused)
        await dockerCall('unpause the sandbox container', () => container.unpause());
      if (current && state.Running) return result;
      if (current && state.Status === 'created') {
        await this.start(container);
        return result;
      }
      replaced = !current
        ? `the previous container was ${outdated}`
        : `the previous container was gone (${state.OOMKilled ? `out of memory, exit ${state.ExitCode}` : state.Status === 'dead' ? 'dead' : `exited ${state.ExitCode}`})`;
      await dockerCall('remove the dead sandbox container', () => container.remove({ force: true }), [404, 409]);
    } else if (await this.volumes.workspaceExists(sessionId)) {
      replaced = 'the previous container was gone (removed)';
    }

    if (round === 0) await this.beforeCreate();
    const labels = sandboxLabels(this.labels, sessionId, operationId);
    await this.volumes.ensure(sessionId, labels);
    await this.egress?.ready();
    const environment = environmentOf(await this.volumes.workspaceLabels(sessionId), this.image);
    let created: Docker.Container;
    try {
      created = await this.docker.createContainer(
        containerSpec({
          sessionId,
          environment,
          namePrefix: this.namePrefix,
          limits: this.limits,
          labels,
          egress: this.egress,
          sandboxTools: this.sandboxTools,
        }),
      );
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
          environment.image === this.image
            ? `the sandbox image ${this.image} does not exist: build it with \`npm run sandbox:build\``
            : `the workspace's environment image ${environment.image} does not exist any more (removed by hand?): ` +
                `remove the workspace (\`agent sandbox rm ${sessionId}\`) so the next run prepares its environment again`,
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
}

function checkSessionId(sessionId: string): void {
  if (!isSessionId(sessionId)) {
    throw new SandboxError('invalid', `invalid session id ${JSON.stringify(sessionId)}: use ${SESSION_ID_RULE}`);
  }
}
