import type { EditFileInput } from '../../../common/tools';
import { helperResult, helperTimeout, type HandsTool } from './types';
import { sandboxHelper } from './write-file';

export const editFileTool: HandsTool<EditFileInput> = {
  name: 'edit_file',
  prepare: (input, ctx) =>
    sandboxHelper(
      'edit-file',
      { path: input.path, old_text: input.old_text, new_text: input.new_text },
      ctx.toolCallId,
      helperTimeout(ctx),
      `edit_file ${input.path}`,
    ),
  format: (run, _input, ctx) => helperResult(run, helperTimeout(ctx)),
};
