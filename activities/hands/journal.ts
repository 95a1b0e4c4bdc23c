/**
 * The tool-call journal: what the harness knows about each tool call, so a retried attempt can tell
 * "never started" from "started, outcome unknown" even after the worker that ran it died.
 *
 * One JSON file per tool call in the journal store (`journal-store.ts`:
 * `/var/lib/agent-journal/journal/<toolCallId>.json`, on a volume the agent cannot write), written
 * inside the container by the run wrapper (the sandbox tools' `run`, running as the store's writer),
 * always replaced atomically (tmp + rename):
 *
 *   { "version": 1, "toolCallId": "toolu_…", "tool": "bash", "replayPolicy": "never",
 *     "summary": "bash: npm test",
 *     "events": [
 *       { "type": "started", "command": "npm test", "activityAttempt": 1, "attempt": 1,
 *         "runDir": "/var/lib/agent-journal/run/toolu_…/1", "wrapperPid": 41, "container": "3f2a…", "at": "…Z" },
 *       { "type": "process", "pid": 52, "pgid": 52, "startTime": 123456 },
 *       { "type": "finished", "attempt": 1, "outputPath": "/workspace/.agent/out/toolu_….txt",
 *         "result": { "exitCode": 0, "outputBytes": 10, "droppedBytes": 0, "timedOut": false,
 *                     "cancelled": false, "pid": 52, "startTime": 123456, "finishedAt": "…Z" } } ] }
 *
 * `started` is on disk before the command starts; `process` once it runs (pid = pgid, plus the
 * kernel start time so a reused pid is not mistaken for it); `finished` after it exits. The run
 * directory (`runDir`) holds the raw truth the journal summarises: `pid`, `out`, `exit`. The full
 * output is also copied into the workspace (`outputPath`, for the model to read back).
 *
 * Replay on a retried attempt of the same call:
 *   safe / idempotent → run again.
 *   never → no attempt yet, or an attempt whose command never started → run it;
 *           finished → return the recorded result, do not run;
 *           its process still alive → wait for it and return its real result;
 *           started, process gone, no result → a synthetic `is_error` result ("interrupted, outcome
 *           unknown, workspace preserved", with any partial output), never run again.
 */
import type { ReplayPolicy } from '../../common/tools';
import { legacyRecordsOf, recordsOf } from './journal-store';
import type { RunExit } from './scripts';
import type { ExecJournal } from './run-wrapper';
import type { RunStatus } from './run-records';

/** The agent-visible part of the harness's files in the workspace: spilled outputs and staged inputs. */
export const AGENT_DIR = '/workspace/.agent';
export const journalPathOf = (toolCallId: string): string => recordsOf(toolCallId).journalPath;
/** Attempt directories of a tool call: `<runBase>/<attempt>/{pid,out,exit}`. */
export const runBaseOf = (toolCallId: string): string => recordsOf(toolCallId).runBase;
/** Where a copy of a tool call's full output is kept for the model (and where spilled output is read back from). */
export const outputPathOf = (toolCallId: string): string => `${AGENT_DIR}/out/${toolCallId}.txt`;
/** Large tool inputs (file contents, edits) are staged here. */
export const inputPathOf = (toolCallId: string): string => `${AGENT_DIR}/in/${toolCallId}.json`;

export type JournalEvent =
  | {
      type: 'started';
      command: string;
      activityAttempt?: number;
      attempt: number;
      runDir: string;
      wrapperPid: number;
      container: string;
      at: string;
    }
  | { type: 'process'; pid: number; pgid: number; startTime: number; at?: string }
  | { type: 'finished'; attempt: number; outputPath: string; result: RunExit };

export interface Journal {
  version: 1;
  toolCallId: string;
  tool: string;
  replayPolicy: ReplayPolicy;
  summary: string;
  events: JournalEvent[];
}

const JOURNAL_COMMAND_MAX = 4_096;

/** The journal pieces the run wrapper writes for one attempt. */
export function journalFor(input: {
  toolCallId: string;
  tool: string;
  replayPolicy: ReplayPolicy;
  summary: string;
  /** What runs, in words the reader understands (the bash command, or the tool summary). */
  command: string;
  activityAttempt?: number;
}): ExecJournal {
  const header = {
    version: 1,
    toolCallId: input.toolCallId,
    tool: input.tool,
    replayPolicy: input.replayPolicy,
    summary: input.summary,
  };
  const command =
    input.command.length > JOURNAL_COMMAND_MAX ? `${input.command.slice(0, JOURNAL_COMMAND_MAX)}…` : input.command;
  const started = {
    type: 'started',
    command,
    ...(input.activityAttempt !== undefined ? { activityAttempt: input.activityAttempt } : {}),
  };
  return {
    path: journalPathOf(input.toolCallId),
    head: `${JSON.stringify(header).slice(0, -1)},"events":[`,
    started: JSON.stringify(started),
    ...(input.replayPolicy === 'never'
      ? { mode: 'fresh', legacyRunBase: legacyRecordsOf(input.toolCallId).runBase }
      : { mode: 'append' }),
  };
}

/** Parses a journal; undefined when it is missing or torn (a torn journal reads as "no journal"). */
export function parseJournal(text: string | undefined): Journal | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Journal;
    return value && value.version === 1 && Array.isArray(value.events) ? value : undefined;
  } catch {
    return undefined;
  }
}

export type ReplayDecision =
  | { action: 'run' }
  | { action: 'recorded'; exit: RunExit; output: Buffer; attempt: number }
  | { action: 'wait'; pid?: number }
  | { action: 'interrupted'; attempt: number; pid?: number; partialOutput: Buffer; startedAt?: string };

/** What a retried attempt of a tool call does, given the state of its latest earlier attempt. */
export function decideReplay(policy: ReplayPolicy, status: RunStatus): ReplayDecision {
  if (policy !== 'never') return { action: 'run' };
  switch (status.state) {
    case 'none':
    case 'unstarted':
      return { action: 'run' };
    case 'finished':
      return { action: 'recorded', exit: status.exit!, output: status.output, attempt: status.attempt };
    case 'running':
    case 'starting':
      return { action: 'wait', ...(status.process ? { pid: status.process.pid } : {}) };
    case 'dead': {
      const started = parseJournal(status.journal)
        ?.events.filter(
          (e): e is Extract<JournalEvent, { type: 'started' }> => e.type === 'started' && e.attempt === status.attempt,
        )
        .pop();
      return {
        action: 'interrupted',
        attempt: status.attempt,
        ...(status.process ? { pid: status.process.pid } : {}),
        partialOutput: status.output,
        ...(started ? { startedAt: started.at } : {}),
      };
    }
  }
}
