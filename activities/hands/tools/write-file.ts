import type { WriteFileInput } from '../../../common/tools';
import { SANDBOX_TOOLS } from '../executor/sandbox-tools';
import { inputPathOf } from '../journal';
import { helperResult, helperTimeout, type HandsTool, type PreparedRun } from './types';

/** Inputs larger than this travel as a staged file instead of a command-line argument (Linux caps one at 128 KiB). */
export const INLINE_INPUT_MAX = 64 * 1024;

/**
 * Runs a file tool's helper of the sandbox tools (`read-file`, `write-file`, `edit-file`) with a JSON
 * request, inline or staged in the workspace when large (the helper removes a staged request once read).
 */
export function sandboxHelper(
  helper: 'read-file' | 'write-file' | 'edit-file',
  request: object,
  toolCallId: string,
  timeoutMs: number,
  journalCommand: string,
): PreparedRun {
  const command = `exec ${SANDBOX_TOOLS} ${helper} "$1"`;
  const json = JSON.stringify(request);
  if (Buffer.byteLength(json) <= INLINE_INPUT_MAX) return { command, args: [json], timeoutMs, journalCommand };
  const staged = inputPathOf(toolCallId);
  return { command, args: [`@${staged}`], files: [{ path: staged, content: json }], timeoutMs, journalCommand };
}

export const writeFileTool: HandsTool<WriteFileInput> = {
  name: 'write_file',
  prepare: (input, ctx) =>
    sandboxHelper(
      'write-file',
      { path: input.path, content: input.content },
      ctx.toolCallId,
      helperTimeout(ctx),
      `write_file ${input.path} (${Buffer.byteLength(input.content)} bytes)`,
    ),
  format: (run, _input, ctx) => helperResult(run, helperTimeout(ctx)),
};
