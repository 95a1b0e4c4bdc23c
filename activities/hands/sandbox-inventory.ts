/**
 * The sandboxes on a Docker engine, and their garbage collection. A sandbox is found by its labels
 * (`agent.harness=1`, `agent.sandbox=<id>`; `common/sandbox-names.ts`) and its names' prefix; an
 * inventory made with extra labels (a test run's, say) sees only the sandboxes that carry them.
 * Containers and volumes only: nothing here runs in a sandbox or makes one.
 */
import type Docker from 'dockerode';
import { SANDBOX_LABELS } from '../../common/sandbox-names';
import { dockerCall } from './docker-calls';
import { AGENT_UID, namePrefixOf } from './sandbox-spec';
import { SandboxVolumes } from './sandbox-volumes';
import { quotaUnsupportedReason, type WorkspaceQuota } from './workspace-quota';

export interface SandboxInfo {
  sessionId: string;
  operationId?: string;
  container?: { name: string; id: string; state: string; status: string; createdAt: Date };
  /** The workspace volume; `quotaImage` when it has a disk quota. */
  volume?: { name: string; createdAt?: Date; quotaImage?: string };
  journalVolume?: { name: string };
  /** Why it is kept on purpose (`agent.keep`), if it is. */
  keep?: string;
}

export interface GcResult {
  removedContainers: string[];
  removedVolumes: string[];
  /** Workspace images no volume used any more, detached and deleted (with `volumes`). */
  releasedImages?: string[];
}

export interface GcOptions {
  /** Age (since creation) from which a container, and with `volumes` a sandbox's volumes, go. */
  olderThanMs: number;
  volumes?: boolean;
  /** The time ages are measured at (default: now). */
  now?: number;
  /** Only sandboxes this accepts are candidates (default: every sandbox of the inventory). */
  only?: (sandbox: SandboxInfo) => boolean;
}

export interface SandboxInventoryOptions {
  docker: Docker;
  /** What container and volume names start with (default `agent-`; see `common/sandbox-names.ts`). */
  namePrefix?: string;
  /** Only sandboxes that carry these labels too. */
  labels?: Record<string, string>;
  /** Where the workspace images are (`workspace-quota.ts`), for `gc`; ignored where the host cannot make quotas. */
  quota?: WorkspaceQuota | null;
}

export class SandboxInventory {
  private readonly docker: Docker;
  private readonly namePrefix: string;
  private readonly labels: Record<string, string>;
  private readonly volumes: SandboxVolumes;

  constructor(options: SandboxInventoryOptions) {
    this.docker = options.docker;
    this.namePrefix = namePrefixOf(options.namePrefix);
    this.labels = options.labels ?? {};
    const quota = options.quota && !quotaUnsupportedReason(this.docker) ? options.quota : null;
    this.volumes = new SandboxVolumes(this.docker, quota, AGENT_UID, this.namePrefix);
  }

  /** Every sandbox of the harness (by label, and this inventory's labels) under its name prefix, with its container and volumes. */
  async list(): Promise<SandboxInfo[]> {
    const ours = (name: string): boolean => name.replace(/^\//, '').startsWith(this.namePrefix);
    const filters = {
      label: [`${SANDBOX_LABELS.harness}=1`, ...Object.entries(this.labels).map(([key, value]) => `${key}=${value}`)],
    };
    const containers = await dockerCall('list sandbox containers', () =>
      this.docker.listContainers({ all: true, filters }),
    );
    const volumes = await dockerCall('list workspace volumes', () => this.docker.listVolumes({ filters }));
    const byId = new Map<string, SandboxInfo>();
    const entry = (id: string, labels: Record<string, string> | undefined): SandboxInfo => {
      let info = byId.get(id);
      if (!info) byId.set(id, (info = { sessionId: id }));
      if (!info.operationId && labels?.[SANDBOX_LABELS.operation]) info.operationId = labels[SANDBOX_LABELS.operation];
      if (!info.keep && labels?.[SANDBOX_LABELS.keep]) info.keep = labels[SANDBOX_LABELS.keep];
      return info;
    };
    for (const c of containers) {
      const id = c.Labels[SANDBOX_LABELS.sandbox];
      if (!id || !ours(c.Names[0] ?? '')) continue;
      entry(id, c.Labels).container = {
        name: (c.Names[0] ?? '').replace(/^\//, ''),
        id: c.Id,
        state: c.State,
        status: c.Status,
        createdAt: new Date(c.Created * 1000),
      };
    }
    for (const v of volumes.Volumes ?? []) {
      const id = v.Labels?.[SANDBOX_LABELS.sandbox];
      if (!id || !ours(v.Name)) continue;
      const info = entry(id, v.Labels);
      if (v.Name.startsWith(`${this.namePrefix}jr-`)) {
        info.journalVolume = { name: v.Name };
        continue;
      }
      const createdAt = (v as { CreatedAt?: string }).CreatedAt;
      const quotaImage = v.Labels[SANDBOX_LABELS.quotaImage];
      info.volume = {
        name: v.Name,
        ...(createdAt ? { createdAt: new Date(createdAt) } : {}),
        ...(quotaImage ? { quotaImage } : {}),
      };
    }
    return [...byId.values()].sort((a, b) => a.sessionId.localeCompare(b.sessionId));
  }

  /**
   * Removes leftovers: containers (running or not) created more than `olderThanMs` ago and, with
   * `volumes`, the volumes of sandboxes older than that whose container is gone. A removed container
   * is replaced on its volumes if the sandbox is used again; a removed volume is gone for good.
   */
  async gc(options: GcOptions): Promise<GcResult> {
    const cutoff = (options.now ?? Date.now()) - options.olderThanMs;
    const result: GcResult = { removedContainers: [], removedVolumes: [] };
    for (const sandbox of await this.list()) {
      if (options.only && !options.only(sandbox)) continue;
      let containerGone = !sandbox.container;
      if (sandbox.container && sandbox.container.createdAt.getTime() <= cutoff) {
        await dockerCall(
          'remove a sandbox container',
          () => this.docker.getContainer(sandbox.container!.id).remove({ force: true }),
          [404],
        );
        result.removedContainers.push(sandbox.container.name);
        containerGone = true;
      }
      const volume = sandbox.volume;
      const old = (volume?.createdAt?.getTime() ?? 0) <= cutoff;
      if (options.volumes && containerGone && old) {
        for (const name of [volume?.name, sandbox.journalVolume?.name]) {
          if (name && (await this.volumes.removeVolume(name))) result.removedVolumes.push(name);
        }
      }
    }
    if (options.volumes) result.releasedImages = await this.volumes.releaseOrphanImages(cutoff);
    return result;
  }
}
