import type { WriteFileInput } from '../../../common/tools';
import { inputPathOf } from '../journal';
import { SCRIPTS } from '../scripts';
import { helperResult, helperTimeout, type HandsTool, type PreparedRun } from './types';

/** Inputs larger than this travel as a staged file instead of a command-line argument (Linux caps one at 128 KiB). */
export const INLINE_INPUT_MAX = 64 * 1024;

/** Runs a Python helper with a JSON request, inline or staged in the workspace when large. */
export function pythonHelper(
  script: string,
  request: object,
  toolCallId: string,
  timeoutMs: number,
  journalCommand: string,
): PreparedRun {
  const json = JSON.stringify(request);
  if (Buffer.byteLength(json) <= INLINE_INPUT_MAX)
    return { command: 'exec python3 -c "$1" "$2"', args: [script, json], timeoutMs, journalCommand };
  const staged = inputPathOf(toolCallId);
  return {
    command: 'exec python3 -c "$1" "$2"',
    args: [script, `@${staged}`],
    files: [{ path: staged, content: json }],
    timeoutMs,
    journalCommand,
  };
}

export const writeFileTool: HandsTool<WriteFileInput> = {
  name: 'write_file',
  prepare: (input, ctx) =>
    pythonHelper(
      SCRIPTS.writeFile,
      { path: input.path, content: input.content },
      ctx.toolCallId,
      helperTimeout(ctx),
      `write_file ${input.path} (${Buffer.byteLength(input.content)} bytes)`,
    ),
  format: (run, _input, ctx) => helperResult(run, helperTimeout(ctx)),
};
