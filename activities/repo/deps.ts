/** What the repo activities are built from: the hands worker's sandboxes, the host's state folder and git settings. */
import * as path from 'node:path';
import { isSessionId, SESSION_ID_RULE } from '../../common/sandbox-names';
import { defaultAllowedRoots } from '../hands/deps';
import { SandboxError } from '../hands/docker-calls';
import type { Sandboxes } from '../hands/sandboxes';

export interface RepoActivitiesDeps {
  sandboxes: Sandboxes;
  /** Where the host keeps one bare clone per task run (`<tasksDir>/<session id>/repo.git`). */
  tasksDir: string;
  /**
   * Directories a task's local repository (or `file://` remote) may lie in, as for an operation's
   * seed source (default: `defaultAllowedRoots()`, i.e. `AGENT_ALLOWED_ROOTS` or home and examples/).
   */
  allowedRoots?: readonly string[];
  /**
   * The host's environment for git: its credential helpers and ssh keys apply, and `AGENT_GIT_TOKEN`
   * (with `AGENT_GIT_USERNAME`, default `x-access-token`) is offered to https remotes. Default `process.env`.
   */
  env?: NodeJS.ProcessEnv;
  /** Author and committer of the harness's commits (default `AGENT_GIT_AUTHOR` or `coding agent <agent@harness.invalid>`). */
  author?: { name: string; email: string };
  heartbeatIntervalMs?: number;
}

export interface RepoContext {
  sandboxes: Sandboxes;
  tasksDir: string;
  allowedRoots: readonly string[];
  env: NodeJS.ProcessEnv;
  author: { name: string; email: string };
  heartbeatEveryMs: number;
}

export function repoContext(deps: RepoActivitiesDeps): RepoContext {
  const env = deps.env ?? process.env;
  return {
    sandboxes: deps.sandboxes,
    tasksDir: deps.tasksDir,
    allowedRoots: deps.allowedRoots ?? defaultAllowedRoots(env),
    env,
    author: deps.author ?? parseAuthor(env.AGENT_GIT_AUTHOR),
    heartbeatEveryMs: deps.heartbeatIntervalMs ?? 2_000,
  };
}

/** `Name <email>` → parts; the default when unset or malformed. */
export function parseAuthor(value: string | undefined): { name: string; email: string } {
  const match = /^\s*([^<>]+?)\s*<([^<>\s]+)>\s*$/.exec(value ?? '');
  return match ? { name: match[1]!, email: match[2]! } : { name: 'coding agent', email: 'agent@harness.invalid' };
}

/** The host's bare clone of a task run. */
export function hostRepositoryOf(ctx: RepoContext, sessionId: string): string {
  if (!isSessionId(sessionId))
    throw new SandboxError('invalid', `invalid session id ${JSON.stringify(sessionId)}: use ${SESSION_ID_RULE}`);
  return path.join(ctx.tasksDir, sessionId, 'repo.git');
}
