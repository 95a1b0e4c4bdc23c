/**
 * The scripts the hands run inside a sandbox container, loaded once from `scripts/`, and the files
 * and lines of the run wrapper they read.
 *
 * The run wrapper (the sandbox tools' `run`: `sandbox-tools/run.go`, arguments in `run-wrapper.ts`)
 * runs every tool command. Docker has no API to kill an exec'd process and a worker can die while a
 * command runs, so the wrapper makes the command's identity, output and exit status durable in files
 * of the journal store (`journal-store.ts`, which the agent cannot write) that a later attempt (or a
 * kill, `kill-group.sh`; or a look, `run-status.sh`) can find:
 *
 *   <runBase>/<attempt>/     attempt = the first free number, claimed with an atomic mkdir
 *                            (`fresh` mode claims only attempt 1, so two first attempts cannot both run)
 *     wrapper    the wrapper's pid (tells "about to start" from "never started")
 *     pid        "<pid> <starttime>" of the session leader, written by it before it becomes the
 *                command (setsid: its pid is also the pgid)
 *     out        stdout+stderr, interleaved, capped at the capture limit
 *     dropped    bytes that arrived after the cap (counted, not kept)
 *     timedout   present when the wrapper's watchdog killed the group
 *     cancelled  present when the host killed the group (cancellation)
 *     exit       written last: RunExit as JSON (with the sandbox's resource counters: forks refused
 *                by the pid limit, processes killed for memory, free bytes on /workspace)
 *
 * It also keeps the tool-call journal (journal.ts) in step when given one: the `started` event is
 * written before the command starts, `process` once it has a pid, `finished` at the end.
 *
 * Protocol on the exec's stdout: `@@agent-pid <pid> <attempt>` when the command starts, then
 * `@@agent-exit <RunExit json>` and the raw output. In `fresh` mode, when an earlier attempt exists,
 * nothing runs and the wrapper prints `@@agent-journal` followed by the journal (if written yet).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const load = (name: string): string => fs.readFileSync(path.join(__dirname, 'scripts', name), 'utf8');

export const SCRIPTS = {
  runStatus: load('run-status.sh'),
  killGroup: load('kill-group.sh'),
} as const;

/** What the wrapper records when a command ends (`exit` file, `@@agent-exit` line, journal). */
export interface RunExit {
  exitCode: number;
  /** Bytes captured in the output file. */
  outputBytes: number;
  /** Bytes that arrived after the capture cap and were discarded. */
  droppedBytes: number;
  timedOut: boolean;
  cancelled: boolean;
  pid: number;
  startTime: number;
  finishedAt: string;
  /** How often the sandbox's pid limit refused a fork while the command ran. */
  pidLimitHits?: number;
  /** How many processes the kernel killed for memory (the sandbox's memory limit) while it ran. */
  oomKills?: number;
  /** Free bytes on /workspace when it ended (-1: unknown). */
  workspaceFreeBytes?: number;
  /** Size of the file system /workspace is on (-1: unknown). */
  workspaceBytes?: number;
  /**
   * Where the full output was left for the model: the workspace copy, or the run directory's. Always
   * written by this version's wrapper; absent only in the records a version before the journal volume
   * left in the workspace (read for the case `legacyRecordsOf` in `journal-store.ts` describes).
   */
  outputPath?: string;
}
