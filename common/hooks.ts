/**
 * Hooks: a team's own rules in the agent loop, configured per named event in the shape users know
 * from settings files, and run durably — each hook run is an activity (timeout, retry, replay
 * policy) whose result, the hook's decision, is in the history.
 *
 *   {"PreToolUse": [{"matcher": "bash", "inputMatcher": "git push", "hooks": [
 *       {"type": "command", "command": "./check-push.sh", "timeout": 30}]}],
 *    "Stop": [{"hooks": [{"type": "command", "command": "npm test >&2 || exit 2"}]}]}
 *
 * Events: `PreToolUse` (before a tool call runs: allow, deny with a reason the model sees, ask a
 * person, or replace the input), `PostToolUse` (after it ran: text added to the result the model
 * sees), `UserPromptSubmit` and `SessionStart` (context added to the first message; the prompt may
 * be refused), `Stop` (the model wants to end: refuse with a reason and it continues, at most
 * `maxStopBlocks` times per operation), `PreCompact` (before a compaction: context kept across it).
 *
 * A hook is a command run in the sandbox as the agent (`type: "command"`), or a host hook the hands
 * worker defines by name (`type: "host"`, `AGENT_HOST_HOOKS`), run on the hands host without access
 * to the sandbox. The event arrives as JSON on stdin (`HookEventInput`); exit 0 goes on (stdout may
 * hold a JSON decision, `hookOutputSchema`), exit 2 blocks with stderr as the reason, any other exit,
 * a timeout or an interrupted run is an error whose outcome the hook declares (`onError`).
 *
 * Deterministic (imported by workflow code): zod, types and pure functions only.
 */
import { z } from 'zod';
import { describeZodError } from './validation';

export const HOOK_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'UserPromptSubmit',
  'SessionStart',
  'Stop',
  'PreCompact',
] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];

/** Events whose matcher is matched against a tool name (and whose groups may have an `inputMatcher`). */
export const TOOL_HOOK_EVENTS: readonly HookEventName[] = ['PreToolUse', 'PostToolUse'];

/** Default and largest time of one hook run, in seconds. */
export const HOOK_TIMEOUT_DEFAULT_S = 60;
export const HOOK_TIMEOUT_MAX_S = 600;
/** Longest matcher or input pattern (they run inside workflow code on every matching event). */
export const HOOK_PATTERN_MAX = 500;
/** Most bytes of a hook's stdout and of its stderr the hands keep (the rest is cut). */
export const HOOK_OUTPUT_MAX_BYTES = 64 * 1024;
/** Most characters of the text a hook adds to what the model sees (per hook run). */
export const HOOK_CONTEXT_MAX_CHARS = 10_000;
/** Default number of times Stop hooks may refuse the end of one operation. */
export const STOP_BLOCKS_DEFAULT = 3;

const HOST_HOOK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

// eslint-disable-next-line no-control-regex -- the point is to find NUL characters
const hasNul = (text: string): boolean => /\u0000/.test(text);

/** Why a regular expression is refused, or undefined. */
function patternProblem(source: string): string | undefined {
  if (source.length > HOOK_PATTERN_MAX) return `must be at most ${HOOK_PATTERN_MAX} characters`;
  try {
    new RegExp(source);
    return undefined;
  } catch (err) {
    return `invalid regular expression: ${(err as Error).message}`;
  }
}

const pattern = z.string().superRefine((source, ctx) => {
  // `*` (and nothing) is every name, as in the settings files users know.
  const problem = source === '*' ? undefined : patternProblem(source);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const onErrorSchema = z.enum(['allow', 'deny'], 'must be "allow" or "deny"').default('allow');
const timeoutSchema = z
  .number({ error: 'must be a number of seconds' })
  .positive('must be positive')
  .max(HOOK_TIMEOUT_MAX_S, `must be at most ${HOOK_TIMEOUT_MAX_S} seconds`);

/** A command run in the sandbox as the agent, in /workspace. */
export const commandHookSchema = z.strictObject({
  type: z.literal('command'),
  command: z
    .string()
    .trim()
    .min(1, 'must be a non-empty shell command')
    .max(10_000, 'must be at most 10000 characters')
    .refine((text) => !hasNul(text), 'must not contain NUL characters'),
  /** Seconds (default 60). */
  timeout: timeoutSchema.optional(),
  /** `safe` (default): a retried run may run it again; `never`: a hook with effects, never run twice. */
  replay: z.enum(['safe', 'never'], 'must be "safe" or "never"').default('safe'),
  /** What a failing, timed-out or interrupted run decides (default `allow`: go on). */
  onError: onErrorSchema,
});

/** A hook the hands worker defines by name (`AGENT_HOST_HOOKS`), run on the hands host. */
export const hostHookRefSchema = z.strictObject({
  type: z.literal('host'),
  name: z.string().regex(HOST_HOOK_NAME, "must be 1-64 letters, digits, '_', '.' or '-'"),
  onError: onErrorSchema,
});

export const hookSchema = z.discriminatedUnion('type', [commandHookSchema, hostHookRefSchema], {
  error: (issue) =>
    issue.code === 'invalid_union' ? 'must be "command" (in the sandbox) or "host" (a host hook)' : undefined,
});

const matcherGroupSchema = z.strictObject({
  /**
   * Tool events: a tool name or a regular expression matched against the whole tool name (`*` or
   * absent: every tool). `SessionStart`: the source (`startup`, `resume`); `PreCompact`: the trigger
   * (`manual`, `auto`); ignored for the other events.
   */
  matcher: pattern.optional(),
  /** Tool events only: a regular expression searched in the call's main argument (bash: the command; file tools: the path). */
  inputMatcher: pattern.optional(),
  hooks: z.array(hookSchema).min(1, 'must list at least one hook').max(20, 'must list at most 20 hooks'),
});

const groups = z.array(matcherGroupSchema).max(50, 'must have at most 50 matcher groups');

/** The `hooks` input of operations, sessions, coding tasks and schedules, and of `.agent/hooks.json`. */
export const hooksSchema = z
  .strictObject({
    PreToolUse: groups.optional(),
    PostToolUse: groups.optional(),
    UserPromptSubmit: groups.optional(),
    SessionStart: groups.optional(),
    Stop: groups.optional(),
    PreCompact: groups.optional(),
  })
  .superRefine((hooks, ctx) => {
    for (const event of HOOK_EVENTS) {
      if (TOOL_HOOK_EVENTS.includes(event)) continue;
      hooks[event]?.forEach((group, i) => {
        if (group.inputMatcher !== undefined)
          ctx.addIssue({ code: 'custom', path: [event, i, 'inputMatcher'], message: 'only tool events have one' });
      });
    }
  });

export type HooksInput = z.input<typeof hooksSchema>;
export type HookSettings = z.output<typeof hooksSchema>;
export type CommandHook = z.output<typeof commandHookSchema>;
export type HostHookRef = z.output<typeof hostHookRefSchema>;
export type Hook = z.output<typeof hookSchema>;

/** Parses a hooks object; a failure names every offending field (`PreToolUse.0.hooks.0.command: …`). */
export function parseHooks(raw: unknown): { ok: true; value: HookSettings } | { ok: false; error: string } {
  const result = hooksSchema.safeParse(raw);
  return result.success ? { ok: true, value: result.data } : { ok: false, error: describeZodError(result.error, raw) };
}

/** All hooks of both, `first`'s before `second`'s for each event; undefined when neither has any. */
export function mergeHooks<H extends HooksInput>(first: H | undefined, second: H | undefined): H | undefined {
  if (!first) return second;
  if (!second) return first;
  const merged: Record<string, unknown[]> = {};
  for (const event of HOOK_EVENTS) {
    const both = [...(first[event] ?? []), ...(second[event] ?? [])];
    if (both.length) merged[event] = both;
  }
  return merged as H;
}

/** The hooks for the tool events only (what a subagent inherits). */
export function toolHooksOf<H extends HooksInput>(hooks: H | undefined): H | undefined {
  if (!hooks) return undefined;
  const kept = Object.fromEntries(TOOL_HOOK_EVENTS.filter((event) => hooks[event]?.length).map((e) => [e, hooks[e]]));
  return Object.keys(kept).length ? (kept as H) : undefined;
}

/** True when `hooks` has at least one group for `event`. */
export function hasHooks(hooks: HookSettings | undefined, event: HookEventName): boolean {
  return (hooks?.[event]?.length ?? 0) > 0;
}

/** What a matcher is matched against. */
export interface HookSubject {
  /** Tool events: the tool name; SessionStart: the source; PreCompact: the trigger. */
  name?: string;
  /** Tool events: the call's main argument. */
  mainArgument?: string;
}

/** The hooks that apply to one event, in order (groups in order, hooks of a group in order). */
export function matchingHooks(hooks: HookSettings | undefined, event: HookEventName, subject: HookSubject): Hook[] {
  const matched: Hook[] = [];
  for (const group of hooks?.[event] ?? []) {
    if (!matcherMatches(group.matcher, event, subject.name)) continue;
    if (group.inputMatcher !== undefined && !new RegExp(group.inputMatcher).test(subject.mainArgument ?? '')) continue;
    matched.push(...group.hooks);
  }
  return matched;
}

/** Whether any group of `event` matches the tool `name` by its matcher alone (its input pattern aside). */
export function hooksNameTool(hooks: HookSettings | undefined, event: HookEventName, name: string): boolean {
  return (hooks?.[event] ?? []).some((group) => matcherMatches(group.matcher, event, name));
}

function matcherMatches(matcher: string | undefined, event: HookEventName, name: string | undefined): boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return true;
  if (event === 'Stop' || event === 'UserPromptSubmit') return true;
  return new RegExp(`^(?:${matcher})$`).test(name ?? '');
}

// ---- The event on stdin ----

interface EventBase {
  /** The session the operation runs in (its sandbox and workspace are named after it). */
  session_id: string;
  operation_id: string;
  lane: string;
  /** The agent's working directory in the sandbox. */
  cwd: string;
  hook_event_name: HookEventName;
}

export type HookEventInput =
  | (EventBase & {
      hook_event_name: 'PreToolUse';
      tool_name: string;
      tool_input: unknown;
      tool_use_id: string;
    })
  | (EventBase & {
      hook_event_name: 'PostToolUse';
      tool_name: string;
      tool_input: unknown;
      tool_use_id: string;
      /** The result the model will see (its text cut to `HOOK_EVENT_TEXT_MAX` characters). */
      tool_response: { content: string; is_error: boolean };
    })
  | (EventBase & { hook_event_name: 'UserPromptSubmit'; prompt: string })
  | (EventBase & { hook_event_name: 'SessionStart'; source: 'startup' | 'resume' })
  | (EventBase & {
      hook_event_name: 'Stop';
      /** True when a Stop hook already refused an end of this operation. */
      stop_hook_active: boolean;
      last_assistant_message: string;
    })
  | (EventBase & { hook_event_name: 'PreCompact'; trigger: 'manual' | 'auto'; custom_instructions: null });

/** Most characters of a text (a tool result, the last message) passed in an event. */
export const HOOK_EVENT_TEXT_MAX = 32_000;

/** `text` cut to `max` characters, saying how much was left out. */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[… ${text.length - max} more characters]`;
}

// ---- The decision on stdout ----

/**
 * A hook's JSON output on exit 0. Unknown fields are allowed (and ignored); known ones are checked,
 * so a misspelt decision is an error that names the field, not a silent "go on".
 */
export const hookOutputSchema = z.looseObject({
  /** Text for the people following the operation (the session log, the Web UI's details). */
  systemMessage: z.string().optional(),
  /** `block` (Stop, PostToolUse, UserPromptSubmit; PreToolUse: deny); `approve` (PreToolUse: allow). */
  decision: z.enum(['block', 'approve'], 'must be "block" or "approve"').optional(),
  reason: z.string().optional(),
  hookSpecificOutput: z
    .looseObject({
      hookEventName: z.enum(HOOK_EVENTS).optional(),
      /** PreToolUse: allow, deny (with the reason the model sees) or ask a person. */
      permissionDecision: z.enum(['allow', 'deny', 'ask'], 'must be "allow", "deny" or "ask"').optional(),
      permissionDecisionReason: z.string().optional(),
      /** PreToolUse: the input the call runs with instead of the model's (checked like the model's). */
      updatedInput: z.record(z.string(), z.unknown()).optional(),
      /** Text added to what the model sees (all events but Stop). */
      additionalContext: z.string().optional(),
    })
    .optional(),
});

/** What one hook run said, once its exit code and output are read. */
export type HookVerdict =
  | {
      kind: 'go';
      /** PreToolUse: the hook asks a person. */
      ask?: true;
      reason?: string;
      context?: string;
      updatedInput?: Record<string, unknown>;
      systemMessage?: string;
    }
  | { kind: 'block'; reason: string; systemMessage?: string }
  | { kind: 'error'; error: string };

/** A hook run's end as the hands saw it. */
export interface HookRunOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut?: boolean;
  /** A `never` hook that started and was cut off before its result was recorded: not run again. */
  interrupted?: string;
  timeoutS: number;
}

/** Events whose hooks may refuse (exit 2, `decision: "block"`). */
const CAN_BLOCK: readonly HookEventName[] = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'Stop'];
/** Events a failing hook with `onError: "deny"` refuses (a PreCompact hook cannot stop a compaction). */
const DENY_ON_ERROR: readonly HookEventName[] = [...CAN_BLOCK, 'SessionStart'];
/** Events whose plain (non-JSON) stdout on exit 0 is context for the model. */
const PLAIN_CONTEXT: readonly HookEventName[] = ['UserPromptSubmit', 'SessionStart'];

const firstLine = (text: string, max = 300): string => {
  const line = text.trim().replace(/\s+/g, ' ');
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
};

/** Reads a hook run: its exit code, its stdout (a JSON decision or plain text) and stderr. */
export function interpretHookRun(event: HookEventName, run: HookRunOutput): HookVerdict {
  if (run.interrupted) return { kind: 'error', error: run.interrupted };
  if (run.timedOut) return { kind: 'error', error: `timed out after ${run.timeoutS} s` };
  const stderr = run.stderr.trim();
  if (run.exitCode === 2) {
    if (!CAN_BLOCK.includes(event))
      return { kind: 'error', error: `exit 2 (a ${event} hook cannot block): ${firstLine(stderr) || 'no stderr'}` };
    return { kind: 'block', reason: stderr || 'a hook refused without giving a reason (exit 2, empty stderr)' };
  }
  if (run.exitCode !== 0) return { kind: 'error', error: `exit ${run.exitCode}: ${firstLine(stderr) || 'no stderr'}` };
  const stdout = run.stdout.trim();
  if (!stdout.startsWith('{')) {
    return PLAIN_CONTEXT.includes(event) && stdout ? { kind: 'go', context: stdout } : { kind: 'go' };
  }
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch (err) {
    return { kind: 'error', error: `its stdout starts with "{" but is not JSON: ${(err as Error).message}` };
  }
  const parsed = hookOutputSchema.safeParse(json);
  if (!parsed.success) return { kind: 'error', error: `its JSON output: ${describeZodError(parsed.error, json)}` };
  return verdictOf(event, parsed.data);
}

function verdictOf(event: HookEventName, output: z.output<typeof hookOutputSchema>): HookVerdict {
  const specific = output.hookSpecificOutput ?? {};
  const message = output.systemMessage !== undefined ? { systemMessage: output.systemMessage } : {};
  if (specific.hookEventName !== undefined && specific.hookEventName !== event) {
    return {
      kind: 'error',
      error: `its JSON output: hookSpecificOutput.hookEventName: is "${specific.hookEventName}" in a ${event} hook`,
    };
  }
  const permission = event === 'PreToolUse' ? specific.permissionDecision : undefined;
  const blocks = output.decision === 'block' || permission === 'deny';
  if (blocks) {
    if (!CAN_BLOCK.includes(event))
      return { kind: 'error', error: `its JSON output: decision: a ${event} hook cannot block` };
    const reason = specific.permissionDecisionReason ?? output.reason ?? 'no reason given';
    return { kind: 'block', reason, ...message };
  }
  const wrong = event === 'PreToolUse' ? undefined : ['permissionDecision', 'updatedInput'].find((f) => f in specific);
  if (wrong)
    return { kind: 'error', error: `its JSON output: hookSpecificOutput.${wrong}: only PreToolUse hooks decide that` };
  if (event === 'Stop' && specific.additionalContext !== undefined) {
    return {
      kind: 'error',
      error:
        'its JSON output: hookSpecificOutput.additionalContext: a Stop hook adds no context (use decision "block" with a reason)',
    };
  }
  const reason = specific.permissionDecisionReason ?? output.reason;
  return {
    kind: 'go',
    ...(permission === 'ask' ? { ask: true as const } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(specific.additionalContext?.trim() ? { context: specific.additionalContext.trim() } : {}),
    ...(specific.updatedInput ? { updatedInput: specific.updatedInput } : {}),
    ...message,
  };
}

/** A hook's decision as the operation applies it (and the session log shows it). */
export interface HookDecision {
  /** PreToolUse: allow, deny or ask; the other events: continue or block. */
  decision: 'allow' | 'deny' | 'ask' | 'continue' | 'block';
  reason?: string;
  /** Text added to what the model sees. */
  context?: string;
  /** PreToolUse: the input the call runs with instead. */
  updatedInput?: Record<string, unknown>;
  /** Why the run failed (its `onError` then decided). */
  error?: string;
  systemMessage?: string;
}

/** The decision a verdict makes for `event`; an error decides by the hook's `onError`. */
export function hookDecisionOf(event: HookEventName, verdict: HookVerdict, onError: 'allow' | 'deny'): HookDecision {
  const tool = event === 'PreToolUse';
  const refuse = tool ? ('deny' as const) : ('block' as const);
  const goOn = tool ? ('allow' as const) : ('continue' as const);
  const message =
    verdict.kind !== 'error' && verdict.systemMessage !== undefined ? { systemMessage: verdict.systemMessage } : {};
  switch (verdict.kind) {
    case 'error':
      return onError === 'deny' && DENY_ON_ERROR.includes(event)
        ? { decision: refuse, reason: `a ${event} hook failed: ${verdict.error}`, error: verdict.error }
        : { decision: goOn, error: verdict.error };
    case 'block':
      return { decision: refuse, reason: verdict.reason, ...message };
    case 'go':
      return {
        decision: verdict.ask ? 'ask' : goOn,
        ...(verdict.reason !== undefined ? { reason: verdict.reason } : {}),
        ...(verdict.context !== undefined ? { context: cutText(verdict.context, HOOK_CONTEXT_MAX_CHARS) } : {}),
        ...(verdict.updatedInput ? { updatedInput: verdict.updatedInput } : {}),
        ...message,
      };
  }
}

/** `hook PreToolUse: ./check-push.sh` or `hook Stop: host ticket` (activity summaries, the log). */
export function hookSummary(event: HookEventName, hook: Hook): string {
  const what = hook.type === 'host' ? `host ${hook.name}` : firstLine(hook.command, 80);
  return `hook ${event}: ${what}`;
}

/** The hook's replay policy as the workflow knows it (a host hook's is its definition's: the hands apply it). */
export const replayOfHook = (hook: Hook): 'safe' | 'never' => (hook.type === 'command' ? hook.replay : 'never');

// ---- Host hooks (the hands worker's `AGENT_HOST_HOOKS` file) ----

/** One host hook of the worker's file: run with bash on the hands host, in a directory of its own. */
export const hostHookDefinitionSchema = z.strictObject({
  command: z.string().trim().min(1, 'must be a non-empty shell command'),
  timeout: timeoutSchema.optional(),
  replay: z.enum(['safe', 'never'], 'must be "safe" or "never"').default('safe'),
  /** Variables the command gets besides PATH, HOME and LANG (the worker's own environment is not passed). */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name'), z.string()).optional(),
});
export const hostHooksFileSchema = z.record(
  z.string().regex(HOST_HOOK_NAME, "must be 1-64 letters, digits, '_', '.' or '-'"),
  hostHookDefinitionSchema,
);
export type HostHookDefinition = z.output<typeof hostHookDefinitionSchema>;
export type HostHooks = z.output<typeof hostHooksFileSchema>;

// ---- The activity ----

/** The activity's name (`hooks.decided` in the session log is read from its results). */
export const RUN_HOOK_ACTIVITY = 'runHook';

export interface RunHookInput {
  sessionId: string;
  operationId: string;
  /** The run's key: its activity id, and its journal's in the sandbox (`hook-…`). */
  hookRunId: string;
  event: HookEventName;
  hook: Hook;
  /** What the hook reads on stdin. */
  input: HookEventInput;
  /** Tool events: the call, for the log. */
  toolCallId?: string;
  toolName?: string;
}

export interface HookRunResult {
  verdict: HookVerdict;
  exitCode?: number;
  /** The first bytes of what it wrote, for the log. */
  stdout?: string;
  stderr?: string;
  /** The hands made the result up: a `never` hook whose earlier run was cut off was not run again. */
  synthetic?: true;
  /** Where it ran. */
  ranOn: 'sandbox' | 'host';
}

export interface HooksActivities {
  /** Runs one hook (in the sandbox, or a host hook on the hands host), following its replay policy on a retry. */
  runHook(input: RunHookInput): Promise<HookRunResult>;
}

export const HOOKS_FAILURE_TYPES = {
  /** A host hook the hands worker does not define. Not retryable. */
  unknownHostHook: 'UnknownHostHook',
  /** A repository's `.agent/hooks.json` is not valid hooks JSON. Not retryable. */
  invalidRepositoryHooks: 'InvalidRepositoryHooks',
} as const;

/** Where a repository keeps its hooks (read only where the hands worker allows it: `AGENT_REPOSITORY_HOOKS`). */
export const REPOSITORY_HOOKS_FILE = '.agent/hooks.json';

/** A hook run's key, made of letters, digits, '_', '.', '-' (a journal and activity id); `key` is hashed when it is not. */
export function hookRunIdOf(kind: string, key: string, index: number): string {
  const safe = /^[A-Za-z0-9_.-]{1,80}$/.test(key) ? key : `h${fnv1a(key)}`;
  return `hook-${kind}-${safe}-${index}`;
}

/** FNV-1a, 32 bits, as 8 hex digits (deterministic: no crypto in workflow code). */
export function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
