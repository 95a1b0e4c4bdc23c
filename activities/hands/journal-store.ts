/**
 * Where the records that decide a retried tool call's replay are kept, and who may write them.
 *
 * The agent's commands run as uid 1000 in /workspace, so nothing they can reach may decide replay:
 * `git clean -fdx` or `rm -rf .agent` would erase the proof that a `never` call already started. The
 * records live on the session's journal volume (`agent-jr-<sessionId>`), mounted at
 * `/var/lib/agent-journal`, owned by root and written only by the harness's own processes (the run
 * wrapper and the bookkeeping scripts run as root in the sandbox, with no capabilities beyond
 * switching to the agent's uid and signalling its processes). The agent can read them, not change
 * or delete them. The volume outlives every container, so the records survive a worker crash and a
 * container replacement alike.
 *
 *   /var/lib/agent-journal/journal/<toolCallId>.json    the journal (journal.ts)
 *   /var/lib/agent-journal/run/<toolCallId>/<attempt>/  an attempt's pid, output, exit (scripts.ts)
 *   /var/lib/agent-journal/seeded.json                  the workspace was seeded (seed.ts)
 *
 * Harness versions before the journal volume kept the same files under /workspace/.agent; they are
 * read there (never written, and only as the agent) for the two cases below that can still need them.
 *
 * Everything that reads or writes the records goes through this module's paths and `JOURNAL_WRITER`:
 * an executor that replaces `docker exec` keeps the same store by honouring them.
 */

/** Mount point of the journal volume in the sandbox. */
export const JOURNAL_DIR = '/var/lib/agent-journal';
/** The user (uid:gid) the run wrapper and the scripts that read or write the records run as. */
export const JOURNAL_WRITER = '0:0';
/** Where older harness versions kept the records, inside the workspace. */
const LEGACY_DIR = '/workspace/.agent';

/** Where one tool call's records are. */
export interface ToolCallRecords {
  /** The journal file. */
  journalPath: string;
  /** The directory of its attempt directories (`<runBase>/<attempt>/`). */
  runBase: string;
}

export function recordsOf(toolCallId: string): ToolCallRecords {
  return { journalPath: `${JOURNAL_DIR}/journal/${toolCallId}.json`, runBase: `${JOURNAL_DIR}/run/${toolCallId}` };
}

/**
 * Where a harness version before the journal volume kept a call's records (read, never written).
 * Needed for one case only: a tool call whose activity attempt a hands worker of that version
 * started, retried by a worker of this version (the old worker died or was upgraded mid-call, or a
 * reset scheduled the call again). Without them a `never` call would run a second time and a finished
 * call would not return its recorded result. A call this version starts never has records there.
 */
export function legacyRecordsOf(toolCallId: string): ToolCallRecords {
  return { journalPath: `${LEGACY_DIR}/journal/${toolCallId}.json`, runBase: `${LEGACY_DIR}/run/${toolCallId}` };
}

/**
 * The record that the workspace was seeded (`path`), and where a version before the journal volume
 * kept it (`legacyPath`). The latter is needed as long as a workspace such a version seeded is used
 * again: every operation of a session calls `seedWorkspace` (and so does a retried attempt of it), so
 * a session started before the change, continuing with its next operation, would otherwise have its
 * repository copied over the agent's work.
 */
export const SEED_RECORD = { path: `${JOURNAL_DIR}/seeded.json`, legacyPath: `${LEGACY_DIR}/seeded` } as const;
