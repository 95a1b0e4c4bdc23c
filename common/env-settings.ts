/**
 * Settings from the environment, declared as schemas.
 *
 * A variable is declared once: its name, what it means, its default and its valid values (the
 * configuration page, `docs/configuration.md`, is generated from these declarations by
 * `npm run docs:config`), and a zod schema from its text to its value. Variables are grouped into
 * parts (the model, the sandboxes, the Temporal connection…); a runtime (the brain worker, a hands
 * worker, the `agent` command, the platform scripts) reads all the parts it needs when it starts
 * and refuses to start with one error that names every wrong variable.
 *
 * Pure: the environment is always passed in. Only the runtimes' settings modules read
 * `process.env` (`eslint.config.js` enforces it).
 */
import { z } from 'zod';

/** An environment: variable names to their text (`process.env`, or a test's own). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** What the configuration page says about a variable (Markdown). */
export interface VariableDoc {
  /** What it means. */
  description: string;
  /** What applies when it is unset or blank. */
  default: string;
  /** What it may be set to; omitted: any text. */
  values?: string;
}

/**
 * The schema of one variable: from its text — trimmed; `undefined` when unset or blank — to its
 * value, the default included. An issue's message says what is wrong without the variable's name
 * (the part adds it).
 */
export type VariableSchema<T> = z.ZodType<T, string | undefined>;

export interface Variable<T> extends VariableDoc {
  name: string;
  schema: VariableSchema<T>;
}

/** Declares a variable. */
export function variable<T>(name: string, doc: VariableDoc, schema: VariableSchema<T>): Variable<T> {
  return { name, ...doc, schema };
}

/**
 * A variable's schema from a parse function: `parse` turns the (trimmed, non-blank) text into the
 * value or throws an Error whose message says what is wrong; unset or blank is `fallback()`.
 */
export function parsed<T>(parse: (text: string) => T, fallback: () => T): VariableSchema<T> {
  return z
    .string()
    .optional()
    .transform((text, ctx): T => {
      if (text === undefined) return fallback();
      try {
        return parse(text);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });
}

/** Any text; `fallback` when unset. */
export function text<T extends string | undefined>(fallback: T): VariableSchema<string | T> {
  return parsed<string | T>(
    (value) => value,
    () => fallback,
  );
}

/** `on` or `off` (as `true` / `false`). */
export function onOff(fallback: boolean, options: { caseInsensitive?: boolean } = {}): VariableSchema<boolean> {
  return parsed(
    (value) => {
      const word = options.caseInsensitive ? value.toLowerCase() : value;
      if (word !== 'on' && word !== 'off') throw new Error(`${JSON.stringify(value)} is not "on" or "off"`);
      return word === 'on';
    },
    () => fallback,
  );
}

/** A whole number from `min` to `max`. */
export function wholeNumber(fallback: number, range: { min: number; max: number }): VariableSchema<number> {
  return parsed(
    (value) => {
      const n = Number(value);
      if (!/^-?\d+$/.test(value) || n < range.min || n > range.max)
        throw new Error(`${JSON.stringify(value)} is not a whole number from ${range.min} to ${range.max}`);
      return n;
    },
    () => fallback,
  );
}

/** A TCP port (1–65535). */
export function port(fallback: number): VariableSchema<number> {
  return parsed(
    (value) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 65535)
        throw new Error(`${JSON.stringify(value)} is not a port number (1-65535)`);
      return n;
    },
    () => fallback,
  );
}

/** An `http://` or `https://` URL (a trailing `/` dropped). */
export function httpUrl<T extends string | undefined>(fallback: () => T): VariableSchema<string | T> {
  return parsed<string | T>((value) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`${JSON.stringify(value)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`${JSON.stringify(value)} is not an http(s) URL`);
    return value.replace(/\/$/, '');
  }, fallback);
}

/** A group of variables a runtime reads, with what it makes of them. */
export interface SettingsPart<T> {
  /** The heading of its section on the configuration page. */
  title: string;
  /** What the section is about (Markdown), before its table. */
  intro?: string;
  /** The variables it reads, in the page's order. */
  variables: ReadonlyArray<Variable<unknown>>;
  /** Variables read by pattern or by a library on the part's behalf: documented, parsed elsewhere. */
  documented?: ReadonlyArray<{ name: string } & VariableDoc>;
  /** Its value, or every problem (each naming its variable). */
  read(env: Environment): Reading<T>;
}

export type Reading<T> = { ok: true; value: T } | { ok: false; problems: string[] };

type ValuesOf<V extends Record<string, Variable<unknown>>> = {
  [K in keyof V]: V[K] extends Variable<infer T> ? T : never;
};

/** The trimmed text of a variable; undefined when unset or blank. */
function textOf(env: Environment, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * A part over named variables: each is parsed with its schema (all of them, so every problem is
 * reported), then `build` makes the part's value; `build` may throw an Error naming a variable for
 * a problem between variables. `problem` words one problem (default `NAME: message`).
 */
export function settingsPart<V extends Record<string, Variable<unknown>>, T = ValuesOf<V>>(spec: {
  title: string;
  intro?: string;
  variables: V;
  documented?: SettingsPart<T>['documented'];
  build?: (values: ValuesOf<V>, env: Environment) => T;
  problem?: (name: string, message: string) => string;
}): SettingsPart<T> {
  const problem = spec.problem ?? ((name: string, message: string) => `${name}: ${message}`);
  return {
    title: spec.title,
    ...(spec.intro ? { intro: spec.intro } : {}),
    variables: Object.values(spec.variables),
    ...(spec.documented ? { documented: spec.documented } : {}),
    read(env) {
      const values: Record<string, unknown> = {};
      const problems: string[] = [];
      for (const [key, declared] of Object.entries(spec.variables)) {
        const result = declared.schema.safeParse(textOf(env, declared.name));
        if (result.success) values[key] = result.data;
        else for (const issue of result.error.issues) problems.push(problem(declared.name, issue.message));
      }
      if (problems.length) return { ok: false, problems };
      // Every key was parsed with its own schema above.
      const typed = values as ValuesOf<V>;
      if (!spec.build) return { ok: true, value: typed as unknown as T };
      try {
        return { ok: true, value: spec.build(typed, env) };
      } catch (err) {
        return { ok: false, problems: [(err as Error).message] };
      }
    },
  };
}

/** A part's value, or an Error `<what> settings: <problem>; <problem>`. */
export function readPart<T>(what: string, part: SettingsPart<T>, env: Environment): T {
  const reading = part.read(env);
  if (!reading.ok) throw new SettingsError(what, reading.problems);
  return reading.value;
}

type PartValues<P extends Record<string, SettingsPart<unknown>>> = {
  [K in keyof P]: P[K] extends SettingsPart<infer T> ? T : never;
};

/**
 * Reads several parts at once (a runtime at start): every part is read, and any problem in any of
 * them makes one SettingsError naming them all.
 */
export function readParts<P extends Record<string, SettingsPart<unknown>>>(
  what: string,
  parts: P,
  env: Environment,
): PartValues<P> {
  const reading = readingOfParts(parts, env);
  if (!reading.ok) throw new SettingsError(what, reading.problems);
  return reading.value;
}

/** Reads several parts at once: their values, or the problems of all of them. */
export function readingOfParts<P extends Record<string, SettingsPart<unknown>>>(
  parts: P,
  env: Environment,
): Reading<PartValues<P>> {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, part] of Object.entries(parts)) {
    const reading = part.read(env);
    if (reading.ok) values[key] = reading.value;
    else problems.push(...reading.problems);
  }
  // Every key was read from its own part above.
  return problems.length ? { ok: false, problems } : { ok: true, value: values as PartValues<P> };
}

/** Settings that are wrong: the message names every wrong variable. */
export class SettingsError extends Error {
  override name = 'SettingsError';
  constructor(
    what: string,
    readonly problems: readonly string[],
  ) {
    super(`${what} settings: ${problems.join('; ')}`);
  }
}

/** A runtime as the configuration page describes it: which process, and the parts it reads. */
export interface RuntimeSettings {
  /** Heading: `Brain worker`. */
  title: string;
  /** Which process it is and how it starts (Markdown). */
  intro: string;
  parts: ReadonlyArray<SettingsPart<unknown>>;
}
