/**
 * `pushBranch`: the accepted commits leave the sandbox and reach the remote.
 *
 * 1. Out of the sandbox: `git bundle create - <branch> ^<base>` on the command's stdout (the Docker
 *    API), fetched into the host's bare clone, which then records the branch at the commit.
 * 2. To the remote, from the host (its credentials): a plain `git push <commit>:refs/heads/<branch>`,
 *    never forced. A push is an effect, so it is made idempotent by looking first: a remote branch
 *    already at (or past) the commit counts as pushed; one that moved elsewhere is reported as a
 *    rejection with the commits kept on the host and in the workspace.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_FAILURE_TYPES, type PushBranchInput, type PushBranchResult } from '../../common/repo';
import type { RepoContext } from './deps';
import { repoFailure, toRepoFailure } from './failures';
import { classifyGitFailure, git, gitOrFail, remoteTarget, type RemoteTarget } from './host-git';
import { ForgeClient } from '../forge/client';
import { ensureBareRepository } from './prepare';
import { workspaceBytes } from './workspace-git';

export async function pushBranch(hostCtx: RepoContext, input: PushBranchInput): Promise<PushBranchResult> {
  try {
    const target = remoteTarget(hostCtx, input.repo);
    const { remote, shown } = target;
    const ctx: RepoContext = { ...hostCtx, env: target.env };
    if (target.forge) await refuseUnsafeBranch(target, input.branch);
    const dir = await ensureBareRepository(ctx, input.sessionId);
    await copyCommitsOut(ctx, dir, input, remote, shown);

    const remoteCommit = await remoteBranchCommit(ctx, remote, shown, input.branch);
    if (remoteCommit === input.commit) return { pushed: true, alreadyThere: true };
    if (remoteCommit !== input.expected && remoteCommit !== null) {
      const relation = await relate(ctx, dir, remote, shown, input.branch, remoteCommit, input.commit);
      if (relation === 'contains') return { pushed: true, alreadyThere: true };
      if (relation === 'diverged') return rejected(input, remoteCommit, 'the remote branch moved to a commit');
    }
    const push = await git(ctx.env, [
      '-C',
      dir,
      'push',
      '--porcelain',
      remote,
      `${input.commit}:refs/heads/${input.branch}`,
    ]);
    if (push.code === 0) return { pushed: true, alreadyThere: false };
    if (/\[rejected\]|\[remote rejected\]|non-fast-forward|fetch first|! /.test(push.stdout + push.stderr)) {
      const now = await remoteBranchCommit(ctx, remote, shown, input.branch);
      if (now === input.commit) return { pushed: true, alreadyThere: true };
      return rejected(input, now, `the remote refused the push (${summarize(push.stdout + push.stderr)}) at`);
    }
    throw classifyGitFailure(ctx.env, `pushing ${input.branch} to ${shown}`, push.stderr || push.stdout);
  } catch (err) {
    throw toRepoFailure(err);
  }
}

/**
 * On a forge, the harness never pushes to the default branch or a protected one, whatever the input
 * says: it works on branches of its own and proposes them as pull requests.
 */
async function refuseUnsafeBranch(target: RemoteTarget, branch: string): Promise<void> {
  const forge = target.forge!;
  const client = new ForgeClient({ forge: forge.settings, token: forge.token });
  const check = await client.checkBranch({ forge: forge.settings.name, repository: forge.repository, branch });
  const why =
    branch === check.defaultBranch
      ? `it is the default branch of ${forge.repository}`
      : check.protected
        ? `a protection rule of ${forge.repository} covers it`
        : undefined;
  if (why)
    throw repoFailure(
      REPO_FAILURE_TYPES.unsafeBranch,
      `the harness never pushes to ${branch}: ${why}; work on a branch of its own (e.g. agent/…) and let a person merge the pull request`,
    );
}

function rejected(input: PushBranchInput, remoteCommit: string | null, why: string): PushBranchResult {
  const at = remoteCommit ? remoteCommit.slice(0, 12) : '(branch deleted)';
  return {
    pushed: false,
    remoteCommit,
    message: `push of ${input.branch} rejected: ${why} ${at} that does not lead to ${input.commit.slice(0, 12)}; nothing was forced, the commits are kept in the workspace and the host's clone`,
  };
}

function summarize(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/** Gets the commit into the host's clone (from a bundle of the sandbox's branch) unless it is there. */
async function copyCommitsOut(
  ctx: RepoContext,
  dir: string,
  input: PushBranchInput,
  remote: string,
  shown: string,
): Promise<void> {
  const has = async (sha: string | null) =>
    sha !== null && (await git(ctx.env, ['-C', dir, 'cat-file', '-e', `${sha}^{commit}`])).code === 0;
  if (!(await has(input.commit))) {
    if (input.expected !== null && !(await has(input.expected))) {
      // The host's clone was lost: the remote still has the last pushed commit.
      await gitOrFail(
        ctx.env,
        [
          '-C',
          dir,
          'fetch',
          '-q',
          '--no-tags',
          remote,
          `+refs/heads/${input.branch}:refs/remotes/origin/${input.branch}`,
        ],
        `fetching ${input.branch} from ${shown}`,
      );
    }
    const base = (await has(input.base))
      ? [`^${input.base}`]
      : (await has(input.expected))
        ? [`^${input.expected}`]
        : [];
    const bundle = await workspaceBytes(
      ctx.sandboxes,
      input.sessionId,
      'bundling the accepted commits',
      'cd /workspace && git bundle create -q - "refs/heads/$1" "${@:2}"',
      [input.branch, ...base],
    );
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-push-'));
    try {
      const file = path.join(tmp, 'commits.bundle');
      fs.writeFileSync(file, bundle);
      await gitOrFail(
        ctx.env,
        ['-C', dir, 'fetch', '-q', file, `+refs/heads/${input.branch}:refs/agent/incoming`],
        'reading the commits out of the sandbox',
      );
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    if (!(await has(input.commit))) {
      throw repoFailure(
        REPO_FAILURE_TYPES.workspace,
        `the workspace's branch ${input.branch} does not hold the accepted commit ${input.commit.slice(0, 12)}`,
      );
    }
  }
  await gitOrFail(
    ctx.env,
    ['-C', dir, 'update-ref', `refs/heads/${input.branch}`, input.commit],
    'recording the branch',
  );
}

async function remoteBranchCommit(
  ctx: RepoContext,
  remote: string,
  shown: string,
  branch: string,
): Promise<string | null> {
  const out = await gitOrFail(ctx.env, ['ls-remote', remote, `refs/heads/${branch}`], `reading ${shown}`);
  const line = out.split('\n').find((l) => l.endsWith(`\trefs/heads/${branch}`));
  return line ? line.split('\t')[0]! : null;
}

/** How the remote's commit relates to ours: it already contains ours, ours fast-forwards it, or they diverged. */
async function relate(
  ctx: RepoContext,
  dir: string,
  remote: string,
  shown: string,
  branch: string,
  remoteCommit: string,
  commit: string,
): Promise<'contains' | 'fast-forward' | 'diverged'> {
  await gitOrFail(
    ctx.env,
    ['-C', dir, 'fetch', '-q', '--no-tags', remote, `+refs/heads/${branch}:refs/remotes/origin/${branch}`],
    `fetching ${branch} from ${shown}`,
  );
  const ancestor = async (a: string, b: string) =>
    (await git(ctx.env, ['-C', dir, 'merge-base', '--is-ancestor', a, b])).code === 0;
  if (await ancestor(commit, remoteCommit)) return 'contains';
  if (await ancestor(remoteCommit, commit)) return 'fast-forward';
  return 'diverged';
}
