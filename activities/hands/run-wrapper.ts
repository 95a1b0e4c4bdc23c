/**
 * The worker's side of the run wrapper (the sandbox tools' `run`, `sandbox-tools/run.go`; files and
 * protocol in `scripts.ts`): the arguments one command is run with, and what its output says — the `@@agent-pid` line that gives
 * the command's process identity as soon as it starts, the `@@agent-exit` line and the output at its
 * end, or `@@agent-journal` when a `fresh` run found an earlier attempt.
 */
import { SANDBOX_TOOLS } from './executor/sandbox-tools';
import type { RunExit } from './scripts';

/** The output capture cap when the caller gives none (bytes). */
export const DEFAULT_CAPTURE_BYTES = 8 * 1024 * 1024;

export interface ProcessIdentity {
  pid: number;
  /** Equal to pid: the command runs as a session (and group) leader. */
  pgid: number;
  /** Attempt number under the run base. */
  attempt: number;
  runDir: string;
}

export interface ExecJournal {
  /** Journal file in the journal store. */
  path: string;
  /** JSON text of a new journal up to and including `"events":[`. */
  head: string;
  /** The `started` event as a JSON object; the wrapper adds attempt, runDir, wrapperPid, container, at. */
  started: string;
  /** `fresh`: run only as the call's first attempt (else report the journal); `append`: run as the next attempt. */
  mode: 'fresh' | 'append';
  /**
   * `fresh` only: where an older harness version kept this call's attempts (`legacyRecordsOf` in
   * `journal-store.ts`, which says which case still needs it); an attempt there counts as an earlier
   * attempt too.
   */
  legacyRunBase?: string;
}

export interface ExecOptions {
  /** A bash script, run as `bash -c <command> agent-tool <args...>`. */
  command: string;
  args?: string[];
  /** Directory under which this command's attempt directories are made. */
  runBase: string;
  timeoutMs: number;
  /** Output capture cap (bytes); the rest is counted and discarded. */
  maxOutputBytes?: number;
  /** A path the full output is hard-linked to when the command ends. */
  outputLink?: string;
  journal?: ExecJournal;
  /** Aborting kills the command's process group (and marks the run `cancelled`). */
  signal?: AbortSignal;
  onProcess?: (identity: ProcessIdentity) => void;
}

/** The wrapper's command line for one command (run as the journal store's writer). */
export function wrapperArgv(options: ExecOptions): string[] {
  const journal = options.journal;
  return [
    SANDBOX_TOOLS,
    'run',
    options.runBase,
    options.outputLink ?? '',
    (Math.max(1, options.timeoutMs) / 1000).toFixed(3),
    String(options.maxOutputBytes ?? DEFAULT_CAPTURE_BYTES),
    options.command,
    journal?.path ?? '',
    journal?.head ?? '',
    journal?.started ?? '',
    journal?.mode === 'fresh' && journal.legacyRunBase ? `fresh:${journal.legacyRunBase}` : (journal?.mode ?? 'append'),
    ...(options.args ?? []),
  ];
}

/**
 * Watches the start of the wrapper's output for the `@@agent-pid` line: `push` each stdout chunk;
 * the identity is known from that line on (undefined before, and for a run that never started).
 */
export class PidLineWatch {
  private head = '';
  identity: ProcessIdentity | undefined;

  constructor(
    private readonly runBase: string,
    private readonly onIdentity: (identity: ProcessIdentity) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.identity || this.head.length > 200) return;
    this.head += chunk.toString('latin1');
    const match = /^@@agent-pid (\d+) (\d+)\n/.exec(this.head);
    if (!match) return;
    const pid = Number(match[1]);
    const attempt = Number(match[2]);
    this.identity = { pid, pgid: pid, attempt, runDir: `${this.runBase}/${attempt}` };
    this.onIdentity(this.identity);
  }
}

/** What the wrapper printed, once it ended. */
export type WrapperOutput =
  /** A `fresh` run found an earlier attempt: nothing ran; the journal as it stands (maybe empty). */
  | { kind: 'journal-exists'; journal: string }
  /** The command ended: its attempt number, exit record and captured output (cut short if the stream was). */
  | { kind: 'ended'; attempt: number; exit: RunExit & { outputPath: string }; output: Buffer }
  /** No result line: the wrapper was stopped (or its output lost) before the command's end. */
  | { kind: 'no-result' };

export function parseWrapperOutput(all: Buffer): WrapperOutput {
  if (all.subarray(0, 16).toString('latin1') === '@@agent-journal\n') {
    return { kind: 'journal-exists', journal: all.subarray(16).toString('utf8') };
  }
  let offset = 0;
  let attempt = 0;
  const firstEnd = all.indexOf(0x0a);
  if (firstEnd < 0) return { kind: 'no-result' };
  const first = /^@@agent-pid (\d+) (\d+)$/.exec(all.subarray(0, firstEnd).toString('latin1'));
  if (first) {
    attempt = Number(first[2]);
    offset = firstEnd + 1;
  }
  const exitEnd = all.indexOf(0x0a, offset);
  if (exitEnd < 0) return { kind: 'no-result' };
  const line = all.subarray(offset, exitEnd).toString('utf8');
  if (!line.startsWith('@@agent-exit ')) return { kind: 'no-result' };
  return {
    kind: 'ended',
    attempt,
    // The wrapper this worker sends always says where it left the output.
    exit: JSON.parse(line.slice('@@agent-exit '.length)) as RunExit & { outputPath: string },
    output: all.subarray(exitEnd + 1),
  };
}
