import type { BashInput } from '../../../common/tools';
import { shapeOutput } from '../output';
import { killedNote, type HandsTool } from './types';

/** The effective timeout: the call's own `timeout_ms`, capped by the activity's budget (`RunToolInput.timeoutMs`). */
function timeoutOf(input: BashInput, budgetMs: number): number {
  return Math.min(input.timeout_ms ?? budgetMs, budgetMs);
}

export const bashTool: HandsTool<BashInput> = {
  name: 'bash',
  prepare(input, ctx) {
    return { command: input.command, timeoutMs: timeoutOf(input, ctx.timeoutMs), journalCommand: input.command };
  },
  format(run, input, ctx) {
    const shaped = shapeOutput(run.output, run.outputPath, ctx.spill);
    const notes: string[] = [];
    const killed = killedNote(run, timeoutOf(input, ctx.timeoutMs));
    if (killed) notes.push(killed);
    if (run.exit.droppedBytes > 0) {
      notes.push(
        `[output capture stopped at ${run.exit.outputBytes} bytes; the remaining ${run.exit.droppedBytes} bytes were discarded]`,
      );
    }
    notes.push(`[exit code ${run.exit.exitCode}]`);
    const body = shaped.text.length ? shaped.text.replace(/\n$/, '') : '(no output)';
    return {
      content: `${body}\n${notes.join('\n')}`,
      isError: run.exit.exitCode !== 0 || run.exit.timedOut,
      exitCode: run.exit.exitCode,
      ...(shaped.spill ? { spill: shaped.spill } : {}),
    };
  },
};
