import { READ_DEFAULT_LIMIT, type ReadFileInput } from '../../../common/tools';
import { SCRIPTS } from '../scripts';
import { helperResult, helperTimeout, type HandsTool } from './types';

/** Most bytes of numbered text one read returns, and the longest line shown in full. */
export const READ_MAX_BYTES = 50 * 1024;
export const READ_MAX_LINE_CHARS = 2_000;

export const readFileTool: HandsTool<ReadFileInput> = {
  name: 'read_file',
  prepare(input, ctx) {
    const request = {
      path: input.path,
      offset: input.offset ?? 1,
      limit: input.limit ?? READ_DEFAULT_LIMIT,
      maxBytes: READ_MAX_BYTES,
      maxLineChars: READ_MAX_LINE_CHARS,
    };
    return {
      command: 'exec python3 -c "$1" "$2"',
      args: [SCRIPTS.readFile, JSON.stringify(request)],
      timeoutMs: helperTimeout(ctx),
      journalCommand: `read_file ${input.path}`,
    };
  },
  format: (run, _input, ctx) => helperResult(run, helperTimeout(ctx)),
};
