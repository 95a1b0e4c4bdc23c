/**
 * The environment images and dependency caches on a Docker engine, and their garbage collection.
 * Both outlive every workspace on purpose (they make the next run fast); what ties them to
 * workspaces is the workspace volumes' labels (`agent.environment.image`, `agent.cache`). Their last
 * use is the newest workspace made with them (or, when none is left, their own creation): nothing
 * else needs recording.
 */
import type Docker from 'dockerode';
import { SANDBOX_LABELS } from '../../common/sandbox-names';
import { dockerCall } from '../hands/docker-calls';
import { ENVIRONMENT_LABELS, ENVIRONMENT_REPOSITORY } from './builder';

export interface EnvironmentImageInfo {
  image: string;
  hash: string;
  base?: string;
  sizeBytes: number;
  createdAt: Date;
  lastUsedAt: Date;
  /** Workspace volumes that run it. */
  workspaces: string[];
}

export interface DependencyCacheInfo {
  volume: string;
  /** The repository it caches (as the workspace that made it named it). */
  repository: string;
  /** Unknown when the engine did not report it. */
  sizeBytes?: number;
  createdAt?: Date;
  lastUsedAt?: Date;
  workspaces: string[];
}

export interface EnvironmentGcResult {
  removedImages: string[];
  removedCaches: string[];
}

export class EnvironmentInventory {
  constructor(
    private readonly docker: Docker,
    /** What cache volume names start with (`<prefix>cache-`). */
    private readonly namePrefix: string,
  ) {}

  async list(): Promise<{ images: EnvironmentImageInfo[]; caches: DependencyCacheInfo[] }> {
    const [images, volumes, usage] = await Promise.all([
      dockerCall('list the environment images', () =>
        this.docker.listImages({ filters: { label: [ENVIRONMENT_LABELS.hash] } }),
      ),
      dockerCall('list the volumes', () => this.docker.listVolumes()),
      // Sizes of volumes are only in the engine's disk usage report.
      dockerCall('read the disk usage', () => this.docker.df()).catch(() => undefined),
    ]);
    const allVolumes = volumes.Volumes ?? [];
    const workspaces = allVolumes.filter((v) => v.Labels?.[SANDBOX_LABELS.role] === 'workspace');
    const created = (v: Docker.VolumeInspectInfo) => new Date((v as { CreatedAt?: string }).CreatedAt ?? 0);
    const users = (label: string, value: string) => workspaces.filter((w) => w.Labels?.[label] === value);
    const newest = (list: Docker.VolumeInspectInfo[], fallback: Date) =>
      list.reduce((latest, v) => (created(v) > latest ? created(v) : latest), fallback);

    const imageInfo = images.flatMap((image): EnvironmentImageInfo[] => {
      const tag = (image.RepoTags ?? []).find((t) => t.startsWith(`${ENVIRONMENT_REPOSITORY}:`));
      if (!tag) return [];
      const using = users(SANDBOX_LABELS.environment, tag);
      const createdAt = new Date(image.Created * 1000);
      return [
        {
          image: tag,
          hash: image.Labels?.[ENVIRONMENT_LABELS.hash] ?? '',
          ...(image.Labels?.[ENVIRONMENT_LABELS.base] ? { base: image.Labels[ENVIRONMENT_LABELS.base] } : {}),
          sizeBytes: image.Size,
          createdAt,
          lastUsedAt: newest(using, createdAt),
          workspaces: using.map((w) => w.Name),
        },
      ];
    });
    const sizes = new Map<string, number>(
      ((usage as { Volumes?: Array<{ Name: string; UsageData?: { Size?: number } }> } | undefined)?.Volumes ?? []).map(
        (v) => [v.Name, v.UsageData?.Size ?? -1],
      ),
    );
    const cacheInfo = allVolumes
      .filter((v) => v.Name.startsWith(`${this.namePrefix}cache-`) && v.Labels?.[SANDBOX_LABELS.cache] !== undefined)
      .map((v): DependencyCacheInfo => {
        const using = users(SANDBOX_LABELS.cache, v.Name);
        const size = sizes.get(v.Name);
        const createdAt = (v as { CreatedAt?: string }).CreatedAt ? created(v) : undefined;
        return {
          volume: v.Name,
          repository: v.Labels?.[SANDBOX_LABELS.cache] ?? '',
          ...(size !== undefined && size >= 0 ? { sizeBytes: size } : {}),
          ...(createdAt ? { createdAt, lastUsedAt: newest(using, createdAt) } : {}),
          workspaces: using.map((w) => w.Name),
        };
      });
    return { images: imageInfo, caches: cacheInfo };
  }

  /**
   * Removes environment images and dependency caches that no workspace uses and that were last used
   * longer than `olderThanMs` ago. An image a container still runs is kept (the engine refuses).
   */
  async gc(options: {
    olderThanMs: number;
    now?: number;
    /** Only images and caches this accepts (by image tag or volume name) are candidates (default: all). */
    only?: (name: string) => boolean;
  }): Promise<EnvironmentGcResult> {
    const only = options.only ?? (() => true);
    const cutoff = (options.now ?? Date.now()) - options.olderThanMs;
    const { images, caches } = await this.list();
    const unused = (name: string, workspaces: string[], lastUsedAt: Date | undefined) =>
      only(name) && !workspaces.length && (lastUsedAt?.getTime() ?? 0) <= cutoff;
    const result: EnvironmentGcResult = { removedImages: [], removedCaches: [] };
    for (const image of images) {
      if (
        unused(image.image, image.workspaces, image.lastUsedAt) &&
        (await this.remove('an environment image', () => this.docker.getImage(image.image).remove()))
      )
        result.removedImages.push(image.image);
    }
    for (const cache of caches) {
      if (
        unused(cache.volume, cache.workspaces, cache.lastUsedAt) &&
        (await this.remove('a dependency cache', () => this.docker.getVolume(cache.volume).remove()))
      )
        result.removedCaches.push(cache.volume);
    }
    return result;
  }

  /** Removes one thing; false when it was gone already or is still in use (the engine refuses). */
  private async remove(what: string, call: () => Promise<unknown>): Promise<boolean> {
    const removed = await dockerCall(
      `remove ${what}`,
      async () => {
        await call();
        return true;
      },
      [404, 409],
    );
    return removed === true;
  }
}
