/**
 * `agent sandbox ls | rm <id> [--keep-volume] | gc [--older-than 24h] [--volumes]`: inspect and clean up
 * the sandboxes (containers + workspace volumes) this harness made, found by their labels.
 */
import { parseDuration } from '../common/duration';
import { requireDocker } from '../platform/docker-engine';
import { sandboxImageTag } from '../platform/sandbox-image';
import { handsHostSettings } from '../workers/hands-host';
import type { GcResult, SandboxInfo, SandboxInventory } from '../activities/hands/sandbox-inventory';
import type { SandboxLifecycle } from '../activities/hands/sandbox-lifecycle';
import { createSandboxes } from '../activities/hands/sandboxes';
import { handsSettingsFromEnv } from '../workers/workers';

export type SandboxCommand =
  | { kind: 'ls' }
  | { kind: 'rm'; sessionId: string; keepVolume: boolean }
  | { kind: 'gc'; olderThanMs: number; volumes: boolean }
  | { kind: 'help' };

export const SANDBOX_USAGE = [
  'usage: agent sandbox <command>',
  '  ls                                  list sandboxes (containers and workspace volumes)',
  '  rm <id> [--keep-volume]             remove a sandbox container and its workspace volume',
  '  gc [--older-than 24h] [--volumes]   remove sandbox containers created longer ago than that (default 24h);',
  '                                      with --volumes also their workspace volumes (their files are lost)',
].join('\n');

const DEFAULT_GC_AGE_MS = 24 * 3_600_000;

/** Parses the arguments after `agent sandbox`; throws an Error with a one-line message when they are wrong. */
export function parseSandboxArgs(args: string[]): SandboxCommand {
  const [sub, ...rest] = args;
  switch (sub) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      return { kind: 'help' };
    case 'ls':
    case 'list':
      if (rest.length) throw new Error(`sandbox ls takes no arguments (got ${rest.join(' ')})`);
      return { kind: 'ls' };
    case 'rm': {
      const flags = rest.filter((a) => a.startsWith('-'));
      const ids = rest.filter((a) => !a.startsWith('-'));
      const unknown = flags.filter((f) => f !== '--keep-volume');
      if (unknown.length) throw new Error(`sandbox rm: unknown option ${unknown[0]} (allowed: --keep-volume)`);
      if (ids.length !== 1) throw new Error('sandbox rm needs exactly one sandbox id: agent sandbox rm <id>');
      return { kind: 'rm', sessionId: ids[0], keepVolume: flags.includes('--keep-volume') };
    }
    case 'gc': {
      let olderThanMs = DEFAULT_GC_AGE_MS;
      let volumes = false;
      for (let i = 0; i < rest.length; i++) {
        const arg = rest[i];
        if (arg === '--volumes') volumes = true;
        else if (arg === '--older-than' || arg.startsWith('--older-than=')) {
          const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : rest[++i];
          if (value === undefined) throw new Error('sandbox gc: --older-than needs a duration, e.g. 1h, 30m, 2d');
          olderThanMs = parseDuration(value);
        } else throw new Error(`sandbox gc: unknown argument ${arg} (allowed: --older-than <duration>, --volumes)`);
      }
      return { kind: 'gc', olderThanMs, volumes };
    }
    default:
      throw new Error(`unknown sandbox command "${sub}"\n${SANDBOX_USAGE}`);
  }
}

export { parseDuration };

export interface SandboxCommandDeps {
  /** The sandboxes (default: those on the local Docker engine, with the current sandbox image). */
  sandboxes?: { inventory: Pick<SandboxInventory, 'list' | 'gc'>; lifecycle: Pick<SandboxLifecycle, 'remove'> };
  out?: (line: string) => void;
  err?: (line: string) => void;
  now?: () => number;
}

/** Runs `agent sandbox …`; returns the process exit code. */
export async function sandboxCommand(args: string[], deps: SandboxCommandDeps = {}): Promise<number> {
  const out = deps.out ?? ((line: string) => console.log(line));
  const err = deps.err ?? ((line: string) => console.error(line));
  let command: SandboxCommand;
  try {
    command = parseSandboxArgs(args);
  } catch (e) {
    err((e as Error).message);
    return 2;
  }
  if (command.kind === 'help') {
    out(SANDBOX_USAGE);
    return 0;
  }
  const { inventory, lifecycle } =
    deps.sandboxes ??
    createSandboxes({
      docker: await requireDocker(),
      image: sandboxImageTag(),
      namePrefix: handsHostSettings().namePrefix,
      // Where the workspace images are, for gc; this command makes no sandboxes, so no quota warning.
      quota: handsSettingsFromEnv().quota,
      warn: () => undefined,
    });
  const now = deps.now ?? Date.now;
  switch (command.kind) {
    case 'ls': {
      const sandboxes = await inventory.list();
      if (!sandboxes.length) out('no sandboxes');
      else out(formatTable(sandboxes, now()));
      return 0;
    }
    case 'rm': {
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
    case 'gc': {
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
