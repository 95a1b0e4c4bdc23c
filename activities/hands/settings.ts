/**
 * Hands settings from the environment, validated in one place; every problem names the variable.
 *
 * | variable                      | meaning                                                       | default                         |
 * |-------------------------------|---------------------------------------------------------------|---------------------------------|
 * | `AGENT_ALLOWED_ROOTS`         | directories a local seed source may lie in (`:`-separated)     | the worker user's home, `examples/` |
 * | `AGENT_WORKSPACE_QUOTA`       | disk quota of each new workspace (`10G`, `512M`, `off`)        | `10G`                           |
 * | `AGENT_WORKSPACE_IMAGE_DIR`   | host directory of the workspace file-system images            | `<data dir>/workspaces`         |
 * | `AGENT_SANDBOX_PIDS`          | processes and threads a sandbox may run at once               | 1024                            |
 * | `AGENT_SANDBOX_MEMORY`        | memory of a sandbox (`4G`, `512M`; no swap)                   | `4G`                            |
 * | `AGENT_SANDBOX_CPUS`          | CPU cores of a sandbox (fractions allowed)                    | 2                               |
 * | `AGENT_SANDBOX_EXECUTOR`      | run tool commands through a persistent executor per sandbox (`on`) or a `docker exec` each (`off`) | `on` |
 */
import * as path from 'node:path';
import { defaultAllowedRoots } from './deps';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox-spec';
import { parseQuotaSize, parseSize, type WorkspaceQuota } from './workspace-quota';

export const HANDS_ENV = {
  allowedRoots: 'AGENT_ALLOWED_ROOTS',
  quota: 'AGENT_WORKSPACE_QUOTA',
  imageDir: 'AGENT_WORKSPACE_IMAGE_DIR',
  pids: 'AGENT_SANDBOX_PIDS',
  memory: 'AGENT_SANDBOX_MEMORY',
  cpus: 'AGENT_SANDBOX_CPUS',
  executor: 'AGENT_SANDBOX_EXECUTOR',
} as const;

export const DEFAULT_WORKSPACE_QUOTA = '10G';

export interface HandsSettings {
  allowedRoots: string[];
  /** Null: workspaces get no disk quota (`AGENT_WORKSPACE_QUOTA=off`). */
  quota: WorkspaceQuota | null;
  limits: SandboxLimits;
  /** Commands run through the sandbox's executor (else a `docker exec` each). */
  executor: boolean;
}

/** Reads the hands settings; throws one Error listing every problem, each naming its variable. */
export function readHandsSettings(
  env: Record<string, string | undefined>,
  defaults: { imageDir: string },
): HandsSettings {
  const problems: string[] = [];
  let allowedRoots: string[] = [];
  try {
    allowedRoots = defaultAllowedRoots(env);
  } catch (err) {
    problems.push((err as Error).message);
  }
  let sizeBytes: number | null = null;
  try {
    sizeBytes = parseQuotaSize(env[HANDS_ENV.quota]?.trim() || DEFAULT_WORKSPACE_QUOTA);
  } catch (err) {
    problems.push(`${HANDS_ENV.quota}: ${(err as Error).message}`);
  }
  const imageDir = env[HANDS_ENV.imageDir]?.trim() || defaults.imageDir;
  if (!path.isAbsolute(imageDir))
    problems.push(`${HANDS_ENV.imageDir}: ${JSON.stringify(imageDir)} is not an absolute path`);
  const limits = { ...DEFAULT_SANDBOX_LIMITS };
  const number = (name: string, text: string | undefined, min: number, integer: boolean): number | undefined => {
    if (!text?.trim()) return undefined;
    const value = Number(text);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      problems.push(
        `${name}: ${JSON.stringify(text)} is not ${integer ? 'a whole number' : 'a number'} of at least ${min}`,
      );
      return undefined;
    }
    return value;
  };
  limits.pids = number(HANDS_ENV.pids, env[HANDS_ENV.pids], 16, true) ?? limits.pids;
  limits.cpus = number(HANDS_ENV.cpus, env[HANDS_ENV.cpus], 0.1, false) ?? limits.cpus;
  if (env[HANDS_ENV.memory]?.trim()) {
    try {
      limits.memoryBytes = parseSize(env[HANDS_ENV.memory]!, 64 * 1024 ** 2);
    } catch (err) {
      problems.push(`${HANDS_ENV.memory}: ${(err as Error).message}`);
    }
  }
  const executorText = env[HANDS_ENV.executor]?.trim().toLowerCase() || 'on';
  if (executorText !== 'on' && executorText !== 'off')
    problems.push(`${HANDS_ENV.executor}: ${JSON.stringify(env[HANDS_ENV.executor])} is not "on" or "off"`);
  if (problems.length) throw new Error(`hands settings: ${problems.join('; ')}`);
  return {
    allowedRoots,
    quota: sizeBytes === null ? null : { sizeBytes, imageDir },
    limits,
    executor: executorText !== 'off',
  };
}
