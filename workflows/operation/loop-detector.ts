/**
 * Loop detection after each tool batch (limits: `common/stuck.ts`): the agent repeats the same tool
 * call with the same result, alternates between two calls, or gets only errors turn after turn.
 * The first time a pattern shows, the model gets a note at the tail of its next message; if the
 * pattern goes on after the note, the operation ends `failed` with reason `stuck: <pattern>`.
 *
 * The window (hashes of the recent calls and results) is carried across continue-as-new.
 */
import type { TailBlock } from '../../common/model-step';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import type { StuckLimits } from '../../common/stuck';
import { toolSummary } from '../../common/tools';
import { OperationEnd, type OperationRun } from './state';

/** One tool call as the detector remembers it: hashes of the call and of its result. */
interface SeenCall {
  call: string;
  result: string;
  /** A short label for messages (`bash: ls`). */
  label: string;
}

export interface LoopWindow {
  calls: SeenCall[];
  /** Consecutive turns whose every tool result was an error. */
  errorTurns: number;
  /** The pattern the model was already told about. */
  noted?: LoopPattern;
}

export type LoopPattern = 'repeat' | 'alternate' | 'errors';

/**
 * Looks at the batch just run (its calls and the tail of results); adds a note to the tail the first
 * time a pattern shows, and returns the end of the operation when it goes on after the note.
 */
export function checkForLoop(op: OperationRun, calls: ToolUseBlock[], tail: TailBlock[]): OperationEnd | undefined {
  const limits = op.settings.stuck;
  const window = (op.carry.loop ??= { calls: [], errorTurns: 0 });
  const results = new Map(
    tail.filter((b): b is ToolResultBlockParam => b.type === 'tool_result').map((b) => [b.tool_use_id, b] as const),
  );
  let allErrors = calls.length > 0;
  for (const call of calls) {
    const result = results.get(call.id);
    if (!result?.is_error) allErrors = false;
    window.calls.push({
      call: hash(`${call.name}\u0000${stableJson(call.input)}`),
      result: hash(`${result?.is_error ? 'E' : 'O'}\u0000${stableJson(result?.content ?? '')}`),
      label: label(call),
    });
  }
  window.calls = window.calls.slice(-Math.max(limits.sameCallRepeats, limits.alternations));
  window.errorTurns = allErrors ? window.errorTurns + 1 : 0;

  const found = detect(window, limits);
  if (!found) {
    window.noted = undefined;
    return undefined;
  }
  if (window.noted === found.pattern) return new OperationEnd('failed', `stuck: ${found.description}`);
  window.noted = found.pattern;
  tail.push({ type: 'text', text: loopNote(found.description) });
  return undefined;
}

export function detect(
  window: LoopWindow,
  limits: StuckLimits,
): { pattern: LoopPattern; description: string } | undefined {
  const { calls } = window;
  const same = (a: SeenCall, b: SeenCall): boolean => a.call === b.call && a.result === b.result;
  const lastN = calls.slice(-limits.sameCallRepeats);
  if (lastN.length === limits.sameCallRepeats && lastN.every((c) => same(c, lastN[0]))) {
    return {
      pattern: 'repeat',
      description: `repeated the same call with the same result ${limits.sameCallRepeats} times (${lastN[0].label})`,
    };
  }
  const lastM = calls.slice(-limits.alternations);
  if (
    lastM.length === limits.alternations &&
    !same(lastM[0], lastM[1]) &&
    lastM.every((c, i) => i < 2 || same(c, lastM[i - 2]))
  ) {
    return {
      pattern: 'alternate',
      description: `alternated between two calls ${limits.alternations} times (${lastM[0].label} / ${lastM[1].label})`,
    };
  }
  if (window.errorTurns >= limits.errorTurns) {
    return { pattern: 'errors', description: `only errors for ${window.errorTurns} turns` };
  }
  return undefined;
}

function loopNote(description: string): string {
  return (
    `[harness] You seem to be stuck: you ${description}. Doing the same again will not give a different ` +
    'result. Stop and rethink: read the error, check your assumptions, and try a different approach. ' +
    'If you keep going the same way, the operation ends as stuck.'
  );
}

function label(call: ToolUseBlock): string {
  try {
    return toolSummary(call.name as Parameters<typeof toolSummary>[0], call.input as never).slice(0, 80);
  } catch {
    return call.name;
  }
}

/** JSON with sorted keys, so equal inputs hash equally whatever their key order. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** FNV-1a, 32 bits, as 8 hex digits: enough to tell calls apart in a window of a few. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
