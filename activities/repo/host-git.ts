/**
 * Git on the host, where the credentials are: the host's credential helpers and ssh keys, or
 * `AGENT_GIT_TOKEN` offered through an inline credential helper that reads it from the environment
 * (the token is never on a command line, in a URL or in a message). Prompts are off, so a missing
 * credential fails at once instead of hanging. Every message that leaves this module is redacted.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_FAILURE_TYPES, type RepoFailureType } from '../../common/repo';
import type { TaskRepo } from '../../common/coding-task';
import { repoFailure } from './failures';
import { checkSeedSource } from '../hands/seed-source';
import type { Forges, ForgeSettings } from '../forge/settings';
import type { SecretStore } from '../secrets/store';

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Runs git; resolves with the exit code (never rejects on a non-zero exit). */
export function git(
  env: NodeJS.ProcessEnv,
  args: string[],
  options: { cwd?: string; signal?: AbortSignal } = {},
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...credentialArgs(env), ...args],
      { cwd: options.cwd, env: gitEnv(env), maxBuffer: 64 * 1024 * 1024, signal: options.signal },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        if (err && typeof code !== 'number') return reject(err);
        resolve({ stdout: String(stdout), stderr: String(stderr), code: typeof code === 'number' ? code : 0 });
      },
    );
  });
}

/** Runs git and returns its trimmed stdout; a failure becomes a classified, redacted ApplicationFailure. */
export async function gitOrFail(
  env: NodeJS.ProcessEnv,
  args: string[],
  what: string,
  options: { cwd?: string; signal?: AbortSignal } = {},
): Promise<string> {
  const result = await git(env, args, options);
  if (result.code !== 0) throw classifyGitFailure(env, what, result.stderr);
  return result.stdout.trim();
}

function gitEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return {
    ...env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_SSH_COMMAND: env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes',
    LANG: 'C',
    LC_ALL: 'C',
  };
}

/** With `AGENT_GIT_TOKEN` set, an inline helper answers git's credential requests from the environment. */
function credentialArgs(env: NodeJS.ProcessEnv): string[] {
  if (!env.AGENT_GIT_TOKEN) return [];
  const helper =
    '!f() { test "$1" = get || exit 0; echo "username=${AGENT_GIT_USERNAME:-x-access-token}"; echo "password=${AGENT_GIT_TOKEN}"; }; f';
  return ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`];
}

/** Removes userinfo from URLs and the token's value from any text. */
export function redact(env: NodeJS.ProcessEnv, text: string): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]+@/gi, '$1');
  const token = env.AGENT_GIT_TOKEN;
  if (token && token.length >= 4) out = out.split(token).join('***');
  return out;
}

/** Git's failure, classified once: a missing repository, refused credentials, or (retryable) anything else. */
export function classifyGitFailure(env: NodeJS.ProcessEnv, what: string, stderr: string) {
  const detail = redact(env, stderr.trim().split('\n').slice(-4).join(' ').slice(0, 600)) || 'no output';
  let type: RepoFailureType = REPO_FAILURE_TYPES.git;
  if (
    /authentication failed|could not read (username|password)|terminal prompts disabled|permission denied \(publickey|access denied|invalid credentials|http basic|returned error: 40[13]/i.test(
      stderr,
    )
  ) {
    type = REPO_FAILURE_TYPES.auth;
  } else if (
    /does not appear to be a git repository|repository not found|not found|does not exist|no such file or directory|not a git repository|returned error: 404/i.test(
      stderr,
    )
  ) {
    type = REPO_FAILURE_TYPES.notFound;
  }
  const hint =
    type === REPO_FAILURE_TYPES.auth
      ? ' (no credentials the remote accepts on the hands host: configure a git credential helper or set AGENT_GIT_TOKEN for the hands worker)'
      : '';
  return repoFailure(type, `${what} failed: ${detail}${hint}`);
}

/**
 * The git remote a task's repository stands for: the URL, or for a local repository its directory.
 * The one place a repository from a task's input is checked before the host reads it: like an
 * operation's seed source (`checkSeedSource`), a local path or `file://` URL must lie inside the
 * allowed roots, and a URL must be of a form git may be given (`InvalidSeedSource` otherwise).
 */
export function remoteOf(repo: Exclude<TaskRepo, { kind: 'forge' }>, allowedRoots: readonly string[]): string {
  const checked = checkSeedSource(
    repo.kind === 'git'
      ? { kind: 'git', url: repo.url, ...(repo.ref ? { ref: repo.ref } : {}) }
      : { kind: 'local', path: repo.path },
    allowedRoots,
  );
  return checked.kind === 'git' ? checked.url : resolveLocalRepository(checked.path);
}

export function resolveLocalRepository(repoPath: string): string {
  const dir = path.resolve(repoPath);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw repoFailure(REPO_FAILURE_TYPES.notFound, `repo.path ${dir}: no such directory`);
  }
  if (!fs.existsSync(path.join(dir, '.git')) && !fs.existsSync(path.join(dir, 'HEAD'))) {
    throw repoFailure(
      REPO_FAILURE_TYPES.notFound,
      `repo.path ${dir}: not a git repository (run \`git init\` and commit there first, or use repo.kind "git")`,
    );
  }
  return dir;
}

/** How the remote appears in reports and results. */
export function describeRemote(env: NodeJS.ProcessEnv, repo: Exclude<TaskRepo, { kind: 'forge' }>): string {
  return repo.kind === 'git' ? redact(env, repo.url) : path.resolve(repo.path);
}

/** Where git reaches a task's repository, and the environment it does so with. */
export interface RemoteTarget {
  /** What git is given (a URL without credentials, or a directory). */
  remote: string;
  /** How reports show it. */
  shown: string;
  /** The host's environment, with the forge's token offered to git for a forge repository. */
  env: NodeJS.ProcessEnv;
  /** For a repository on a forge: its settings and name. */
  forge?: { settings: ForgeSettings; token: string; repository: string };
}

export interface RemoteContext {
  allowedRoots: readonly string[];
  env: NodeJS.ProcessEnv;
  forges?: Forges;
  secrets?: SecretStore;
}

/**
 * The remote of a task's repository. A forge repository (`repo.kind: "forge"`) is the forge's
 * `<url>/<owner>/<name>.git`, reached with the forge's token from the secret store through the same
 * inline credential helper as `AGENT_GIT_TOKEN` (never on a command line or in a URL).
 */
export function remoteTarget(ctx: RemoteContext, repo: TaskRepo): RemoteTarget {
  if (repo.kind !== 'forge') {
    return { remote: remoteOf(repo, ctx.allowedRoots), shown: describeRemote(ctx.env, repo), env: ctx.env };
  }
  const settings = ctx.forges?.get(repo.forge);
  if (!settings)
    throw repoFailure(
      REPO_FAILURE_TYPES.auth,
      `repo.forge ${JSON.stringify(repo.forge)} is not configured on this hands worker (AGENT_FORGES names ${[...(ctx.forges?.keys() ?? [])].join(', ') || 'none'})`,
    );
  const token = ctx.secrets?.get(settings.tokenSecret);
  if (!token)
    throw repoFailure(
      REPO_FAILURE_TYPES.auth,
      `the forge ${settings.name} names the secret ${settings.tokenSecret}, which this hands worker's secret store does not hold (set AGENT_SECRET_${settings.tokenSecret})`,
    );
  const url = `${settings.url}/${repo.repository}.git`;
  return {
    remote: url,
    shown: url,
    env: { ...ctx.env, AGENT_GIT_TOKEN: token, AGENT_GIT_USERNAME: settings.gitUser },
    forge: { settings, token, repository: repo.repository },
  };
}
