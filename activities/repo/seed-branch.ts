/**
 * `seedBranch`: the task's branch enters the workspace as a git repository of its own — a bundle of
 * the host's branch is copied in and fetched, so the workspace has the history and no remote, URL
 * or credential. Done once per workspace: a later call finds the marker and returns the head.
 *
 * `restoreBranch` does the same over a workspace whose history the agent destroyed (`.git`
 * deleted, the accepted commits gone): the host's copy is the record it is restored from.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SeedBranchInput } from '../../common/repo';
import { hostRepositoryOf, type RepoContext } from './deps';
import { toRepoFailure } from './failures';
import { gitOrFail } from './host-git';
import { EXCLUDE_AGENT_DIR, putHostFile, TASK_DIR, workspaceScript } from './workspace-git';

const SEEDED_MARKER = `${TASK_DIR}/seeded`;
const BUNDLE_PATH = `${TASK_DIR}/branch.bundle`;

/**
 * Fetches the bundle into /workspace (a new repository if needed) and checks the branch out at the
 * commit: $1 branch, $2 commit, $3 bundle path. The work tree is reset to the commit.
 */
const FETCH_BUNDLE = String.raw`
set -e
cd /workspace
[ -d .git ] && git rev-parse --git-dir >/dev/null 2>&1 || { rm -rf .git; git init -q; }
${EXCLUDE_AGENT_DIR}
git fetch -q --update-head-ok "$3" "+refs/heads/$1:refs/heads/$1"
git symbolic-ref HEAD "refs/heads/$1"
git reset -q --hard "$2"
git clean -fdq -e /.agent/
rm -f "$3"
`;

export async function seedBranch(ctx: RepoContext, input: SeedBranchInput): Promise<{ head: string }> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId, { operationId: input.operationId });
    const seeded = await workspaceScript(
      ctx.sandboxes,
      input.sessionId,
      'reading the seed marker',
      `cat ${SEEDED_MARKER} 2>/dev/null || true`,
    );
    if (seeded.trim()) return { head: seeded.trim() };
    await copyBranchIn(ctx, input.sessionId, input.branch, input.commit);
    await workspaceScript(ctx.sandboxes, input.sessionId, 'marking the workspace seeded', 'echo "$1" > "$2"', [
      input.commit,
      SEEDED_MARKER,
    ]);
    return { head: input.commit };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

/** Copies the host's branch into the workspace and checks it out at `commit` (the host must have it). */
export async function copyBranchIn(ctx: RepoContext, sessionId: string, branch: string, commit: string): Promise<void> {
  const dir = hostRepositoryOf(ctx, sessionId);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-bundle-'));
  try {
    const bundle = path.join(tmp, 'branch.bundle');
    await gitOrFail(ctx.env, ['-C', dir, 'update-ref', `refs/heads/${branch}`, commit], 'recording the branch');
    await gitOrFail(
      ctx.env,
      ['-C', dir, 'bundle', 'create', '-q', bundle, `refs/heads/${branch}`],
      'bundling the branch',
    );
    await putHostFile(ctx.sandboxes, sessionId, BUNDLE_PATH, bundle);
    await workspaceScript(ctx.sandboxes, sessionId, 'checking the branch out', FETCH_BUNDLE, [
      branch,
      commit,
      BUNDLE_PATH,
    ]);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
