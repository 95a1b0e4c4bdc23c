/**
 * `workspaceSnapshot`: what a fresh coding operation's context is built from — HANDOFF.md, init.sh,
 * `git log`, `git status` and `git diff --stat` — read from the workspace by the harness (never from
 * a previous transcript). Each part is cut to a few KiB so the context stays small.
 */
import { HANDOFF_FILE, INIT_SCRIPT_FILE } from '../../common/feature-list';
import type { SnapshotInput, WorkspaceSnapshot } from '../../common/repo';
import type { RepoContext } from './deps';
import { toRepoFailure } from './failures';
import { workspaceScript } from './workspace-git';

const PART_MAX_BYTES = 6_000;
const SECTION = '@@agent-section ';

const SNAPSHOT_SCRIPT = String.raw`
cd /workspace
section() { printf '\n${SECTION}%s\n' "$1"; }
section handoff; [ -f "$2" ] && head -c ${PART_MAX_BYTES + 1} "$2"
section init; [ -f "$3" ] && head -c ${PART_MAX_BYTES + 1} "$3"
section log; git log --no-color --format='%h %s' -n "$1" 2>&1 | head -c ${PART_MAX_BYTES + 1}
section status; git -c core.quotepath=off status --short 2>&1 | head -c ${PART_MAX_BYTES + 1}
section diffstat; git -c core.quotepath=off diff --stat HEAD 2>&1 | head -c ${PART_MAX_BYTES + 1}
true
`;

export async function workspaceSnapshot(ctx: RepoContext, input: SnapshotInput): Promise<WorkspaceSnapshot> {
  try {
    await ctx.sandboxes.lifecycle.ensure(input.sessionId);
    const out = await workspaceScript(
      ctx.sandboxes,
      input.sessionId,
      'reading the handoff and git state',
      SNAPSHOT_SCRIPT,
      [String(input.logCount), HANDOFF_FILE, INIT_SCRIPT_FILE],
    );
    const parts = new Map<string, string>();
    for (const chunk of out.split(`\n${SECTION}`).slice(1)) {
      const newline = chunk.indexOf('\n');
      parts.set(chunk.slice(0, newline < 0 ? chunk.length : newline), newline < 0 ? '' : chunk.slice(newline + 1));
    }
    const part = (name: string): string => cut(parts.get(name) ?? '');
    const handoff = parts.has('handoff') && parts.get('handoff') !== '' ? part('handoff') : undefined;
    const initScript = parts.get('init') ? part('init') : undefined;
    return {
      ...(handoff !== undefined ? { handoff } : {}),
      ...(initScript !== undefined ? { initScript } : {}),
      gitLog: part('log').trim(),
      gitStatus: part('status').trim(),
      diffStat: part('diffstat').trim(),
    };
  } catch (err) {
    throw toRepoFailure(err);
  }
}

function cut(text: string): string {
  if (Buffer.byteLength(text) <= PART_MAX_BYTES) return text;
  return `${Buffer.from(text).subarray(0, PART_MAX_BYTES).toString('utf8')}\n[… cut at ${PART_MAX_BYTES} bytes]`;
}
