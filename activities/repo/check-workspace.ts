/**
 * `checkWorkspace`: the integrity guard the harness runs after every operation.
 *
 * 1. History: the branch must still contain the last accepted commit. When the agent rewrote it
 *    (`git reset --hard` to before the run, `.git` deleted, the branch re-created), the workspace is
 *    reset to the accepted commit — from the workspace's own objects when they are still there,
 *    otherwise from the host's copy — and what HEAD pointed at is kept under `refs/agent/rewritten/`.
 * 2. The feature list: compared with the harness's record; any difference (deleted, added,
 *    reworded, re-ordered features, a changed `passes`) is reported and the record is written back.
 *
 * Retrying converges: both steps only move the workspace towards the record.
 */
import { compareFeatureList, FEATURE_LIST_FILE, featureListText } from '../../common/feature-list';
import type { CheckWorkspaceInput, CheckWorkspaceResult } from '../../common/repo';
import type { RepoContext } from './deps';
import { toRepoFailure } from './failures';
import { copyBranchIn } from './seed-branch';
import { EXCLUDE_AGENT_DIR, readWorkspaceFile, workspaceScript } from './workspace-git';

/** Prints `ok`, `rewritten <head or none>` or `missing <head or none>` for accepted commit $1. */
const HISTORY_STATE = String.raw`
cd /workspace
head=$(git rev-parse -q --verify HEAD 2>/dev/null || echo none)
if ! git cat-file -e "$1^{commit}" 2>/dev/null; then echo "missing $head"; exit 0; fi
if [ "$head" != none ] && git merge-base --is-ancestor "$1" HEAD 2>/dev/null; then echo ok; exit 0; fi
echo "rewritten $head"
`;

/** Keeps HEAD ($3) under a ref when it is a commit, then resets branch $1 to accepted commit $2. */
const RESET_TO_ACCEPTED = String.raw`
set -e
cd /workspace
if [ "$3" != none ] && git cat-file -e "$3^{commit}" 2>/dev/null; then
  git update-ref "refs/agent/rewritten/$(date +%s%N)" "$3"
fi
git symbolic-ref HEAD "refs/heads/$1"
git reset -q --hard "$2"
${EXCLUDE_AGENT_DIR}
git clean -fdq -e /.agent/
`;

export async function checkWorkspace(ctx: RepoContext, input: CheckWorkspaceInput): Promise<CheckWorkspaceResult> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const historyRewritten = await guardHistory(ctx, input);
    // A branch without a feature list (a review round on a branch no task made): history only.
    if (input.features === null) return historyRewritten ? { violations: [], historyRewritten } : { violations: [] };
    const text = await readWorkspaceFile(ctx.sandboxes, input.sessionId, FEATURE_LIST_FILE);
    const expected = featureListText(input.features);
    const violations = compareFeatureList(input.features, text);
    if (text !== expected) {
      await ctx.sandboxes.files.put(input.sessionId, [{ path: FEATURE_LIST_FILE, content: expected }]);
    }
    return { violations, ...(historyRewritten ? { historyRewritten } : {}) };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

async function guardHistory(ctx: RepoContext, input: CheckWorkspaceInput): Promise<string | undefined> {
  const state = (
    await workspaceScript(ctx.sandboxes, input.sessionId, 'checking the branch history', HISTORY_STATE, [
      input.acceptedCommit,
    ])
  ).trim();
  if (state === 'ok') return undefined;
  const [kind, head = 'none'] = state.split(' ');
  const short = input.acceptedCommit.slice(0, 12);
  if (kind === 'missing') {
    await copyBranchIn(ctx, input.sessionId, input.branch, input.acceptedCommit);
    return `the accepted commit ${short} was gone from the workspace (HEAD ${head === 'none' ? 'missing' : head.slice(0, 12)}); restored the branch from the host's copy`;
  }
  await workspaceScript(ctx.sandboxes, input.sessionId, 'restoring the accepted history', RESET_TO_ACCEPTED, [
    input.branch,
    input.acceptedCommit,
    head,
  ]);
  return `HEAD ${head === 'none' ? '(none)' : head.slice(0, 12)} no longer contained the accepted commit ${short}; reset the branch to it (the old HEAD is kept under refs/agent/rewritten/)`;
}
