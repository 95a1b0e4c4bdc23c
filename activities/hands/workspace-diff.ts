/** `workspaceDiff`: the session workspace's changes against HEAD, for `agent diff` and the demo. */
import type { SessionRef } from '../../common/hands';
import { sessionOf, type HandsContext } from './deps';
import { toActivityFailure } from './failures';
import { SandboxError } from './docker-calls';

const DIFF_MAX_BYTES = 1024 * 1024;

export async function workspaceDiff(hands: HandsContext, input: SessionRef): Promise<{ diff: string; stat: string }> {
  const sessionId = sessionOf(input);
  try {
    await hands.sandboxes.lifecycle.ensure(sessionId);
    const { stdout, exitCode, stderr } = await hands.sandboxes.commands.script(sessionId, DIFF_SCRIPT);
    if (exitCode !== 0) throw new SandboxError('failed', `git diff failed: ${stderr.trim().slice(0, 300)}`);
    const text = stdout.toString('utf8');
    if (text.startsWith('@@not-git')) return { diff: '', stat: '(the workspace is not a git repository)' };
    const split = text.indexOf('@@diff\n');
    const stat = text.slice(0, split).trim();
    let diff = text.slice(split + '@@diff\n'.length);
    if (Buffer.byteLength(diff) > DIFF_MAX_BYTES) {
      diff = `${Buffer.from(diff).subarray(0, DIFF_MAX_BYTES).toString('utf8')}\n[diff truncated at ${DIFF_MAX_BYTES} bytes]\n`;
    }
    return { diff, stat };
  } catch (err) {
    throw toActivityFailure(err);
  }
}

/** The diff of the workspace against HEAD, new files included, without touching the real index. */
const DIFF_SCRIPT = String.raw`
cd /workspace
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo '@@not-git'; exit 0; }
idx=$(mktemp) && rm -f "$idx" || exit 1
trap 'rm -f "$idx"' EXIT
gitdir=$(git rev-parse --git-dir)
[ -f "$gitdir/index" ] && cp "$gitdir/index" "$idx"
export GIT_INDEX_FILE=$idx
git add -A . >/dev/null 2>&1 || exit 1
base=$(git rev-parse --verify -q HEAD || git hash-object -t tree /dev/null)
git -c core.quotepath=off diff --cached --stat "$base"
echo '@@diff'
git -c core.quotepath=off diff --cached "$base"
`;
