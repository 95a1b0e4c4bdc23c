/** The tool implementations by name; the catalogue (schemas, policies) is `common/tools.ts`. */
import type { ToolInput, ToolName } from '../../../common/tools';
import { bashTool } from './bash';
import { editFileTool } from './edit-file';
import { readFileTool } from './read-file';
import { grepTool, listFilesTool } from './search';
import type { HandsTool } from './types';
import { writeFileTool } from './write-file';

export const HANDS_TOOLS: { [N in ToolName]: HandsTool<ToolInput<N>> } = {
  bash: bashTool,
  read_file: readFileTool,
  write_file: writeFileTool,
  edit_file: editFileTool,
  list_files: listFilesTool,
  grep: grepTool,
};
