/**
 * Reading a tool call's run records back: the latest attempt under its run base (state, exit, output
 * so far) and its journal, as `scripts/run-status.sh` finds them in the sandbox. A retried call
 * decides from this what its earlier attempt means (`earlier-attempt.ts`, `journal.ts`); where the
 * records are and who writes them is `journal-store.ts`.
 */
import { SandboxError } from './docker-calls';
import { JOURNAL_WRITER, type ToolCallRecords } from './journal-store';
import type { SandboxCommands } from './sandbox-commands';
import { AGENT_USER } from './sandbox-spec';
import { SCRIPTS, type RunExit } from './scripts';

/**
 * none: no attempt · unstarted: the command never started and its wrapper is gone · starting: the
 * wrapper is alive, no pid yet · running: the command, or its wrapper recording the result, is alive
 * · finished · dead: started, gone, no result.
 */
export type RunState = 'none' | 'unstarted' | 'starting' | 'running' | 'finished' | 'dead';

export interface RunStatus {
  attempt: number;
  state: RunState;
  exit?: RunExit;
  process?: { pid: number; pgid: number; startTime: number };
  /** The journal text, when one exists. */
  journal?: string;
  /** Output of the latest attempt so far (complete when finished). */
  output: Buffer;
}

/**
 * The latest attempt of a tool call and its journal, from its records — or, when they hold no
 * attempt, from where an older harness version kept them (`legacy`; see `legacyRecordsOf`).
 */
export async function runStatus(
  commands: SandboxCommands,
  sessionId: string,
  records: ToolCallRecords,
  legacy?: ToolCallRecords,
): Promise<RunStatus> {
  const status = await readRunStatus(commands, sessionId, records, JOURNAL_WRITER);
  // The workspace is the agent's: what an older version left there is read as the agent, never as root.
  return status.state === 'none' && legacy ? readRunStatus(commands, sessionId, legacy, AGENT_USER) : status;
}

async function readRunStatus(
  commands: SandboxCommands,
  sessionId: string,
  records: ToolCallRecords,
  user: string,
): Promise<RunStatus> {
  const { stdout, exitCode, stderr } = await commands.script(
    sessionId,
    SCRIPTS.runStatus,
    [records.runBase, records.journalPath],
    { user },
  );
  const newline = stdout.indexOf(0x0a);
  if (exitCode !== 0 || newline < 0)
    throw new SandboxError('failed', `reading the run status failed: ${stderr.trim().slice(0, 300)}`);
  const header = JSON.parse(stdout.subarray(0, newline).toString('utf8')) as {
    attempt: number;
    state: RunState;
    exit: RunExit | null;
    process: RunStatus['process'] | null;
    journal: unknown;
  };
  return {
    attempt: header.attempt,
    state: header.state,
    ...(header.exit ? { exit: header.exit } : {}),
    ...(header.process ? { process: header.process } : {}),
    ...(header.journal !== null ? { journal: JSON.stringify(header.journal) } : {}),
    output: stdout.subarray(newline + 1),
  };
}
