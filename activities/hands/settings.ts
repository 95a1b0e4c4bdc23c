/**
 * Hands settings from the environment, validated in one place; every problem names the variable.
 *
 * | variable                      | meaning                                                       | default                         |
 * |-------------------------------|---------------------------------------------------------------|---------------------------------|
 * | `AGENT_ALLOWED_ROOTS`         | directories a local seed source may lie in (`:`-separated)     | the worker user's home, `examples/` |
 * | `AGENT_WORKSPACE_QUOTA`       | disk quota of each new workspace (`10G`, `512M`, `off`)        | `10G`                           |
 * | `AGENT_WORKSPACE_IMAGE_DIR`   | host directory of the workspace file-system images            | `<data dir>/workspaces`         |
 */
import * as path from 'node:path';
import { defaultAllowedRoots } from './deps';
import { parseQuotaSize, type WorkspaceQuota } from './workspace-quota';

export const HANDS_ENV = {
  allowedRoots: 'AGENT_ALLOWED_ROOTS',
  quota: 'AGENT_WORKSPACE_QUOTA',
  imageDir: 'AGENT_WORKSPACE_IMAGE_DIR',
} as const;

export const DEFAULT_WORKSPACE_QUOTA = '10G';

export interface HandsSettings {
  allowedRoots: string[];
  /** Null: workspaces get no disk quota (`AGENT_WORKSPACE_QUOTA=off`). */
  quota: WorkspaceQuota | null;
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
  if (problems.length) throw new Error(`hands settings: ${problems.join('; ')}`);
  return { allowedRoots, quota: sizeBytes === null ? null : { sizeBytes, imageDir } };
}
