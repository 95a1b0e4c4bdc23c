/**
 * Setting a Gitea up for the harness through its admin API: users and their tokens, a repository
 * with the bot as an admin collaborator (the trigger check reads other users' permissions, which
 * Gitea allows only repository admins), its trigger label and a signed webhook. `npm run forge` and
 * the forge tests use these; none of it is needed against a forge a team already runs.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { childEnvironment } from './settings';
import { PlatformError } from './temporal-cli';

const run = promisify(execFile);

export interface GiteaAdmin {
  url: string;
  /** An admin's token (scopes: all). */
  token: string;
}

async function call<T>(
  admin: GiteaAdmin,
  method: string,
  apiPath: string,
  body?: unknown,
  auth?: { basic: [string, string] } | { token: string },
): Promise<{ status: number; body: T }> {
  const authorization =
    auth && 'basic' in auth
      ? `Basic ${Buffer.from(`${auth.basic[0]}:${auth.basic[1]}`).toString('base64')}`
      : `token ${auth && 'token' in auth ? auth.token : admin.token}`;
  const response = await fetch(`${admin.url}/api/v1${apiPath}`, {
    method,
    headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (!response.ok && response.status !== 409 && response.status !== 422)
    throw new PlatformError(`gitea ${method} ${apiPath}: ${response.status} ${text.slice(0, 300)}`);
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Makes a user (when missing) and a new token of theirs with `scopes`; returns the token. */
export async function giteaUserWithToken(
  admin: GiteaAdmin,
  user: string,
  scopes: string[] = ['write:repository', 'write:issue', 'read:user'],
): Promise<string> {
  const password = `pw-${user}-${Math.random().toString(36).slice(2)}`;
  const created = await call(admin, 'POST', '/admin/users', {
    username: user,
    password,
    email: `${user}@forge.invalid`,
    must_change_password: false,
  });
  if (created.status === 422 || created.status === 409)
    await call(admin, 'PATCH', `/admin/users/${user}`, {
      login_name: user,
      source_id: 0,
      password,
      must_change_password: false,
    });
  const { body } = await call<{ sha1: string }>(
    admin,
    'POST',
    `/users/${user}/tokens`,
    { name: `agent-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, scopes },
    { basic: [user, password] },
  );
  return body.sha1;
}

export interface GiteaRepository {
  owner: string;
  name: string;
  /** `owner/name`. */
  fullName: string;
  cloneUrl: string;
}

/** Makes `owner/name` (owner: a user) when missing, with `main` as its default branch. */
export async function giteaRepository(admin: GiteaAdmin, owner: string, name: string): Promise<GiteaRepository> {
  const existing = await fetch(`${admin.url}/api/v1/repos/${owner}/${name}`, {
    headers: { authorization: `token ${admin.token}` },
  });
  if (existing.status === 404)
    await call(admin, 'POST', `/admin/users/${owner}/repos`, { name, default_branch: 'main' });
  return { owner, name, fullName: `${owner}/${name}`, cloneUrl: `${admin.url}/${owner}/${name}.git` };
}

/** Gives `user` a permission on the repository (`read`, `write` or `admin`). */
export async function giteaCollaborator(
  admin: GiteaAdmin,
  repo: GiteaRepository,
  user: string,
  permission: 'read' | 'write' | 'admin',
): Promise<void> {
  await call(admin, 'PUT', `/repos/${repo.fullName}/collaborators/${user}`, { permission });
}

export async function giteaLabel(
  admin: GiteaAdmin,
  repo: GiteaRepository,
  name: string,
  color = '#0e8a16',
): Promise<number> {
  const { body: labels } = await call<Array<{ id: number; name: string }>>(
    admin,
    'GET',
    `/repos/${repo.fullName}/labels`,
  );
  const found = labels.find((label) => label.name === name);
  if (found) return found.id;
  const { body } = await call<{ id: number }>(admin, 'POST', `/repos/${repo.fullName}/labels`, { name, color });
  return body.id;
}

/** An active webhook to `url` signed with `secret`, for the events the harness acts on. */
export async function giteaWebhook(
  admin: GiteaAdmin,
  repo: GiteaRepository,
  url: string,
  secret: string,
): Promise<number> {
  const { body: hooks } = await call<Array<{ id: number; config: { url: string } }>>(
    admin,
    'GET',
    `/repos/${repo.fullName}/hooks`,
  );
  for (const hook of hooks.filter((h) => h.config.url === url))
    await call(admin, 'DELETE', `/repos/${repo.fullName}/hooks/${hook.id}`);
  const { body } = await call<{ id: number }>(admin, 'POST', `/repos/${repo.fullName}/hooks`, {
    type: 'gitea',
    // Created inactive unless asked: Gitea's default.
    active: true,
    config: { url, content_type: 'json', secret },
    events: [
      'issues',
      'issue_label',
      'issue_comment',
      'pull_request',
      'pull_request_review_approved',
      'pull_request_review_rejected',
      'pull_request_review_comment',
      'pull_request_comment',
      'pull_request_sync',
      'status',
    ],
  });
  return body.id;
}

/** Pushes the files of `source` as one commit on `branch` (the repository's first, or on top). */
export async function giteaPushDirectory(
  repo: GiteaRepository,
  token: string,
  source: string,
  options: { branch?: string; message?: string } = {},
): Promise<string> {
  const branch = options.branch ?? 'main';
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'forge-push-'));
  const helper = `!f() { test "$1" = get || exit 0; echo username=agent; echo "password=${token}"; }; f`;
  const git = async (...args: string[]) =>
    (
      await run('git', ['-c', 'credential.helper=', '-c', `credential.helper=${helper}`, ...args], {
        cwd: work,
        env: childEnvironment({ GIT_TERMINAL_PROMPT: '0', LANG: 'C' }),
      })
    ).stdout.trim();
  try {
    fs.cpSync(source, work, { recursive: true, filter: (file) => !file.split(path.sep).includes('.git') });
    await git('init', '-q', '-b', branch);
    await git('add', '-A');
    await git(
      '-c',
      'user.name=forge setup',
      '-c',
      'user.email=setup@forge.invalid',
      'commit',
      '-q',
      '-m',
      options.message ?? 'Initial commit',
    );
    await git('push', '-q', repo.cloneUrl, `HEAD:refs/heads/${branch}`);
    const commit = await git('rev-parse', 'HEAD');
    await waitForBranch(repo, token, branch, commit);
    return commit;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Gitea records a push through a queue: until it has, the repository still counts as empty (its
 * pull requests answer 404) and the branch is not listed. Waits until the API shows the commit.
 */
export async function waitForBranch(
  repo: GiteaRepository,
  token: string,
  branch: string,
  commit: string,
  timeoutMs = 60_000,
): Promise<void> {
  const api = repo.cloneUrl.replace(/\/[^/]+\/[^/]+\.git$/, '/api/v1');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${api}/repos/${repo.fullName}/branches/${encodeURIComponent(branch)}`, {
      headers: { authorization: `token ${token}` },
    });
    if (response.ok && ((await response.json()) as { commit?: { id?: string } }).commit?.id === commit) return;
    if (Date.now() > deadline)
      throw new PlatformError(`gitea did not list ${branch} at ${commit} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
