import { READ_DEFAULT_LIMIT, type ReadFileInput } from '../../../common/tools';
import { sandboxHelper } from './write-file';
import { helperResult, helperTimeout, type HandsTool } from './types';

/** Most bytes of numbered text one read returns, and the longest line shown in full. */
export const READ_MAX_BYTES = 50 * 1024;
export const READ_MAX_LINE_CHARS = 2_000;

export const readFileTool: HandsTool<ReadFileInput> = {
  name: 'read_file',
  prepare: (input, ctx) =>
    sandboxHelper(
      'read-file',
      {
        path: input.path,
        offset: input.offset ?? 1,
        limit: input.limit ?? READ_DEFAULT_LIMIT,
        maxBytes: READ_MAX_BYTES,
        maxLineChars: READ_MAX_LINE_CHARS,
      },
      ctx.toolCallId,
      helperTimeout(ctx),
      `read_file ${input.path}`,
    ),
  format: (run, _input, ctx) => helperResult(run, helperTimeout(ctx)),
};
