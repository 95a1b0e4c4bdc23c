/**
 * The harness's records in a task's workspace: a given-up attempt's work kept under a ref before
 * the workspace goes back to the accepted commit (`shelveAttempt`), and the morning report
 * (`writeReport`, `.agent/reports/<task id>.md`); reading the initializer's feature list; removing
 * the host's clone once everything it holds is on the remote.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FEATURE_LIST_FILE } from '../../common/feature-list';
import { PR_REPLIES_FILE } from '../../common/pull-request';
import type { ShelveAttemptInput, WriteReportInput } from '../../common/repo';
import { hostRepositoryOf, type RepoContext } from './deps';
import { toRepoFailure } from './failures';
import { EXCLUDE_AGENT_DIR, readWorkspaceFile, workspaceScript } from './workspace-git';

/** $1 branch, $2 accepted commit, $3 ref, $4 message, $5/$6 identity: prints the shelved commit (or nothing). */
const SHELVE = String.raw`
set -e
cd /workspace
${EXCLUDE_AGENT_DIR}
if [ -n "$(git status --porcelain)" ] || [ "$(git rev-parse HEAD)" != "$2" ]; then
  git add -A
  git rm -r -q --cached --ignore-unmatch .agent >/dev/null
  tree=$(git write-tree)
  wip=$(GIT_AUTHOR_NAME=$5 GIT_AUTHOR_EMAIL=$6 GIT_COMMITTER_NAME=$5 GIT_COMMITTER_EMAIL=$6 git commit-tree "$tree" -p HEAD -m "$4")
  git update-ref "$3" "$wip"
  echo "$wip"
fi
git symbolic-ref HEAD "refs/heads/$1"
git reset -q --hard "$2"
git clean -fdq -e /.agent/
`;

export async function shelveAttempt(ctx: RepoContext, input: ShelveAttemptInput): Promise<{ shelved?: string }> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const out = await workspaceScript(ctx.sandboxes, input.sessionId, 'shelving the attempt', SHELVE, [
      input.branch,
      input.acceptedCommit,
      input.ref,
      input.message,
      ctx.author.name,
      ctx.author.email,
    ]);
    const shelved = out.trim();
    return shelved ? { shelved } : {};
  } catch (err) {
    throw toRepoFailure(err);
  }
}

export async function writeReport(ctx: RepoContext, input: WriteReportInput): Promise<{ path: string }> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const name = input.taskId.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[.-]+/, '') || 'task';
    const path = `.agent/reports/${name}.md`;
    await ctx.sandboxes.files.put(input.sessionId, [{ path, content: input.markdown }]);
    return { path: `/workspace/${path}` };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

export async function readFeatureList(ctx: RepoContext, input: { sessionId: string }): Promise<{ text?: string }> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const text = await readWorkspaceFile(ctx.sandboxes, input.sessionId, FEATURE_LIST_FILE);
    return text === undefined ? {} : { text };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

export async function readRevisionReplies(ctx: RepoContext, input: { sessionId: string }): Promise<{ text?: string }> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const text = await readWorkspaceFile(ctx.sandboxes, input.sessionId, PR_REPLIES_FILE);
    return text === undefined ? {} : { text };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

export async function releaseHostRepository(ctx: RepoContext, input: { sessionId: string }): Promise<void> {
  const dir = path.dirname(hostRepositoryOf(ctx, input.sessionId));
  fs.rmSync(dir, { recursive: true, force: true });
}
