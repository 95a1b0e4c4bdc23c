/**
 * Loop detection after each tool batch (limits: `common/stuck.ts`): the agent repeats the same tool
 * call with the same result, alternates between two calls, or gets only errors turn after turn.
 * The first time a pattern shows, the model gets a note at the tail of its next message; if the
 * pattern goes on after the note, the operation ends `failed` with reason `stuck: <pattern>`.
 * Pure: the operation carries the window and applies the verdict.
 *
 * The window is carried across continue-as-new: the last two calls (hashes of each call and its
 * result) and how long the current repeat and alternation have run, so its size does not grow with
 * the limits (an operation may set them to a million).
 */
import type { TailBlock } from '../../common/context-fingerprint';
import type { ToolResultBlockParam, ToolUseBlock } from '../../common/model-types';
import type { StuckLimits } from '../../common/stuck';
import { toolSummary } from '../../common/tools';

/** One tool call as the detector remembers it: hashes of the call and of its result. */
interface SeenCall {
  call: string;
  result: string;
  /** A short label for messages (`bash: ls`). */
  label: string;
}

export interface LoopWindow {
  /** The last two calls, oldest first (carries of older runs: the last `max(limits)` calls). */
  calls: readonly SeenCall[];
  /** How long the repeat and the alternation ending at the last call have run (absent in older carries: counted from `calls`). */
  runs?: LoopRuns;
  /** Consecutive turns whose every tool result was an error. */
  errorTurns: number;
  /** The pattern the model was already told about. */
  noted?: LoopPattern;
}

export type LoopPattern = 'repeat' | 'alternate' | 'errors';

/**
 * The runs ending at the last call: `repeat` calls in a row the same as it (call and result), and
 * `alternate` calls in a row that alternate between two different ones (1 when the last two are the
 * same or there is only one call).
 */
export interface LoopRuns {
  repeat: number;
  alternate: number;
}

/** What the detector makes of a tool batch. */
export interface LoopVerdict {
  /** The window after the batch (the one to carry on). */
  window: LoopWindow;
  /** A pattern showed for the first time: the note the model gets at the tail of its next message. */
  note?: string;
  /** The pattern went on after the note: what the operation is stuck in. */
  stuck?: string;
}

/** Looks at the batch just run (its calls and the tail of results) against the window of recent calls. */
export function checkForLoop(
  previous: LoopWindow | undefined,
  calls: readonly ToolUseBlock[],
  tail: readonly TailBlock[],
  limits: StuckLimits,
): LoopVerdict {
  const results = new Map(
    tail.filter((b): b is ToolResultBlockParam => b.type === 'tool_result').map((b) => [b.tool_use_id, b] as const),
  );
  let allErrors = calls.length > 0;
  let seen = (previous?.calls ?? []).slice(-2);
  let runs = previous ? runsOf(previous) : { repeat: 0, alternate: 0 };
  for (const call of calls) {
    const result = results.get(call.id);
    if (!result?.is_error) allErrors = false;
    const next: SeenCall = {
      call: hash(`${call.name}\u0000${stableJson(call.input)}`),
      result: hash(`${result?.is_error ? 'E' : 'O'}\u0000${stableJson(result?.content ?? '')}`),
      label: label(call),
    };
    runs = extendRuns(runs, seen, next);
    seen = [...seen, next].slice(-2);
  }
  const window: LoopWindow = {
    calls: seen,
    runs,
    errorTurns: allErrors ? (previous?.errorTurns ?? 0) + 1 : 0,
  };
  const found = detect(window, limits);
  if (!found) return { window };
  if (previous?.noted === found.pattern)
    return { window: { ...window, noted: found.pattern }, stuck: found.description };
  return { window: { ...window, noted: found.pattern }, note: loopNote(found.description) };
}

export function detect(
  window: LoopWindow,
  limits: StuckLimits,
): { pattern: LoopPattern; description: string } | undefined {
  const { calls } = window;
  const runs = runsOf(window);
  const last = calls[calls.length - 1];
  const before = calls[calls.length - 2];
  if (last && runs.repeat >= limits.sameCallRepeats) {
    return {
      pattern: 'repeat',
      description: `repeated the same call with the same result ${limits.sameCallRepeats} times (${last.label})`,
    };
  }
  if (last && before && runs.alternate >= limits.alternations) {
    // The first two of the last `alternations` calls, in their order.
    const [first, second] = limits.alternations % 2 === 0 ? [before, last] : [last, before];
    return {
      pattern: 'alternate',
      description: `alternated between two calls ${limits.alternations} times (${first.label} / ${second.label})`,
    };
  }
  if (window.errorTurns >= limits.errorTurns) {
    return { pattern: 'errors', description: `only errors for ${window.errorTurns} turns` };
  }
  return undefined;
}

function same(a: SeenCall, b: SeenCall): boolean {
  return a.call === b.call && a.result === b.result;
}

/** The window's runs: carried, or (older carries) counted from its calls. */
function runsOf(window: LoopWindow): LoopRuns {
  if (window.runs) return window.runs;
  let runs: LoopRuns = { repeat: 0, alternate: 0 };
  let seen: SeenCall[] = [];
  for (const call of window.calls) {
    runs = extendRuns(runs, seen, call);
    seen = [...seen, call].slice(-2);
  }
  return runs;
}

/** The runs after `next`, given those ending at the last of `seen` (its last two calls, oldest first). */
function extendRuns(runs: LoopRuns, seen: readonly SeenCall[], next: SeenCall): LoopRuns {
  const last = seen[seen.length - 1];
  const before = seen[seen.length - 2];
  if (!last) return { repeat: 1, alternate: 1 };
  if (same(next, last)) return { repeat: runs.repeat + 1, alternate: 1 };
  // `before` differs from `last` whenever the alternation has run two calls or more.
  if (before && runs.alternate >= 2 && same(next, before)) return { repeat: 1, alternate: runs.alternate + 1 };
  return { repeat: 1, alternate: 2 };
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
