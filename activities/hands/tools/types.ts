/**
 * The shape of a tool implementation: `prepare` turns a validated input into a command for the run
 * wrapper; `format` turns the finished run into the result the model sees. Tools never touch Docker.
 */
import { HELPER_TIMEOUT_MS, type ToolName } from '../../../common/tools';
import type { Spill } from '../../../common/hands';
import type { SpillOptions } from '../output';
import type { RunExit } from '../scripts';

export interface ToolContext {
  toolCallId: string;
  /** The activity's time budget for the call (`RunToolInput.timeoutMs`, its default filled in). */
  timeoutMs: number;
  spill: SpillOptions;
  /** Where the full output is kept: `/workspace/.agent/out/<toolCallId>.txt`. */
  outputPath: string;
}

export interface PreparedRun {
  /** A bash script; `args` are its positional parameters. */
  command: string;
  args?: string[];
  /** Files to place in the workspace before the command runs. */
  files?: { path: string; content: string }[];
  timeoutMs: number;
  /** What the journal records as the command. */
  journalCommand: string;
}

export interface FinishedRun {
  exit: RunExit;
  output: Buffer;
  outputPath: string;
}

export interface ToolResult {
  content: string;
  isError: boolean;
  exitCode?: number;
  spill?: Spill;
}

export interface HandsTool<I> {
  name: ToolName;
  prepare(input: I, ctx: ToolContext): PreparedRun;
  format(run: FinishedRun, input: I, ctx: ToolContext): ToolResult;
}

/** A run that was killed by the wrapper's watchdog or by cancellation, in words. */
export function killedNote(run: FinishedRun, timeoutMs: number): string | undefined {
  if (run.exit.timedOut)
    return `[timed out after ${formatSeconds(timeoutMs)}: the command and everything it started were killed]`;
  if (run.exit.cancelled) return '[cancelled: the command and everything it started were killed]';
  return undefined;
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Timeout for the file and search tools, capped by the activity's budget. */
export function helperTimeout(ctx: ToolContext): number {
  return Math.min(HELPER_TIMEOUT_MS, ctx.timeoutMs);
}

/** Result of the file tools' helpers: exit 0 = result, 1 = tool error with a message, else a crash. */
export function helperResult(run: FinishedRun, timeoutMs: number): ToolResult {
  const text = run.output.toString('utf8').replace(/\n$/, '');
  const killed = killedNote(run, timeoutMs);
  if (killed) return { content: [text, killed].filter(Boolean).join('\n'), isError: true, exitCode: run.exit.exitCode };
  if (run.exit.exitCode === 0) return { content: text, isError: false, exitCode: 0 };
  if (run.exit.exitCode === 1) return { content: text, isError: true, exitCode: 1 };
  return {
    content: `${text}\n[the tool failed unexpectedly (exit code ${run.exit.exitCode})]`.trim(),
    isError: true,
    exitCode: run.exit.exitCode,
  };
}
