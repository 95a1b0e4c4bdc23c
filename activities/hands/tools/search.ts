/** list_files and grep, both through ripgrep (which honours .gitignore); .git and .agent are skipped. */
import {
  GREP_DEFAULT_MAX_RESULTS,
  LIST_DEFAULT_MAX_RESULTS,
  type GrepInput,
  type ListFilesInput,
} from '../../../common/tools';
import { firstLines } from '../output';
import { helperTimeout, killedNote, type FinishedRun, type HandsTool, type ToolResult } from './types';

const EXCLUDES = ['--glob', '!.git', '--glob', '!.agent'];
/** Exit code of the check below: the path leads out of /workspace through a symbolic link. */
const OUTSIDE_WORKSPACE = 3;
/**
 * ripgrep on the arguments after the first, once the first (the path searched) is known to stay in
 * /workspace after symbolic links are resolved (the catalogue already refused `..` escapes).
 */
const RG_INSIDE_WORKSPACE = `p=$(realpath -m -- "$1"); case $p in /workspace | /workspace/*) shift; exec rg "$@" ;; esac
printf '%s resolves to %s through a symbolic link, outside /workspace: the file tools work only inside it (use bash to look elsewhere).\\n' "$1" "$p"; exit ${OUTSIDE_WORKSPACE}`;

/** The command and arguments for ripgrep: the path check first when a path is given. */
function rgCommand(args: string[], path: string | undefined): { command: string; args: string[] } {
  return path === undefined
    ? { command: 'exec rg "$@"', args }
    : { command: RG_INSIDE_WORKSPACE, args: [path, ...args] };
}

function rgResult(run: FinishedRun, max: number, noun: string, none: string, timeoutMs: number): ToolResult {
  const killed = killedNote(run, timeoutMs);
  if (killed)
    return {
      content: `${run.output.toString('utf8').trim()}\n${killed}`.trim(),
      isError: true,
      exitCode: run.exit.exitCode,
    };
  if (run.exit.exitCode === OUTSIDE_WORKSPACE)
    return { content: run.output.toString('utf8').trim(), isError: true, exitCode: run.exit.exitCode };
  // ripgrep: 0 = found, 1 = nothing found, 2 = an error (bad pattern, missing path).
  if (run.exit.exitCode === 1) return { content: none, isError: false, exitCode: 1 };
  if (run.exit.exitCode !== 0)
    return {
      content: `${run.output.toString('utf8').trim()}\n[ripgrep failed with exit code ${run.exit.exitCode}]`,
      isError: true,
      exitCode: run.exit.exitCode,
    };
  const shaped = firstLines(run.output, max, run.outputPath, noun);
  return { content: shaped.text, isError: false, exitCode: 0, ...(shaped.spill ? { spill: shaped.spill } : {}) };
}

export const listFilesTool: HandsTool<ListFilesInput> = {
  name: 'list_files',
  prepare(input, ctx) {
    const args = [
      '--files',
      '--hidden',
      '--sort',
      'path',
      '--no-config',
      ...(input.pattern ? ['--glob', input.pattern] : []),
      ...EXCLUDES,
      ...(input.path ? ['--', input.path] : []),
    ];
    return { ...rgCommand(args, input.path), timeoutMs: helperTimeout(ctx), journalCommand: `rg ${args.join(' ')}` };
  },
  format: (run, input, ctx) =>
    rgResult(
      run,
      input.max_results ?? LIST_DEFAULT_MAX_RESULTS,
      'files',
      `No files found${input.pattern ? ` matching ${input.pattern}` : ''}${input.path ? ` in ${input.path}` : ''}.`,
      helperTimeout(ctx),
    ),
};

export const grepTool: HandsTool<GrepInput> = {
  name: 'grep',
  prepare(input, ctx) {
    const args = [
      '--line-number',
      '--no-heading',
      '--with-filename',
      '--color',
      'never',
      '--hidden',
      '--sort',
      'path',
      '--no-config',
      '--max-columns',
      '300',
      '--max-columns-preview',
      ...(input.ignore_case ? ['--ignore-case'] : []),
      ...(input.glob ? ['--glob', input.glob] : []),
      ...EXCLUDES,
      '--regexp',
      input.pattern,
      ...(input.path ? ['--', input.path] : []),
    ];
    return { ...rgCommand(args, input.path), timeoutMs: helperTimeout(ctx), journalCommand: `rg ${args.join(' ')}` };
  },
  format: (run, input, ctx) =>
    rgResult(
      run,
      input.max_results ?? GREP_DEFAULT_MAX_RESULTS,
      'matching lines',
      `No matches for ${JSON.stringify(input.pattern)}${input.path ? ` in ${input.path}` : ''}.`,
      helperTimeout(ctx),
    ),
};
