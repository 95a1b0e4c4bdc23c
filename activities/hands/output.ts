/**
 * Shrinking tool output when it is created (never later): past a threshold the result keeps the head
 * and the tail, and says where the full text is, how big it is, and which lines and bytes are shown,
 * so `read_file` with offset/limit can read any part of it.
 *
 * Spilled result, between the head and the tail:
 *   [output truncated: 1234567 bytes, 20000 lines in total. Shown: lines 1-100 (bytes 0-6011) and
 *   lines 19901-20000 (bytes 1228432-1234566). Full output: /workspace/.agent/out/<toolCallId>.txt;
 *   read the rest with read_file (path as given, offset=101, limit=...) or search it with grep.]
 */
import type { Spill } from '../../common/hands';

export interface SpillOptions {
  /** Spill when the output is larger than this many bytes… */
  thresholdBytes: number;
  /** …or has more lines than this. */
  thresholdLines: number;
  headLines: number;
  tailLines: number;
  headBytes: number;
  tailBytes: number;
}

export const DEFAULT_SPILL_THRESHOLD_BYTES = 16 * 1024;
export const DEFAULT_SPILL_THRESHOLD_LINES = 400;

/** Head and tail each get a quarter of the line threshold and ~40% of the byte threshold. */
export function spillOptions(
  thresholdBytes = DEFAULT_SPILL_THRESHOLD_BYTES,
  thresholdLines = DEFAULT_SPILL_THRESHOLD_LINES,
): SpillOptions {
  const lines = Math.max(1, Math.floor(thresholdLines / 4));
  const bytes = Math.max(256, Math.floor(thresholdBytes * 0.4));
  return { thresholdBytes, thresholdLines, headLines: lines, tailLines: lines, headBytes: bytes, tailBytes: bytes };
}

export interface ShapedOutput {
  text: string;
  spill?: Spill;
}

/** Lines as read_file counts them: a last line without a newline still counts. */
export function countLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i >= 0; i = buf.indexOf(0x0a, i + 1)) n++;
  return buf.length > 0 && buf[buf.length - 1] !== 0x0a ? n + 1 : n;
}

/**
 * True when the output is not text: it holds a NUL byte, or more than a tenth of its characters (and
 * at least eight) are invalid UTF-8 or control characters (tabs, line breaks and escape sequences
 * count as text). A stray Latin-1 byte in text is shown as U+FFFD, not taken for binary.
 */
export function looksBinary(output: Buffer): boolean {
  const sample = output.subarray(0, 64 * 1024);
  if (sample.includes(0)) return true;
  let odd = 0;
  let chars = 0;
  for (const ch of sample.toString('utf8')) {
    const code = ch.codePointAt(0)!;
    chars++;
    if (code === 0xfffd || (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0x1b)) odd++;
  }
  return odd >= 8 && odd * 10 > chars;
}

/**
 * Returns the output as text, or its head and tail with a note when it passes the threshold; output
 * that is not text is described, not shown (it is kept whole at `fullPath`). Invalid UTF-8 in text
 * shows as U+FFFD.
 */
export function shapeOutput(output: Buffer, fullPath: string, options: SpillOptions): ShapedOutput {
  const lines = countLines(output);
  if (looksBinary(output)) {
    return {
      text:
        `[binary output: ${output.length} bytes that are not text, not shown. It is kept whole in ${fullPath}: ` +
        `inspect it with \`file ${fullPath}\` or \`xxd ${fullPath} | head\`, or send binary output to a file instead.]\n`,
      spill: { path: fullPath, bytes: output.length, lines },
    };
  }
  if (output.length <= options.thresholdBytes && lines <= options.thresholdLines)
    return { text: output.toString('utf8') };

  // Head: whole lines while within budget; a first line longer than the budget is cut.
  let headEnd = 0;
  let headLines = 0;
  while (headLines < options.headLines) {
    const nl = output.indexOf(0x0a, headEnd);
    const end = nl < 0 ? output.length : nl + 1;
    if (end > options.headBytes) {
      if (headLines === 0) headEnd = utf8Boundary(output, options.headBytes);
      break;
    }
    headEnd = end;
    headLines++;
    if (nl < 0) break;
  }
  const headLastLine = headLines === 0 ? 1 : headLines;
  const headPartial = headLines === 0;

  // Tail: whole lines from the end, not overlapping the head.
  let tailStart = output.length;
  let tailLines = 0;
  const body = output[output.length - 1] === 0x0a ? output.length - 1 : output.length;
  let cursor = body;
  while (tailLines < options.tailLines) {
    const nl = cursor > 0 ? output.lastIndexOf(0x0a, cursor - 1) : -1;
    const start = nl + 1;
    if (start < headEnd || output.length - start > options.tailBytes) {
      if (tailLines === 0) tailStart = Math.max(headEnd, utf8Boundary(output, output.length - options.tailBytes));
      break;
    }
    tailStart = start;
    tailLines++;
    cursor = nl;
    if (nl < 0) break;
  }
  const tailFirstLine = tailLines === 0 ? lines : lines - tailLines + 1;
  const tailPartial = tailLines === 0;

  const head = output.subarray(0, headEnd).toString('utf8');
  const tail = output.subarray(tailStart).toString('utf8');
  const headDesc = `${headPartial ? 'the start of line 1' : `lines 1-${headLastLine}`} (bytes 0-${Math.max(0, headEnd - 1)})`;
  const tailDesc = `${tailPartial ? `the end of line ${lines}` : `lines ${tailFirstLine}-${lines}`} (bytes ${tailStart}-${output.length - 1})`;
  const nextOffset = headPartial ? 1 : headLastLine + 1;
  const note =
    `[output truncated: ${output.length} bytes, ${lines} lines in total. Shown: ${headDesc} and ${tailDesc}. ` +
    `Full output: ${fullPath}; read the rest with read_file (path "${fullPath}", offset=${nextOffset}, limit=...) or search it with grep.]`;
  const text = `${head}${head.endsWith('\n') || !head ? '' : '\n'}\n${note}\n\n${tail}`;
  return { text, spill: { path: fullPath, bytes: output.length, lines } };
}

/** Cuts the first `count` lines out of a listing and says where the rest is. */
export function firstLines(
  output: Buffer,
  count: number,
  fullPath: string,
  noun: string,
): ShapedOutput & { total: number } {
  const text = output.toString('utf8');
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  if (all.length <= count) return { text: all.join('\n'), total: all.length };
  return {
    text:
      `${all.slice(0, count).join('\n')}\n\n[showing the first ${count} of ${all.length} ${noun}. The full list is in ${fullPath}; ` +
      `read more with read_file (path "${fullPath}", offset=${count + 1}), or narrow the search.]`,
    total: all.length,
    spill: { path: fullPath, bytes: output.length, lines: all.length },
  };
}

/** Moves `at` back to the start of a UTF-8 character. */
function utf8Boundary(buf: Buffer, at: number): number {
  let i = Math.max(0, Math.min(at, buf.length));
  while (i > 0 && i < buf.length && (buf[i] & 0xc0) === 0x80) i--;
  return i;
}
