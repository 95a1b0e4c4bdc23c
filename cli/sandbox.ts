/**
 * `agent sandbox ls | rm <id> [--keep-volume] | gc [--older-than 24h] [--volumes] [--environments] | envs`:
 * inspect and clean up the sandboxes (containers + workspace volumes) this harness made on this host,
 * found by their labels, and the environment images and dependency caches their workspaces use.
 * The command table (`commands.ts`) parses the arguments; Docker is loaded when a command runs.
 */
import type { GcResult, SandboxInfo, SandboxInventory } from '../activities/hands/sandbox-inventory';
import type { SandboxLifecycle } from '../activities/hands/sandbox-lifecycle';
import type { EnvironmentInventory } from '../activities/environment/inventory';
import type { SandboxCommand } from './command-types';

export interface SandboxCommandDeps {
  /** The sandboxes (default: those on the local Docker engine, with this host's settings). */
  sandboxes?: { inventory: Pick<SandboxInventory, 'list' | 'gc'>; lifecycle: Pick<SandboxLifecycle, 'remove'> };
  /** The environment images and dependency caches (default: those on the local Docker engine). */
  environments?: Pick<EnvironmentInventory, 'list' | 'gc'>;
  out?: (line: string) => void;
  err?: (line: string) => void;
  now?: () => number;
}

/** Runs a parsed `agent sandbox` command; returns the exit code. */
export async function runSandboxCommand(command: SandboxCommand, deps: SandboxCommandDeps = {}): Promise<number> {
  const out = deps.out ?? ((line: string) => console.log(line));
  const err = deps.err ?? ((line: string) => console.error(line));
  const local = deps.sandboxes && deps.environments ? undefined : await localSandboxes();
  const { inventory, lifecycle } = deps.sandboxes ?? local!.sandboxes;
  const environments = deps.environments ?? local!.environments;
  const now = deps.now ?? Date.now;
  switch (command.kind) {
    case 'sandbox-ls': {
      const sandboxes = await inventory.list();
      if (!sandboxes.length) out('no sandboxes');
      else out(formatTable(sandboxes, now()));
      return 0;
    }
    case 'sandbox-rm': {
      const removed = await lifecycle.remove(command.sessionId, { keepVolume: command.keepVolume });
      if (!removed.container && !removed.volume) {
        err(`no sandbox ${command.sessionId}${command.keepVolume ? ' container' : ''} found`);
        return 1;
      }
      out(
        `removed sandbox ${command.sessionId}: container ${removed.container ? 'removed' : 'absent'}, volume ${command.keepVolume ? 'kept' : removed.volume ? 'removed' : 'absent'}`,
      );
      return 0;
    }
    case 'sandbox-gc': {
      const result: GcResult = await inventory.gc({
        olderThanMs: command.olderThanMs,
        volumes: command.volumes,
        now: now(),
      });
      out(
        `removed ${result.removedContainers.length} container(s)${command.volumes ? ` and ${result.removedVolumes.length} volume(s)` : ''} older than ${formatAge(command.olderThanMs)}`,
      );
      for (const name of [...result.removedContainers, ...result.removedVolumes]) out(`  ${name}`);
      for (const image of result.releasedImages ?? []) out(`  ${image} (a workspace image no volume used)`);
      if (command.environments) {
        const removed = await environments.gc({ olderThanMs: command.olderThanMs, now: now() });
        out(
          `removed ${removed.removedImages.length} environment image(s) and ${removed.removedCaches.length} dependency cache(s) no workspace uses, unused for ${formatAge(command.olderThanMs)}`,
        );
        for (const name of [...removed.removedImages, ...removed.removedCaches]) out(`  ${name}`);
      }
      return 0;
    }
    case 'sandbox-envs': {
      const listed = await environments.list();
      if (command.json) out(JSON.stringify(listed));
      else out(formatEnvironments(listed, now()));
      return 0;
    }
  }
}

/** `agent sandbox envs`: one table of images, one of caches. */
export function formatEnvironments(listed: Awaited<ReturnType<EnvironmentInventory['list']>>, now: number): string {
  const size = (bytes: number | undefined) => (bytes === undefined ? '-' : `${(bytes / 1024 ** 2).toFixed(0)} MB`);
  const table = (rows: string[][]) => {
    const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
    return rows
      .map((row) =>
        row
          .map((cell, col) => cell.padEnd(widths[col]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n');
  };
  const images = listed.images.length
    ? table([
        ['ENVIRONMENT', 'SIZE', 'LAST USED', 'WORKSPACES', 'BASE'],
        ...listed.images.map((i) => [
          i.image,
          size(i.sizeBytes),
          `${formatAge(now - i.lastUsedAt.getTime())} ago`,
          String(i.workspaces.length),
          i.base ?? '-',
        ]),
      ])
    : 'no environment images';
  const caches = listed.caches.length
    ? table([
        ['CACHE', 'SIZE', 'LAST USED', 'WORKSPACES', 'REPOSITORY'],
        ...listed.caches.map((c) => [
          c.volume,
          size(c.sizeBytes),
          c.lastUsedAt ? `${formatAge(now - c.lastUsedAt.getTime())} ago` : '-',
          String(c.workspaces.length),
          c.repository,
        ]),
      ])
    : 'no dependency caches';
  return `${images}\n\n${caches}`;
}

/** The sandboxes, environments and caches on the local Docker engine, with this host's prefix, image and workspace images. */
async function localSandboxes() {
  const { requireDocker } = await import('../platform/docker-engine');
  const { createSandboxes } = await import('../activities/hands/sandboxes');
  const { EnvironmentInventory } = await import('../activities/environment/inventory');
  const { sandboxToolsPath } = await import('../platform/sandbox-tools');
  const { sandboxHostSettings } = await import('./settings');
  const settings = sandboxHostSettings();
  const docker = await requireDocker();
  const sandboxes = createSandboxes({
    docker,
    image: settings.image,
    // Never built here: this command makes no sandboxes.
    sandboxTools: sandboxToolsPath(),
    namePrefix: settings.host.namePrefix,
    // Where the workspace images are, for gc; this command makes no sandboxes, so no quota warning.
    quota: settings.quota,
    warn: () => undefined,
  });
  return { sandboxes, environments: new EnvironmentInventory(docker, sandboxes.lifecycle.namePrefix) };
}

export function formatTable(sandboxes: SandboxInfo[], now: number): string {
  const rows = [
    ['SANDBOX', 'CONTAINER', 'STATE', 'AGE', 'VOLUME', 'OPERATION'],
    ...sandboxes.map((s) => [
      s.sessionId,
      s.container?.name ?? '-',
      s.container ? s.container.status : 'no container',
      s.container
        ? formatAge(now - s.container.createdAt.getTime())
        : s.volume?.createdAt
          ? formatAge(now - s.volume.createdAt.getTime())
          : '-',
      s.volume?.name ?? '-',
      s.operationId ?? '-',
    ]),
  ];
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  return rows
    .map((row) => row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]))).join('  '))
    .join('\n');
}

export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7_200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3_600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
