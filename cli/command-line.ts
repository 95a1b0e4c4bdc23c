/**
 * The machinery of the `agent` command table (`commands.ts`): a command is declared once — its
 * words, its flags (each with a zod schema of its value and a help line), its positional arguments,
 * how they make the typed command, its handler and its help line — and both the parse and the help
 * are derived from the declarations. Parsing is `node:util`'s `parseArgs` (strict) with the
 * declared flags, then each value through its schema. Pure: no I/O, no handler is loaded.
 *
 * Every usage mistake is a `UsageError` with a one-line message that names the flag or argument. A
 * top-level command's flag problems read `--max-turns must be …`; a subcommand's say which command
 * they belong to, `agent task start: --max-cost must be …` (`schedule create` has two sets of flags).
 */
import * as fs from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { parseDuration } from '../common/duration';
import { parseEgressFlag, type EgressPolicy } from '../common/egress';
import { environmentInputSchema, type EnvironmentInput } from '../common/environment';
import { hooksSchema, type HooksInput } from '../common/hooks';
import { describeZodError } from '../common/validation';
import { UsageError } from './usage-error';

/** A flag's value schema: from its text to its value; issues name the flag (`flag` is `--name`). */
export type FlagSchema<T> = (flag: string) => z.ZodType<T, string>;

/** A flag that takes a value (`--repo <path>`). */
export interface ValueFlag<T> {
  /** How the help shows its value: `<path>`, `N`, `30m`. */
  value: string;
  help: string;
  schema: FlagSchema<T>;
}

/** A flag without a value (`--json`). */
export interface SwitchFlag {
  value?: undefined;
  help: string;
}

export type Flag = ValueFlag<unknown> | SwitchFlag;
export type Flags = Record<string, Flag>;

/** The parsed flags: a value flag's value, `true` for a switch given; absent when not given. */
export type FlagValues<F extends Flags> = {
  [K in keyof F]?: F[K] extends ValueFlag<infer T> ? T : true;
};

/** What positional arguments a command takes (and the words of its messages when they are wrong). */
export type Positionals =
  | { kind: 'none'; message?: (got: readonly string[]) => string }
  /** Exactly one, not blank: `missing goal`, `expected one goal, got 2 arguments (quote it)`. */
  | { kind: 'one'; what: string; shown: string }
  /** At most one, among `choices` (`fallback` when none). */
  | { kind: 'optional'; what: string; choices: readonly string[]; fallback: string }
  /** Exactly these (`names` as the message says them); `nonBlank`: the last may not be blank. */
  | {
      kind: 'exactly';
      names: readonly string[];
      shown: string;
      hint?: string;
      nonBlank?: boolean;
      message?: string;
    };

export interface CommandInput<F extends Flags> {
  flags: FlagValues<F>;
  /** The positional arguments, their number checked. */
  args: readonly string[];
  /** What follows `--`, for a command that declares `rest`. */
  rest?: readonly string[];
}

/** One row of the command table. */
export interface CommandSpec<F extends Flags, C> {
  /** Its words: `['run']`, `['schedule', 'create']`. */
  path: readonly string[];
  /** Other names of its last word (`ls`: `list`). */
  aliases?: readonly string[];
  /** Its help line. */
  summary: string;
  /** More lines for `agent <command> --help`. */
  details?: readonly string[];
  flags: F;
  /** Flags it cannot do without, as the help's synopsis shows them (`--cron "<cron>"`). */
  required?: string;
  positionals: Positionals;
  /** `--` and what follows are the command's own (not positional arguments): how the help shows them. */
  rest?: { shown: string; help: string };
  /** How its messages call a flag (default `flag`). */
  flagWord?: 'flag' | 'option';
  /** The command the arguments describe; throws a UsageError for a problem between them. */
  build(input: CommandInput<F>): C;
  /** Runs it (its modules are imported here, not at parse time); resolves to the exit code. */
  run(command: C): Promise<number>;
}

/** A command once parsed: the typed command, and how to run it. */
export interface ParsedCommand<C> {
  command: C;
  run(): Promise<number>;
}

/** What the help and the dispatch need of a command's declaration. */
export type CommandInfo = Pick<
  CommandSpec<Flags, unknown>,
  'path' | 'aliases' | 'summary' | 'details' | 'flags' | 'required' | 'positionals' | 'rest' | 'flagWord'
>;

/** A row of the table: its declaration, and its parse (the command's own type kept inside). */
export interface TableEntry<C> {
  spec: CommandInfo;
  parse(argv: readonly string[]): ParsedCommand<C> | { help: true };
}

/** Declares a row of the table. */
export function command<F extends Flags, C>(spec: CommandSpec<F, C>): TableEntry<C> {
  return {
    spec,
    parse(argv) {
      const parsed = parseCommandArgs(spec, argv);
      if ('help' in parsed) return parsed;
      const built = inCommand(spec, () => spec.build(parsed));
      return { command: built, run: () => spec.run(built) };
    },
  };
}

/** `agent task start` (the messages' label). */
export function labelOf(spec: { path: readonly string[] }): string {
  return `agent ${spec.path.join(' ')}`;
}

/** Runs `fn`; a subcommand's UsageError names the subcommand. */
function inCommand<T>(spec: { path: readonly string[] }, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof UsageError && spec.path.length > 1 && !err.message.startsWith(`${labelOf(spec)}`))
      throw new UsageError(`${labelOf(spec)}: ${err.message}`);
    throw err;
  }
}

function parseCommandArgs<F extends Flags>(
  spec: CommandSpec<F, unknown>,
  argv: readonly string[],
): CommandInput<F> | { help: true } {
  const dashes = spec.rest ? argv.indexOf('--') : -1;
  const own = dashes >= 0 ? argv.slice(0, dashes) : argv;
  const result = inCommand(spec, () => parseFlags(spec.flags, own, { flagWord: spec.flagWord, withHelp: true }));
  if (result.help) return { help: true };
  const args = checkPositionals(spec, result.positionals);
  return { flags: result.flags, args, ...(dashes >= 0 ? { rest: argv.slice(dashes + 1) } : {}) };
}

/**
 * Parses `argv` against `flags` with `parseArgs` (strict), then every value through its schema.
 * Throws a UsageError naming the flag. With `withHelp`, `--help`/`-h` is accepted too.
 */
export function parseFlags<F extends Flags>(
  flags: F,
  argv: readonly string[],
  { flagWord = 'flag', withHelp = false }: { flagWord?: 'flag' | 'option'; withHelp?: boolean } = {},
): { flags: FlagValues<F>; positionals: string[]; help: boolean } {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, flag] of Object.entries(flags)) options[name] = { type: flag.value ? 'string' : 'boolean' };
  if (withHelp) options.help = { type: 'boolean', short: 'h' };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_'))
      throw new UsageError(explainParseFailure(argv, options, flagWord));
    throw err;
  }
  const values: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(flags)) {
    const raw = parsed.values[name];
    if (raw === undefined) continue;
    if (!flag.value) {
      values[name] = true;
      continue;
    }
    if (raw === '') throw new UsageError(`--${name} needs a value`);
    const checked = flag.schema(`--${name}`).safeParse(raw);
    if (!checked.success) throw new UsageError(checked.error.issues[0]!.message);
    values[name] = checked.data;
  }
  // Each value was checked by its flag's own schema above.
  return { flags: values as FlagValues<F>, positionals: parsed.positionals, help: parsed.values.help === true };
}

/** The first problem `parseArgs` refused, in words (its tokens, without strictness, locate it). */
function explainParseFailure(
  argv: readonly string[],
  options: Record<string, { type: 'string' | 'boolean'; short?: string }>,
  flagWord: string,
): string {
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const known = Object.keys(options).filter((name) => name !== 'help');
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const type = options[token.name]?.type;
    if (!type) {
      if (!token.rawName.startsWith('--'))
        return `unknown ${flagWord} ${token.rawName} (text that starts with "-" goes after --)`;
      const allowed = known.length ? `allowed: ${known.map((name) => `--${name}`).join(', ')}` : 'it takes none';
      return `unknown ${flagWord} ${token.rawName} (${allowed})`;
    }
    if (type === 'boolean' && token.value !== undefined) return `${token.rawName} takes no value`;
    if (type === 'string' && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-'))))
      return `${token.rawName} needs a value`;
  }
  return `cannot read the arguments ${argv.join(' ')}`;
}

function checkPositionals(spec: CommandInfo, got: readonly string[]): readonly string[] {
  const label = labelOf(spec);
  const p = spec.positionals;
  switch (p.kind) {
    case 'none':
      if (got.length) throw new UsageError(p.message ? p.message(got) : `${label} takes no arguments, got "${got[0]}"`);
      return [];
    case 'one':
      if (got.length === 0 || !got[0]!.trim()) throw new UsageError(`${label}: missing ${p.what}`);
      if (got.length > 1)
        throw new UsageError(`${label}: expected one ${p.what}, got ${got.length} arguments (quote it)`);
      return got;
    case 'optional': {
      if (got.length > 1) throw new UsageError(`${label}: expected at most one ${p.what}, got ${got.length} arguments`);
      const value = got[0] ?? p.fallback;
      if (!p.choices.includes(value))
        throw new UsageError(`${label}: ${p.what} must be ${listOf(p.choices)}, got "${value}"`);
      return [value];
    }
    case 'exactly':
      if (got.length !== p.names.length)
        throw new UsageError(p.message ?? `${label}: expected ${listOf(p.names, 'and')}${p.hint ? ` ${p.hint}` : ''}`);
      if (p.nonBlank && !got[got.length - 1]!.trim())
        throw new UsageError(`${label}: ${p.names[p.names.length - 1]} is empty`);
      return got;
  }
}

/** `a`, `a or b`, `a, b or c` (`and` with `joiner`). */
export function listOf(items: readonly string[], joiner = 'or'): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} ${joiner} ${items[items.length - 1]}`;
}

// Value schemas of flags.

function fromText<T>(parse: (text: string) => T): z.ZodType<T, string> {
  return z.string().transform((text, ctx): T => {
    try {
      return parse(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

/** Any text that is not blank. */
export const textValue: FlagSchema<string> = (flag) =>
  fromText((text) => {
    if (!text.trim()) throw new Error(`${flag} needs a value`);
    return text;
  });

/** A positive whole number, at most `max`. */
export const positiveInt =
  (max?: number): FlagSchema<number> =>
  (flag) =>
    fromText((text) => {
      const n = Number(text);
      if (!text.trim() || !Number.isInteger(n) || n <= 0)
        throw new Error(`${flag} must be a positive whole number, got "${text}"`);
      if (max !== undefined && n > max) throw new Error(`${flag} must be at most ${max}, got ${n}`);
      return n;
    });

/** A positive amount of dollars (`1.50`, `$1.50`). */
export const dollars: FlagSchema<number> = (flag) =>
  fromText((text) => {
    const n = Number(text.replace(/^\$/, ''));
    if (!text.trim() || !Number.isFinite(n) || n <= 0)
      throw new Error(`${flag} must be a positive amount of dollars, got "${text}"`);
    return n;
  });

/** A duration (`90s`, `30m`, `1h30m`, plain milliseconds), in milliseconds. */
export const duration: FlagSchema<number> = (flag) =>
  fromText((text) => {
    try {
      return parseDuration(text);
    } catch (err) {
      throw new Error(`${flag}: ${(err as Error).message}`);
    }
  });

/** A duration above zero. */
export const positiveDuration: FlagSchema<number> = (flag) =>
  fromText((text) => {
    let ms: number;
    try {
      ms = parseDuration(text);
    } catch {
      ms = 0;
    }
    if (ms <= 0) throw new Error(`${flag} must be a duration like 90s, 30m, 8h, got "${text}"`);
    return ms;
  });

/** `--egress none|registries|<host,…>|'<json>'`, checked like the input field it becomes. */
export const egressValue: FlagSchema<EgressPolicy> = () =>
  fromText((text) => {
    const parsed = parseEgressFlag(text);
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.value;
  });

/** `--environment default` or `--environment '<json>'`, validated like the input's `environment` field. */
export const environmentValue: FlagSchema<EnvironmentInput> = () =>
  fromText((text) => {
    let raw: unknown = text;
    if (text.trim().startsWith('{')) {
      try {
        raw = JSON.parse(text);
      } catch (err) {
        throw new Error(`not valid JSON (${(err as Error).message})`);
      }
    }
    const parsed = environmentInputSchema.safeParse(raw);
    if (!parsed.success) throw new Error(describeZodError(parsed.error, raw));
    return parsed.data;
  });

/** `--hooks '<json>'` or `--hooks <file.json>` (docs/hooks.md), validated like the input's `hooks` field. */
export const hooksValue: FlagSchema<HooksInput> = (flag) =>
  fromText((text) => {
    const inline = text.trim().startsWith('{');
    let raw: unknown;
    try {
      raw = JSON.parse(inline ? text : fs.readFileSync(text, 'utf8'));
    } catch (err) {
      throw new Error(
        `${flag}: ${inline ? 'not valid JSON' : `cannot read ${text} as JSON`} (${(err as Error).message})`,
      );
    }
    const parsed = hooksSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`${flag}: ${describeZodError(parsed.error, raw)}`);
    return raw as HooksInput;
  });

/** A comma-separated list of at least one item. */
export const commaList =
  (what: string): FlagSchema<string[]> =>
  (flag) =>
    fromText((text) => {
      const items = text
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
      if (items.length === 0) throw new Error(`${flag} needs at least one ${what}`);
      return items;
    });

/** Text that is a JSON object (kept as text), `example` in the message. */
export const jsonObjectText =
  (example: string): FlagSchema<string> =>
  (flag) =>
    fromText((text) => {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = undefined;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new Error(`${flag} must be a JSON object, e.g. '${example}'`);
      return text;
    });

// eslint-disable-next-line no-control-regex -- the point is to find control characters
const CONTROL_OR_SPACE = /[\u0000-\u0020\u007f]/;

/** A workflow id: at most 200 characters, no spaces or control characters. */
export const workflowIdValue: FlagSchema<string> = (flag) =>
  fromText((text) => {
    if (!text || CONTROL_OR_SPACE.test(text) || text.length > 200)
      throw new Error(
        `${flag} must be at most 200 characters without spaces or control characters, got ${JSON.stringify(text)}`,
      );
    return text;
  });

/** An `http://` or `https://` URL (a trailing `/` dropped). */
export const httpUrlValue: FlagSchema<string> = (flag) =>
  fromText((text) => {
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw new Error(`${flag} must be an http(s) URL, got ${JSON.stringify(text)}`);
    return text.replace(/\/$/, '');
  });
