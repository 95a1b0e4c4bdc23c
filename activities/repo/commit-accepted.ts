/**
 * `commitAccepted`: the one commit of an accepted operation. The harness writes its record of the
 * feature list (with the `passes` it just earned), then squashes everything since the last accepted
 * commit — the agent's commits and anything left uncommitted — into one commit on the task's
 * branch, with the agent's commit subjects in the body and trailers naming the task, the feature and
 * the operation. Hooks are skipped and the identity is the harness's.
 *
 * A retried call recognises its own commit (parent = the accepted commit, the operation's trailer in
 * the message) and returns it: no second commit.
 */
import { featureListText, FEATURE_LIST_FILE } from '../../common/feature-list';
import type { CommitAcceptedInput, CommitAcceptedResult } from '../../common/repo';
import type { RepoContext } from './deps';
import { toRepoFailure } from './failures';
import { changedTestFiles } from './test-files';
import { EXCLUDE_AGENT_DIR, TASK_DIR, workspaceScript } from './workspace-git';

const MESSAGE_FILE = `${TASK_DIR}/commit-message`;
const MAX_CHANGES = 200;

/** $1 parent, $2 identifying trailer line: prints `done <sha>` for an existing commit, else the agent's subjects. */
const FIND_OR_COLLECT = String.raw`
cd /workspace
if [ "$(git rev-parse -q --verify HEAD^ 2>/dev/null)" = "$1" ] && git log -1 --format=%B HEAD | grep -qxF "$2"; then
  echo "done $(git rev-parse HEAD)"; exit 0
fi
echo collect
git log --reverse --no-color --format='%s' "$1..HEAD" 2>/dev/null | head -n 50
true
`;

/** $1 parent: prints `unchanged` when HEAD is the parent and the work tree (but .agent/) is clean. */
const UNCHANGED = String.raw`
cd /workspace
${EXCLUDE_AGENT_DIR}
if [ "$(git rev-parse HEAD)" = "$1" ] && [ -z "$(git status --porcelain -- . ':(exclude).agent')" ]; then echo unchanged; fi
true
`;

/** $1 branch, $2 parent, $3 message file, $4 author name, $5 author email: prints the new commit. */
const SQUASH = String.raw`
set -e
cd /workspace
${EXCLUDE_AGENT_DIR}
git symbolic-ref HEAD "refs/heads/$1"
git reset -q --soft "$2"
git add -A
git rm -r -q --cached --ignore-unmatch .agent >/dev/null
GIT_AUTHOR_NAME=$4 GIT_AUTHOR_EMAIL=$5 GIT_COMMITTER_NAME=$4 GIT_COMMITTER_EMAIL=$5 \
  git -c commit.gpgsign=false -c core.hooksPath=/dev/null commit -q --no-verify --allow-empty -F "$3"
git rev-parse HEAD
`;

export async function commitAccepted(ctx: RepoContext, input: CommitAcceptedInput): Promise<CommitAcceptedResult> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const trailers = Object.entries(input.trailers).map(([key, value]) => `${key}: ${value}`);
    const found = await workspaceScript(ctx.sandboxes, input.sessionId, 'looking for the commit', FIND_OR_COLLECT, [
      input.parent,
      trailers[trailers.length - 1] ?? '',
    ]);
    let commit: string;
    if (found.startsWith('done ')) {
      commit = found.slice(5).trim();
    } else if (
      input.skipIfUnchanged &&
      (
        await workspaceScript(ctx.sandboxes, input.sessionId, 'looking for changes', UNCHANGED, [input.parent])
      ).trim() === 'unchanged'
    ) {
      return { commit: input.parent, unchanged: true, changes: [], changedTestFiles: [] };
    } else {
      const agentSubjects = found.split('\n').slice(1).filter(Boolean);
      const body = agentSubjects.length
        ? `\n\nThe agent's commits:\n${agentSubjects.map((subject) => `- ${subject}`).join('\n')}`
        : '';
      const message = `${input.subject}${body}\n\n${trailers.join('\n')}\n`;
      await ctx.sandboxes.files.put(input.sessionId, [
        ...(input.features ? [{ path: FEATURE_LIST_FILE, content: featureListText(input.features) }] : []),
        { path: MESSAGE_FILE, content: message },
      ]);
      const out = await workspaceScript(ctx.sandboxes, input.sessionId, 'committing the accepted work', SQUASH, [
        input.branch,
        input.parent,
        MESSAGE_FILE,
        ctx.author.name,
        ctx.author.email,
      ]);
      commit = out.trim().split('\n').pop() ?? '';
    }
    const changes = await changesOf(ctx, input.sessionId, input.parent, commit);
    return { commit, changes: changes.slice(0, MAX_CHANGES), changedTestFiles: changedTestFiles(changes) };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

async function changesOf(
  ctx: RepoContext,
  sessionId: string,
  parent: string,
  commit: string,
): Promise<Array<{ status: string; path: string }>> {
  const out = await workspaceScript(
    ctx.sandboxes,
    sessionId,
    'listing the commit',
    'git -c core.quotepath=off diff --no-renames --name-status "$1" "$2"',
    [parent, commit],
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [status = '', ...rest] = line.split('\t');
      return { status, path: rest.join('\t') };
    });
}
