/**
 * A repository's `.devcontainer/devcontainer.json` (or `.devcontainer.json`), read as the harness
 * supports it (containers.dev's format, JSON with comments):
 *  - `image`, or `build.dockerfile` / `build.context` / `build.args` (paths relative to the file's
 *    folder; the legacy top-level `dockerFile` / `context` too);
 *  - `onCreateCommand`, `updateContentCommand`, `postCreateCommand` (a string, an array or an object
 *    of named commands): run in that order, as the agent, in every fresh workspace;
 *  - `containerEnv`, `remoteEnv`: the environment of every command (`${containerWorkspaceFolder}`
 *    and `${containerEnv:NAME}` are substituted; `${localEnv:…}` is refused: the host's environment
 *    never enters a sandbox);
 *  - `name` (a label only).
 * Every other key is reported by name as not supported — never silently ignored.
 */
import * as path from 'node:path';
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { z } from 'zod';
import { describeZodError } from '../../common/validation';
import { EnvironmentError } from './errors';
import type { RepoFiles } from './repo-files';

export const DEVCONTAINER_FILES = ['.devcontainer/devcontainer.json', '.devcontainer.json'];

const SUPPORTED_KEYS = new Set([
  'name',
  'image',
  'build',
  'dockerFile',
  'context',
  'onCreateCommand',
  'updateContentCommand',
  'postCreateCommand',
  'containerEnv',
  'remoteEnv',
]);
const SUPPORTED_BUILD_KEYS = new Set(['dockerfile', 'context', 'args']);
const LIFECYCLE_KEYS = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand'] as const;

const commandSchema = z.union(
  [z.string(), z.array(z.string()).min(1), z.record(z.string(), z.union([z.string(), z.array(z.string()).min(1)]))],
  { error: 'must be a command: a string, an array of strings, or an object of named commands' },
);

const devcontainerSchema = z.looseObject({
  name: z.string().optional(),
  image: z.string().min(1, 'must be a non-empty image name').optional(),
  build: z
    .looseObject({
      dockerfile: z.string().min(1).optional(),
      context: z.string().min(1).optional(),
      args: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  dockerFile: z.string().min(1).optional(),
  context: z.string().min(1).optional(),
  onCreateCommand: commandSchema.optional(),
  updateContentCommand: commandSchema.optional(),
  postCreateCommand: commandSchema.optional(),
  containerEnv: z.record(z.string(), z.string()).optional(),
  remoteEnv: z.record(z.string(), z.string().nullable()).optional(),
});

/** What the harness takes from a devcontainer.json. */
export interface DevcontainerEnvironment {
  /** The file it came from, relative to the repository. */
  file: string;
  image?: string;
  /** Repository-relative Dockerfile and context. */
  dockerfile?: string;
  context?: string;
  buildArgs: Record<string, string>;
  /** Values may still hold `${containerEnv:NAME}` (resolved against the image when it is built). */
  env: Record<string, string>;
  /** The lifecycle commands in the order they run. */
  update: string[];
  unsupported: string[];
}

/** The repository's devcontainer.json, or undefined when it has none. Throws `EnvironmentError` when it is malformed. */
export function readDevcontainer(files: RepoFiles): DevcontainerEnvironment | undefined {
  const file = DEVCONTAINER_FILES.find((name) => files.exists(name));
  if (!file) return undefined;
  const text = files.read(file);
  if (text === undefined)
    throw new EnvironmentError('invalid', `${file}: cannot be read (not a regular file, or over 1 MB)`);
  return parseDevcontainer(text, file);
}

export function parseDevcontainer(text: string, file: string): DevcontainerEnvironment {
  const errors: ParseError[] = [];
  const raw: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length) {
    const first = errors[0]!;
    const { line, column } = lineAndColumn(text, first.offset);
    throw new EnvironmentError(
      'invalid',
      `${file}: not valid JSON with comments: ${printParseErrorCode(first.error)} at line ${line}, column ${column}`,
    );
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new EnvironmentError('invalid', `${file}: must be a JSON object`);
  const parsed = devcontainerSchema.safeParse(raw);
  if (!parsed.success) throw new EnvironmentError('invalid', `${file}: ${describeZodError(parsed.error, raw)}`);
  const config = parsed.data;

  const unsupported = Object.keys(raw).filter((key) => !SUPPORTED_KEYS.has(key));
  for (const key of Object.keys(config.build ?? {}))
    if (!SUPPORTED_BUILD_KEYS.has(key)) unsupported.push(`build.${key}`);

  const folder = path.posix.dirname(file);
  const dockerfile = config.build?.dockerfile ?? config.dockerFile;
  const context = config.build?.context ?? config.context;
  if (config.image && dockerfile)
    throw new EnvironmentError('invalid', `${file}: give one of "image" and "build.dockerfile", not both`);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.containerEnv ?? {}))
    env[checkName(file, 'containerEnv', name)] = substitute(file, `containerEnv.${name}`, value);
  for (const [name, value] of Object.entries(config.remoteEnv ?? {}))
    if (value !== null) env[checkName(file, 'remoteEnv', name)] = substitute(file, `remoteEnv.${name}`, value);

  return {
    file,
    ...(config.image ? { image: config.image } : {}),
    ...(dockerfile
      ? {
          dockerfile: inRepository(file, 'build.dockerfile', folder, dockerfile),
          context: inRepository(file, 'build.context', folder, context ?? '.'),
        }
      : {}),
    buildArgs: config.build?.args ?? {},
    env,
    update: LIFECYCLE_KEYS.flatMap((key) => commandsOf(config[key])),
    unsupported,
  };
}

function commandsOf(command: z.output<typeof commandSchema> | undefined): string[] {
  if (command === undefined) return [];
  if (typeof command === 'string') return command.trim() ? [command] : [];
  if (Array.isArray(command)) return [command.map(shellQuote).join(' ')];
  // Named commands run in parallel in editors; here one after another, in the file's order.
  return Object.values(command).flatMap((one) => commandsOf(one));
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function checkName(file: string, field: string, name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name))
    throw new EnvironmentError('invalid', `${file}: ${field}.${name}: is not a variable name`);
  return name;
}

/** `${containerWorkspaceFolder}` is /workspace; `${containerEnv:X}` stays for the build; anything from the host is refused. */
function substitute(file: string, field: string, value: string): string {
  return value.replace(/\$\{([^}]*)\}/g, (whole, expression: string) => {
    if (expression === 'containerWorkspaceFolder') return '/workspace';
    if (expression === 'containerWorkspaceFolderBasename') return 'workspace';
    if (/^containerEnv:[A-Za-z_][A-Za-z0-9_]*$/.test(expression)) return whole;
    throw new EnvironmentError(
      'invalid',
      `${file}: ${field}: \${${expression}} is not supported (the host's environment and paths never enter a sandbox)`,
    );
  });
}

function inRepository(file: string, field: string, folder: string, relative: string): string {
  const joined = path.posix.normalize(path.posix.join(folder, relative));
  if (relative.startsWith('/') || joined === '..' || joined.startsWith('../'))
    throw new EnvironmentError('invalid', `${file}: ${field}: ${JSON.stringify(relative)} is outside the repository`);
  return joined === '.' ? '' : joined;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}
