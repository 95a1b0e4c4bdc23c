/**
 * `agent sandbox ls | rm <id> [--keep-volume] | gc [--older-than 24h] [--volumes]`: inspect and clean up
 * the sandboxes (containers + workspace volumes) this harness made on this host, found by their labels.
 * The command table (`commands.ts`) parses the arguments; Docker is loaded when a command runs.
 */
import type { GcResult, SandboxInfo, SandboxInventory } from '../activities/hands/sandbox-inventory';
import type { SandboxLifecycle } from '../activities/hands/sandbox-lifecycle';
import type { SandboxCommand } from './command-types';

export interface SandboxCommandDeps {
  /** The sandboxes (default: those on the local Docker engine, with this host's settings). */
  sandboxes?: { inventory: Pick<SandboxInventory, 'list' | 'gc'>; lifecycle: Pick<SandboxLifecycle, 'remove'> };
  out?: (line: string) => void;
  err?: (line: string) => void;
  now?: () => number;
}

/** Runs a parsed `agent sandbox` command; returns the exit code. */
export async function runSandboxCommand(command: SandboxCommand, deps: SandboxCommandDeps = {}): Promise<number> {
  const out = deps.out ?? ((line: string) => console.log(line));
  const err = deps.err ?? ((line: string) => console.error(line));
  const { inventory, lifecycle } = deps.sandboxes ?? (await localSandboxes());
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
      return 0;
    }
  }
}

/** The sandboxes on the local Docker engine with this host's prefix, image and workspace images. */
async function localSandboxes() {
  const { requireDocker } = await import('../platform/docker-engine');
  const { createSandboxes } = await import('../activities/hands/sandboxes');
  const { sandboxHostSettings } = await import('./settings');
  const settings = sandboxHostSettings();
  return createSandboxes({
    docker: await requireDocker(),
    image: settings.image,
    namePrefix: settings.host.namePrefix,
    // Where the workspace images are, for gc; this command makes no sandboxes, so no quota warning.
    quota: settings.quota,
    warn: () => undefined,
  });
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
