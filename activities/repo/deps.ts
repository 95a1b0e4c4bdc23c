/** What the repo activities are built from: the hands worker's sandboxes, the host's state folder and git settings. */
import * as path from 'node:path';
import { isSessionId, SESSION_ID_RULE } from '../../common/sandbox-names';
import { defaultAllowedRoots } from '../hands/deps';
import { SandboxError } from '../hands/docker-calls';
import type { Sandboxes } from '../hands/sandboxes';
import { DEFAULT_GIT_AUTHOR, type GitAuthor } from './settings';
import type { Forges } from '../forge/settings';
import type { SecretStore } from '../secrets/store';

export interface RepoActivitiesDeps {
  sandboxes: Sandboxes;
  /** Where the host keeps one bare clone per task run (`<tasksDir>/<session id>/repo.git`). */
  tasksDir: string;
  /**
   * Directories a task's local repository (or `file://` remote) may lie in, as for an operation's
   * seed source (default: `AGENT_ALLOWED_ROOTS` of `env`, or the home directory and `examples/`).
   */
  allowedRoots?: readonly string[];
  /**
   * The host's environment for git: its credential helpers and ssh keys apply, and `AGENT_GIT_TOKEN`
   * (with `AGENT_GIT_USERNAME`, default `x-access-token`) is offered to https remotes.
   */
  env: NodeJS.ProcessEnv;
  /** Author and committer of the harness's commits (default `coding agent <agent@harness.invalid>`; a worker passes `AGENT_GIT_AUTHOR`). */
  author?: GitAuthor;
  heartbeatIntervalMs?: number;
  /** A repository's `.agent/hooks.json` at the run's start commit is read (`AGENT_REPOSITORY_HOOKS`; default off). */
  repositoryHooks?: boolean;
  /** The forges of `AGENT_FORGES`, for tasks on a forge repository (cloned and pushed with the forge's token). */
  forges?: Forges;
  /** The host's secret store, which holds the forges' tokens. */
  secrets?: SecretStore;
}

export interface RepoContext {
  sandboxes: Sandboxes;
  tasksDir: string;
  allowedRoots: readonly string[];
  env: NodeJS.ProcessEnv;
  author: GitAuthor;
  heartbeatEveryMs: number;
  repositoryHooks: boolean;
  forges?: Forges;
  secrets?: SecretStore;
}

export function repoContext(deps: RepoActivitiesDeps): RepoContext {
  return {
    sandboxes: deps.sandboxes,
    tasksDir: deps.tasksDir,
    allowedRoots: deps.allowedRoots ?? defaultAllowedRoots(deps.env),
    env: deps.env,
    author: deps.author ?? DEFAULT_GIT_AUTHOR,
    heartbeatEveryMs: deps.heartbeatIntervalMs ?? 2_000,
    repositoryHooks: deps.repositoryHooks ?? false,
    ...(deps.forges ? { forges: deps.forges } : {}),
    ...(deps.secrets ? { secrets: deps.secrets } : {}),
  };
}

/** The host's bare clone of a task run. */
export function hostRepositoryOf(ctx: RepoContext, sessionId: string): string {
  if (!isSessionId(sessionId))
    throw new SandboxError('invalid', `invalid session id ${JSON.stringify(sessionId)}: use ${SESSION_ID_RULE}`);
  return path.join(ctx.tasksDir, sessionId, 'repo.git');
}
