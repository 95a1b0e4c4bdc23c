/**
 * The harness's own git work inside a task's sandbox: short scripts run as the sandbox user (no
 * network, no credentials), and git bundles moved between the host and the workspace through the
 * Docker API — a bundle goes in as a file in a tar archive, and comes out on a command's stdout.
 */
import * as fs from 'node:fs';
import * as tar from 'tar-stream';
import { REPO_FAILURE_TYPES } from '../../common/repo';
import { SandboxError } from '../hands/docker-calls';
import type { Sandboxes } from '../hands/sandboxes';
import { AGENT_UID } from '../hands/sandbox-spec';
import { repoFailure } from './failures';

/** Harness files in the workspace live under `.agent/` (excluded from git in every seeded workspace). */
export const TASK_DIR = '.agent/task';

/**
 * Shell lines that make sure git ignores `.agent/` (the agent may have edited the exclude file):
 * run before every `git add -A` or `git clean` of the harness.
 */
export const EXCLUDE_AGENT_DIR = String.raw`mkdir -p "$(git rev-parse --git-dir)/info"
grep -qx '.agent/' "$(git rev-parse --git-dir)/info/exclude" 2>/dev/null || echo '.agent/' >> "$(git rev-parse --git-dir)/info/exclude"`;

/** Runs a bash script in /workspace; a non-zero exit throws `WorkspaceBroken` with the script's stderr. */
export async function workspaceScript(
  sandboxes: Sandboxes,
  sessionId: string,
  what: string,
  script: string,
  args: string[] = [],
): Promise<string> {
  const { exitCode, stdout, stderr } = await sandboxes.commands.script(sessionId, script, args);
  if (exitCode !== 0) {
    throw repoFailure(
      REPO_FAILURE_TYPES.workspace,
      `${what} failed in the workspace (exit ${exitCode}): ${stderr.trim().slice(-600) || 'no output'}`,
    );
  }
  return stdout.toString('utf8');
}

/** A script's raw stdout (a bundle); a non-zero exit throws like `workspaceScript`. */
export async function workspaceBytes(
  sandboxes: Sandboxes,
  sessionId: string,
  what: string,
  script: string,
  args: string[] = [],
): Promise<Buffer> {
  const { exitCode, stdout, stderr } = await sandboxes.commands.script(sessionId, script, args);
  if (exitCode !== 0) {
    throw repoFailure(
      REPO_FAILURE_TYPES.workspace,
      `${what} failed in the workspace (exit ${exitCode}): ${stderr.trim().slice(-600) || 'no output'}`,
    );
  }
  return stdout;
}

/** Streams a host file into the workspace at `relPath` (owned by the sandbox user). */
export async function putHostFile(
  sandboxes: Sandboxes,
  sessionId: string,
  relPath: string,
  hostFile: string,
): Promise<void> {
  const size = fs.statSync(hostFile).size;
  const pack = tar.pack();
  const upload = sandboxes.files.putArchive(sessionId, pack);
  const owner = { uid: AGENT_UID, gid: AGENT_UID, mtime: new Date() };
  try {
    const parts = relPath.split('/');
    for (let i = 1; i < parts.length; i++) {
      pack.entry({ name: parts.slice(0, i).join('/'), type: 'directory', mode: 0o755, ...owner });
    }
    await new Promise<void>((resolve, reject) => {
      const entry = pack.entry({ name: relPath, size, mode: 0o600, ...owner }, (err) =>
        err ? reject(err) : resolve(),
      );
      fs.createReadStream(hostFile).on('error', reject).pipe(entry);
    });
    pack.finalize();
    await upload;
  } catch (err) {
    pack.destroy(err as Error);
    await upload.catch(() => undefined);
    throw err instanceof Error ? err : new SandboxError('failed', String(err));
  }
}

/** Reads a workspace file; undefined when it does not exist. */
export async function readWorkspaceFile(
  sandboxes: Sandboxes,
  sessionId: string,
  relPath: string,
): Promise<string | undefined> {
  const out = await workspaceScript(
    sandboxes,
    sessionId,
    `reading ${relPath}`,
    'if [ -f "$1" ]; then printf "+"; cat -- "$1"; else printf "-"; fi',
    [relPath],
  );
  return out.startsWith('+') ? out.slice(1) : undefined;
}
