/**
 * Copying files into a session's workspace: as a tar stream through the Docker engine (no command
 * runs in the container), every entry owned by the agent, every path inside /workspace.
 */
import type Docker from 'dockerode';
import * as tar from 'tar-stream';
import { containerNameOf } from '../../common/sandbox-names';
import { dockerCall, SandboxError } from './docker-calls';
import { AGENT_UID, namePrefixOf, WORKSPACE_DIR } from './sandbox-spec';

export interface WorkspaceFile {
  /** Inside /workspace: absolute (`/workspace/a/b`) or relative to it (`a/b`). */
  path: string;
  content: string | Buffer;
  /** Default 0644. */
  mode?: number;
}

export class SandboxFiles {
  private readonly docker: Docker;
  private readonly namePrefix: string;

  constructor(options: { docker: Docker; namePrefix?: string }) {
    this.docker = options.docker;
    this.namePrefix = namePrefixOf(options.namePrefix);
  }

  /** Writes files (owned by `agent`) under /workspace; missing parent directories are created. */
  async put(sessionId: string, files: WorkspaceFile[]): Promise<void> {
    const pack = tar.pack();
    const dirs = new Set<string>();
    const mtime = new Date();
    for (const file of files) {
      const rel = workspaceRelative(file.path);
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++) {
        const dir = parts.slice(0, i).join('/');
        if (dirs.has(dir)) continue;
        dirs.add(dir);
        pack.entry({ name: dir, type: 'directory', mode: 0o755, uid: AGENT_UID, gid: AGENT_UID, mtime });
      }
      pack.entry({ name: rel, mode: file.mode ?? 0o644, uid: AGENT_UID, gid: AGENT_UID, mtime }, file.content);
    }
    pack.finalize();
    await this.putArchive(sessionId, pack);
  }

  /** Extracts a tar stream at /workspace (entries should carry uid/gid 1000). */
  async putArchive(sessionId: string, archive: NodeJS.ReadableStream): Promise<void> {
    const container = this.docker.getContainer(containerNameOf(sessionId, this.namePrefix));
    await dockerCall('copy files into the sandbox', () => container.putArchive(archive, { path: WORKSPACE_DIR }));
  }
}

function workspaceRelative(p: string): string {
  const rel = p.startsWith(`${WORKSPACE_DIR}/`) ? p.slice(WORKSPACE_DIR.length + 1) : p;
  if (!rel || rel.startsWith('/') || rel.split('/').some((part) => part === '..' || part === '')) {
    throw new SandboxError('invalid', `not a path inside ${WORKSPACE_DIR}: ${p}`);
  }
  return rel;
}
