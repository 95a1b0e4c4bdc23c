/**
 * A session's two volumes, which outlive every container:
 *  - the workspace `agent-ws-<sessionId>` (mounted at /workspace, the agent's files): with a disk
 *    quota, an ext4 file system of its own on a loop device (`workspace-quota.ts`); without one, a
 *    plain `local` volume on the host's disk;
 *  - the journal `agent-jr-<sessionId>` (mounted at /var/lib/agent-journal, `journal-store.ts`): the
 *    records that decide replay, written only by the harness.
 * Both carry the sandbox labels (`agent.harness=1`, `agent.sandbox=<id>`, `agent.role`); a quota
 * workspace also `agent.quota-image=<image path>`, so whoever removes the volume (a worker, `agent
 * sandbox rm|gc`) detaches its loop device and deletes the image without any other state.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { DEFAULT_NAME_PREFIX, journalVolumeNameOf, SANDBOX_LABELS, volumeNameOf } from '../../common/sandbox-names';
import { classifyDockerError, dockerCall, SandboxError, statusOf } from './docker-calls';
import { spawnDirectly, type HostCommandRunner } from './host-commands';
import { attach, backingFileOf, createImage, imagePathOf, release, type WorkspaceQuota } from './workspace-quota';

export class SandboxVolumes {
  constructor(
    private readonly docker: Docker,
    /** Null: plain workspace volumes. */
    private readonly quota: WorkspaceQuota | null,
    private readonly ownerUid: number,
    /** What the volume names start with (`common/sandbox-names.ts`). */
    private readonly namePrefix = DEFAULT_NAME_PREFIX,
    /** How a quota workspace's host programs run (`host-commands.ts`). */
    private readonly hostCommands: HostCommandRunner = spawnDirectly,
  ) {}

  async workspaceExists(sessionId: string): Promise<boolean> {
    return (await this.inspect(volumeNameOf(sessionId, this.namePrefix))) !== undefined;
  }

  /** The workspace volume's labels (its environment among them), or undefined when it does not exist. */
  async workspaceLabels(sessionId: string): Promise<Record<string, string> | undefined> {
    const volume = await this.inspect(volumeNameOf(sessionId, this.namePrefix));
    return volume ? (volume.Labels ?? {}) : undefined;
  }

  /** Makes the dependency cache volume when missing (its root owned by the agent once a container mounts it). */
  async ensureCache(name: string, labels: Record<string, string>): Promise<void> {
    if (await this.inspect(name)) return;
    try {
      await this.docker.createVolume({ Name: name, Labels: labels });
    } catch (err) {
      // Another workspace of the same repository made it first.
      if (statusOf(err) !== 409) throw classifyDockerError('create the dependency cache volume', err);
    }
  }

  /**
   * Makes sure both volumes exist and a quota workspace is on an attached loop device (after a
   * reboot the device is gone: the image is attached again and the volume re-created on the new
   * device, its files intact). Only called when no container uses the volumes.
   */
  async ensure(sessionId: string, labels: Record<string, string>): Promise<void> {
    const journal = journalVolumeNameOf(sessionId, this.namePrefix);
    if (!(await this.inspect(journal))) {
      await dockerCall('create the journal volume', () =>
        this.docker.createVolume({ Name: journal, Labels: { ...labels, [SANDBOX_LABELS.role]: 'journal' } }),
      );
    }
    const name = volumeNameOf(sessionId, this.namePrefix);
    const existing = await this.inspect(name);
    const image = existing?.Labels?.[SANDBOX_LABELS.quotaImage];
    if (existing && !image) return;
    if (existing && image) {
      const device = existing.Options?.device;
      if (device && backingFileOf(device) === image) return;
      const attached = await this.attachImage(image);
      if (attached === device) return;
      await dockerCall('re-create the workspace volume on its new loop device', () =>
        this.docker.getVolume(name).remove(),
      );
      await this.createQuotaVolume(name, image, attached, existing.Labels ?? labels);
      return;
    }
    if (!this.quota) {
      await dockerCall('create the workspace volume', () =>
        this.docker.createVolume({ Name: name, Labels: { ...labels, [SANDBOX_LABELS.role]: 'workspace' } }),
      );
      return;
    }
    const newImage = imagePathOf(this.quota, volumeNameOf(sessionId, this.namePrefix));
    try {
      await createImage(newImage, this.quota.sizeBytes, this.ownerUid, this.hostCommands);
    } catch (err) {
      throw new SandboxError('failed', `could not make the workspace file system: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const device = await this.attachImage(newImage);
    await this.createQuotaVolume(name, newImage, device, {
      ...labels,
      [SANDBOX_LABELS.role]: 'workspace',
      [SANDBOX_LABELS.quotaImage]: newImage,
    });
  }

  /** The disk quota of the session's workspace (the size of its image), or undefined when it has none. */
  async quotaBytesOf(sessionId: string): Promise<number | undefined> {
    const image = (await this.inspect(volumeNameOf(sessionId, this.namePrefix)))?.Labels?.[SANDBOX_LABELS.quotaImage];
    if (!image) return undefined;
    try {
      return fs.statSync(image).size;
    } catch {
      return undefined;
    }
  }

  /** Removes both volumes (a missing one is fine) and a quota workspace's device and image. */
  async remove(sessionId: string): Promise<boolean> {
    const removed = await this.removeVolume(volumeNameOf(sessionId, this.namePrefix));
    await this.removeVolume(journalVolumeNameOf(sessionId, this.namePrefix));
    return removed;
  }

  /**
   * Removes one volume by name; a quota workspace's loop device is detached and its image deleted.
   * A volume a container still uses is left alone (false).
   */
  async removeVolume(name: string): Promise<boolean> {
    const volume = await this.inspect(name);
    if (!volume) return false;
    try {
      await this.docker.getVolume(name).remove();
    } catch (err) {
      if (statusOf(err) === 409) return false;
      if (statusOf(err) !== 404) throw classifyDockerError('remove a sandbox volume', err);
    }
    const image = volume.Labels?.[SANDBOX_LABELS.quotaImage];
    if (image) {
      try {
        await release(image, volume.Options?.device, this.hostCommands);
      } catch (err) {
        throw new SandboxError('failed', `could not release the workspace file system: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
    return true;
  }

  /**
   * Workspace images in the quota's image directory that no volume uses any more (left by a volume
   * removed behind the harness's back, e.g. `docker volume rm`), last written before `cutoffMs`: their
   * loop devices are detached and the images deleted. Returns their paths.
   */
  async releaseOrphanImages(cutoffMs: number): Promise<string[]> {
    if (!this.quota || !fs.existsSync(this.quota.imageDir)) return [];
    const released: string[] = [];
    for (const file of fs.readdirSync(this.quota.imageDir)) {
      const match = /^agent-ws-(.+)\.ext4$/.exec(file);
      if (!match) continue;
      const image = path.join(this.quota.imageDir, file);
      if (fs.statSync(image).mtimeMs > cutoffMs || (await this.workspaceExists(match[1]))) continue;
      await release(image, undefined, this.hostCommands);
      released.push(image);
    }
    return released;
  }

  private async inspect(name: string): Promise<Docker.VolumeInspectInfo | undefined> {
    return dockerCall('inspect a sandbox volume', () => this.docker.getVolume(name).inspect(), [404]);
  }

  private async attachImage(image: string): Promise<string> {
    try {
      return await attach(image, this.hostCommands);
    } catch (err) {
      throw new SandboxError('failed', `could not attach the workspace file system: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  private async createQuotaVolume(
    name: string,
    image: string,
    device: string,
    labels: Record<string, string>,
  ): Promise<void> {
    await dockerCall('create the workspace volume', () =>
      this.docker.createVolume({
        Name: name,
        Driver: 'local',
        DriverOpts: { type: 'ext4', device },
        Labels: { ...labels, [SANDBOX_LABELS.quotaImage]: image },
      }),
    );
  }
}
