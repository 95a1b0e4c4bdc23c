/**
 * The tool catalogue: what the model may call, how each call is validated, summarised and replayed.
 *
 * Deterministic and dependency-light (zod + type-only imports): the operation workflow imports it to
 * validate calls before recording any intent, to pick an activity policy, and to label activities in
 * the Web UI. The hands (`activities/hands/`) implement the tools and re-validate defensively.
 *
 * Replay policy (what a retried attempt of the same tool call may do):
 *  - `safe`       re-running cannot hurt (reads, listings, searches): run again.
 *  - `idempotent` re-running with the same input converges (write a whole file, apply an edit that
 *                 is recognised as already applied): run again.
 *  - `never`      arbitrary effects (bash): a call the workspace journal shows as started is never run a
 *                 second time; see `activities/hands/journal.ts`.
 * A tool that declares no policy gets `never`.
 *
 * Besides the sandbox tools (run by the hands), the model has one tool the workflow runs itself:
 * `task`, which forks a subagent lane (`workflows/operation/subagents.ts`). `toolDefinitions()` and
 * `validateModelToolCall()` cover both; `validateToolCall()` and `ToolName` cover the sandbox tools.
 */
import { z } from 'zod';
import type { Tool } from '@anthropic-ai/sdk/resources/messages';
import { DEFAULT_TOOL_TIMEOUT_MS } from './hands';
import { utf8Bytes } from './validation';

export type ReplayPolicy = 'safe' | 'idempotent' | 'never';

/** Longest run time a `bash` call may ask for (its default is the operation's limit, `toolTimeoutMs`). */
export const BASH_MAX_TIMEOUT_MS = 1_800_000;
/** Default and maximum number of lines `read_file` returns in one call. */
export const READ_DEFAULT_LIMIT = 2_000;
/** Longest run of one file or search tool call (they are quick helpers, not commands). */
export const HELPER_TIMEOUT_MS = 60_000;
/** Default result caps of the search tools. */
export const LIST_DEFAULT_MAX_RESULTS = 500;
export const GREP_DEFAULT_MAX_RESULTS = 200;
const MAX_RESULTS_CEILING = 5_000;

/** The project root in the sandbox: the file tools work inside it. */
export const WORKSPACE_ROOT = '/workspace';
/** Where the harness keeps its records in the sandbox; `read_file` may read them (e.g. partial output). */
export const JOURNAL_ROOT = '/var/lib/agent-journal';
/** Most bytes of a command line (one argument of a process may hold at most 128 KiB on Linux). */
export const COMMAND_MAX_BYTES = 100_000;
/** Most bytes of a file's content or an edit's text in one call (the call is recorded in history twice). */
export const TEXT_ARGUMENT_MAX_BYTES = 1024 * 1024;
/** Most characters of a path, a pattern or a glob. */
const SHORT_ARGUMENT_MAX_CHARS = 4096;

/**
 * The absolute path `p` names, `..` and `.` resolved, relative paths against /workspace; purely
 * lexical (symbolic links are checked in the sandbox). Deterministic: used by workflow code.
 */
export function resolveSandboxPath(p: string): string {
  const parts: string[] = [];
  for (const part of (p.startsWith('/') ? p : `${WORKSPACE_ROOT}/${p}`).split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

const within = (p: string, root: string): boolean => p === root || p.startsWith(`${root}/`);

/** No NUL: a command line or a path cannot carry one. */
const noNul = (field: string) =>
  [
    (text: string) => !text.includes('\u0000'),
    `contains a NUL byte (\\u0000), which no ${field} can carry: remove it`,
  ] as const;

const atMostBytes = (max: number, advice: string) =>
  [
    (text: string) => utf8Bytes(text) <= max,
    {
      error: (issue: { input?: unknown }) =>
        `is ${utf8Bytes(String(issue.input ?? ''))} bytes, more than the ${max} allowed: ${advice}`,
    },
  ] as const;

const sandboxPath = (what: string, roots: string[]) =>
  z
    .string()
    .min(1)
    .max(SHORT_ARGUMENT_MAX_CHARS)
    .refine(...noNul('path'))
    .refine((p) => roots.some((root) => within(resolveSandboxPath(p), root)), {
      error: (issue) =>
        `resolves to ${resolveSandboxPath(String(issue.input ?? ''))}, outside ${roots.join(' and ')}: the file tools work only inside ${roots.join(' and ')} (use bash to look elsewhere)`,
    })
    .describe(
      `${what}. Relative paths are resolved against /workspace (the project root); absolute paths must be inside it.`,
    );

const workspacePath = (what: string) => sandboxPath(what, [WORKSPACE_ROOT]);

const textArgument = (description: string) =>
  z
    .string()
    .refine(
      ...atMostBytes(
        TEXT_ARGUMENT_MAX_BYTES,
        "write a large file in parts (write_file the first part, then append the rest with bash, e.g. `cat >> file <<'EOF'`)",
      ),
    )
    .describe(description);

const bashInput = z.strictObject({
  command: z
    .string()
    .min(1)
    .refine(...noNul('command line'))
    .refine(...atMostBytes(COMMAND_MAX_BYTES, 'put a long script in a file with write_file and run that file'))
    .describe('The bash command line to run, e.g. `npm test -- --silent` or `git status --short`.'),
  timeout_ms: z
    .number()
    .int()
    .min(1_000)
    .max(BASH_MAX_TIMEOUT_MS)
    .optional()
    .describe(
      `Kill the command (and everything it started) after this many milliseconds. Default: the operation's limit for one call (${DEFAULT_TOOL_TIMEOUT_MS} unless it sets another), at most ${BASH_MAX_TIMEOUT_MS}.`,
    ),
});

const readFileInput = z.strictObject({
  path: sandboxPath('The file to read', [WORKSPACE_ROOT, JOURNAL_ROOT]),
  offset: z.number().int().min(1).optional().describe('The 1-based line number to start reading at. Default 1.'),
  limit: z.number().int().min(1).optional().describe(`How many lines to return. Default ${READ_DEFAULT_LIMIT}.`),
});

const writeFileInput = z.strictObject({
  path: workspacePath('The file to write; missing parent directories are created'),
  content: textArgument('The complete new content of the file (it replaces any existing content).'),
});

const editFileInput = z.strictObject({
  path: workspacePath('The file to edit'),
  old_text: textArgument(
    'The exact text to replace, including whitespace and indentation. It must occur exactly once in the file; include surrounding lines to make it unique.',
  ).refine((text) => text.length > 0, 'must not be empty'),
  new_text: textArgument('The text that replaces old_text.'),
});

const listFilesInput = z.strictObject({
  path: workspacePath('The directory to list (default: the whole workspace)').optional(),
  pattern: z
    .string()
    .min(1)
    .max(SHORT_ARGUMENT_MAX_CHARS)
    .refine(...noNul('glob'))
    .optional()
    .describe('A glob the paths must match, e.g. `**/*.ts` or `src/**/test_*.py`.'),
  max_results: z
    .number()
    .int()
    .min(1)
    .max(MAX_RESULTS_CEILING)
    .optional()
    .describe(`At most this many paths. Default ${LIST_DEFAULT_MAX_RESULTS}.`),
});

const grepInput = z.strictObject({
  pattern: z
    .string()
    .min(1)
    .max(SHORT_ARGUMENT_MAX_CHARS)
    .refine(...noNul('pattern'))
    .describe('A regular expression (Rust/ripgrep syntax), e.g. `fn\\s+main` or `TODO`.'),
  path: workspacePath('The file or directory to search (default: the whole workspace)').optional(),
  glob: z
    .string()
    .min(1)
    .max(SHORT_ARGUMENT_MAX_CHARS)
    .refine(...noNul('glob'))
    .optional()
    .describe('Only search files whose path matches this glob, e.g. `*.ts`.'),
  ignore_case: z.boolean().optional().describe('Match case-insensitively. Default false.'),
  max_results: z
    .number()
    .int()
    .min(1)
    .max(MAX_RESULTS_CEILING)
    .optional()
    .describe(`At most this many matching lines. Default ${GREP_DEFAULT_MAX_RESULTS}.`),
});

const taskInput = z.strictObject({
  description: z
    .string()
    .min(1)
    .max(200)
    .describe('A short (3-10 words) description of the task, shown to the user, e.g. "find the config loader".'),
  prompt: z
    .string()
    .min(1)
    .describe(
      'The complete task for the subagent: what to find or change, and what to report back. It does not see your conversation, only this prompt and a short handoff.',
    ),
});

interface ToolSpec<S extends z.ZodObject> {
  schema: S;
  replayPolicy?: ReplayPolicy;
  description: string;
  /** The argument shown next to the tool name in the Web UI. */
  subject(input: z.infer<S>): string;
  /** The argument approval patterns are matched against (`common/approvals.ts`); default: the subject. */
  mainArgument?(input: z.infer<S>): string;
}

function spec<S extends z.ZodObject>(s: ToolSpec<S>): ToolSpec<S> {
  return s;
}

const TOOLS = {
  bash: spec({
    schema: bashInput,
    replayPolicy: 'never',
    description: [
      'Run a bash command in the sandbox, in /workspace, as a non-root user. The network is reachable only as far as the egress policy allows (package registries, listed hosts, or nothing); a refused request says so in the result.',
      'Returns the combined stdout and stderr and the exit code; a non-zero exit is reported as an error.',
      'Long output is shortened to its first and last lines and saved in full to a file whose path is given, which you can page through with read_file.',
      'Each call starts a fresh shell: cd, exports and background jobs do not carry over. Do not start servers or watchers that never exit; they are killed at the timeout.',
      'Prefer read_file, list_files and grep for looking at files, and edit_file/write_file for changing them.',
    ].join(' '),
    subject: (input) => input.command,
  }),
  read_file: spec({
    schema: readFileInput,
    replayPolicy: 'safe',
    description: [
      'Read a text file. Lines are returned numbered (`  12\\tcontent`); the numbers are not part of the file.',
      `Returns at most ${READ_DEFAULT_LIMIT} lines by default; the result says when it was cut and which offset to continue from.`,
      'Use offset and limit to read a part of a large file, such as a saved command output.',
    ].join(' '),
    subject: (input) => (input.offset ? `${input.path}:${input.offset}` : input.path),
    mainArgument: (input) => input.path,
  }),
  write_file: spec({
    schema: writeFileInput,
    replayPolicy: 'idempotent',
    description:
      'Create a file or replace its whole content. Parent directories are created. To change part of an existing file, use edit_file instead.',
    subject: (input) => input.path,
  }),
  edit_file: spec({
    schema: editFileInput,
    replayPolicy: 'idempotent',
    description: [
      'Replace one exact piece of text in a file. old_text must match the file exactly (whitespace, indentation and line breaks included) and exactly once;',
      'if it matches zero or several times nothing is changed and the error says so. Read the file first and copy the text to replace from it (without the line numbers).',
      'For several changes, make several calls.',
    ].join(' '),
    subject: (input) => input.path,
  }),
  list_files: spec({
    schema: listFilesInput,
    replayPolicy: 'safe',
    description:
      'List files (recursively, sorted by path), skipping what .gitignore excludes and the .git directory. Optionally filter by a glob pattern.',
    subject: (input) => [input.path ?? '.', input.pattern].filter(Boolean).join(' '),
    mainArgument: (input) => input.path ?? '.',
  }),
  grep: spec({
    schema: grepInput,
    replayPolicy: 'safe',
    description:
      'Search file contents with ripgrep. Returns matching lines as `path:line:text`, skipping what .gitignore excludes. Optionally restrict to a path or a glob.',
    subject: (input) => [input.pattern, input.path, input.glob].filter(Boolean).join(' '),
    mainArgument: (input) => input.pattern,
  }),
};

/** Tools the workflow runs itself instead of the hands. */
const WORKFLOW_TOOLS = {
  task: spec({
    schema: taskInput,
    description: [
      'Delegate a self-contained task to a subagent: a fresh agent with the same tools, working in the same workspace, that sees only your prompt and a short handoff (not this conversation).',
      "Its final answer comes back as this tool's result. Use it for searches, investigations or side tasks whose details would fill your context;",
      'say exactly what to report back. Subagents run one at a time and share the workspace with you.',
    ].join(' '),
    subject: (input) => input.description,
    mainArgument: (input) => input.prompt,
  }),
};

export type ToolName = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];
export type ToolInput<N extends ToolName> = z.infer<(typeof TOOLS)[N]['schema']>;
export type BashInput = ToolInput<'bash'>;
export type ReadFileInput = ToolInput<'read_file'>;
export type WriteFileInput = ToolInput<'write_file'>;
export type EditFileInput = ToolInput<'edit_file'>;
export type ListFilesInput = ToolInput<'list_files'>;
export type GrepInput = ToolInput<'grep'>;

export type TaskInput = z.infer<typeof taskInput>;
/** Every tool the model may call: the sandbox tools and the workflow's own. */
export type ModelToolName = ToolName | keyof typeof WORKFLOW_TOOLS;
export const MODEL_TOOL_NAMES: ModelToolName[] = [...TOOL_NAMES, ...(Object.keys(WORKFLOW_TOOLS) as ModelToolName[])];
/** The subagent tool's name. */
export const TASK_TOOL = 'task';

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOLS, name);
}

function isModelToolName(name: string): name is ModelToolName {
  return isToolName(name) || Object.prototype.hasOwnProperty.call(WORKFLOW_TOOLS, name);
}

/** Any tool's catalogue entry (the specs are typed per tool; callers parse before using `subject`). */
function specOf(name: ModelToolName): ToolSpec<z.ZodObject> {
  return (isToolName(name)
    ? TOOLS[name]
    : WORKFLOW_TOOLS[name as keyof typeof WORKFLOW_TOOLS]) as unknown as ToolSpec<z.ZodObject>;
}

/** The replay policy of a tool; `never` for a tool that declares none, or an unknown one. */
export function replayPolicyOf(name: string): ReplayPolicy {
  return (isToolName(name) ? TOOLS[name].replayPolicy : undefined) ?? 'never';
}

// Keywords strict tool use does not accept; zod still enforces them when a call is validated.
const UNSUPPORTED_KEYWORDS = new Set([
  '$schema',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'multipleOf',
  'pattern',
  'format',
]);

function stripUnsupported(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripUnsupported);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (UNSUPPORTED_KEYWORDS.has(key)) continue;
    out[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(child as object).map(([k, v]) => [k, stripUnsupported(v)]))
        : stripUnsupported(child);
  }
  return out;
}

/** The tools as the Messages API takes them: strict JSON schemas that forbid extra fields. */
export function toolDefinitions(): Tool[] {
  return MODEL_TOOL_NAMES.map((name) => {
    const entry = specOf(name);
    const schema = stripUnsupported(z.toJSONSchema(entry.schema)) as Tool.InputSchema;
    return {
      name,
      description: entry.description,
      input_schema: { ...schema, type: 'object', additionalProperties: false },
      strict: true,
    };
  });
}

export type ToolCallCheck = { ok: true; input: ToolInput<ToolName> } | { ok: false; error: string };

/**
 * Validates a model's tool call against the catalogue. Extra fields are rejected, never stripped; the
 * error names every offending field and says what to do, so it can go back to the model as-is.
 */
export function validateToolCall(name: string, input: unknown): ToolCallCheck {
  if (!isToolName(name)) {
    return { ok: false, error: `Unknown tool "${name}". Available tools: ${TOOL_NAMES.join(', ')}.` };
  }
  return checkArguments(name, TOOLS[name].schema, input) as ToolCallCheck;
}

export type ModelToolCallCheck =
  | { ok: true; kind: 'sandbox'; name: ToolName; input: ToolInput<ToolName> }
  | { ok: true; kind: 'task'; name: typeof TASK_TOOL; input: TaskInput }
  | { ok: false; error: string };

/** Validates a call to any tool the model has (sandbox or workflow tool), like `validateToolCall`. */
export function validateModelToolCall(name: string, input: unknown): ModelToolCallCheck {
  if (!isModelToolName(name)) {
    return { ok: false, error: `Unknown tool "${name}". Available tools: ${MODEL_TOOL_NAMES.join(', ')}.` };
  }
  const checked = checkArguments(name, specOf(name).schema, input);
  if (!checked.ok) return checked;
  return isToolName(name)
    ? { ok: true, kind: 'sandbox', name, input: checked.input as ToolInput<ToolName> }
    : { ok: true, kind: 'task', name: TASK_TOOL, input: checked.input as TaskInput };
}

function checkArguments(
  name: string,
  schema: z.ZodObject,
  input: unknown,
): { ok: true; input: unknown } | { ok: false; error: string } {
  const parsed = schema.safeParse(input);
  if (parsed.success) return { ok: true, input: parsed.data };
  const allowed = Object.keys(schema.shape);
  const problems = parsed.error.issues.map((issue) => describeIssue(issue, allowed, input));
  return {
    ok: false,
    error: `Invalid arguments for ${name}: ${problems.join('; ')}. Nothing was run. Call ${name} again with only these fields: ${describeFields(schema)}.`,
  };
}

/** The argument approval patterns are matched against: bash's command, a file tool's path, grep's pattern, a task's prompt. */
export function toolMainArgument(name: string, input: unknown): string {
  if (!isModelToolName(name)) return '';
  const entry = specOf(name);
  const parsed = entry.schema.safeParse(input);
  if (!parsed.success) return '';
  return (entry.mainArgument ?? entry.subject)(parsed.data);
}

function describeIssue(issue: z.core.$ZodIssue, allowed: string[], input: unknown): string {
  const field = issue.path.map(String).join('.');
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys
        .map((key) => `unknown field "${key}" is not allowed (allowed: ${allowed.join(', ')})`)
        .join('; ');
    case 'invalid_type': {
      if (!field) return `the arguments must be a JSON object, got ${typeName(input)}`;
      const received = fieldValue(input, issue.path);
      if (received === undefined) return `required field "${field}" is missing`;
      const expected = issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`;
      return `field "${field}" must be ${expected}, got ${typeName(received)}`;
    }
    case 'too_small':
      return `field "${field}" is too small: ${issue.origin === 'string' ? `at least ${issue.minimum} character(s)` : `at least ${issue.minimum}`}`;
    case 'too_big':
      return `field "${field}" is too ${issue.origin === 'string' ? `long: at most ${issue.maximum} characters` : `large: at most ${issue.maximum}`}`;
    default:
      return `field "${field || '(input)'}": ${issue.message}`;
  }
}

function describeFields(schema: z.ZodObject): string {
  return Object.entries(schema.shape)
    .map(([key, value]) => ((value as z.ZodType).safeParse(undefined).success ? `${key}?` : key))
    .join(', ');
}

function fieldValue(input: unknown, path: PropertyKey[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isInteger(value)) return `a non-integer number (${value})`;
  return `a ${typeof value}`;
}

/** One line for the Web UI: `bash: npm test`, `edit_file: src/x.ts` (≤ 100 characters). */
export function toolSummary(name: string, input: unknown): string {
  let subject = '';
  if (isModelToolName(name)) {
    const entry = specOf(name);
    const parsed = entry.schema.safeParse(input);
    // The subject functions are typed per tool; the parse above guarantees the shape.
    if (parsed.success) subject = entry.subject(parsed.data);
  }
  const line = (subject ? `${name}: ${subject}` : name).replace(/\s+/g, ' ').trim();
  return line.length <= 100 ? line : `${line.slice(0, 99)}…`;
}

/**
 * How long one call may run, in milliseconds: `bash` takes its `timeout_ms` (else the operation's
 * default); the file and search tools are quick helpers, capped at `HELPER_TIMEOUT_MS`. The hands
 * enforce it; the tool activity's timeout is derived from it (`workflows/shared/policies.ts`).
 */
export function toolRunTimeoutMs(name: string, input: unknown, defaultMs: number): number {
  if (name === 'bash') {
    const parsed = bashInput.safeParse(input);
    return (parsed.success ? parsed.data.timeout_ms : undefined) ?? defaultMs;
  }
  return Math.min(HELPER_TIMEOUT_MS, defaultMs);
}

/**
 * Whether the hands run a call alike without its budget (`RunToolInput.timeoutMs`, read absent as
 * `DEFAULT_TOOL_TIMEOUT_MS`): the default itself, or a helper's cap, which every budget of at least
 * `HELPER_TIMEOUT_MS` comes to.
 */
export function budgetGoesWithoutSaying(name: string, timeoutMs: number): boolean {
  return timeoutMs === DEFAULT_TOOL_TIMEOUT_MS || (name !== 'bash' && timeoutMs === HELPER_TIMEOUT_MS);
}
