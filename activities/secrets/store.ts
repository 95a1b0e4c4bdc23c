/**
 * The host-side secret store: names mapped to tokens, readable only by the workers that hold it.
 * Tokens never enter the sandbox, a workflow input or the history — inputs name a secret, and the
 * host-side code that needs it (the egress proxy adding a header, an MCP client) reads it here.
 *
 * Sources, later ones winning for the same name:
 *  - `AGENT_SECRETS_FILE`: a JSON object `{ "<name>": "<token>", … }` in a file that only its owner
 *    may read (mode without group/other bits; a readable file is refused with its path named);
 *  - environment variables `AGENT_SECRET_<NAME>=<token>` (the name is what follows the prefix).
 * A name is 1–64 characters of letters, digits and `_`, starting with a letter.
 *
 * `mask` replaces every known token (and its base64 and URL-encoded forms) in a text by
 * `[secret <name>]`, so a tool output or error that echoes one is recorded without it.
 */
import * as fs from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import { text, variable, type Environment, type SettingsPart } from '../../common/env-settings';

export const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const ENV_PREFIX = 'AGENT_SECRET_';
/** Shorter values are not masked: they would match ordinary text and say little about a secret. */
const MIN_MASKED_LENGTH = 6;

export interface SecretStore {
  /** The token stored under `name`, if any. */
  get(name: string): string | undefined;
  /** The token stored under `name`; a `SecretNotFound` failure (non-retryable) naming it otherwise. */
  require(name: string, usedBy: string): string;
  /** The names held (never the tokens). */
  names(): string[];
  /** `text` with every known token replaced by `[secret <name>]`. */
  mask(text: string): string;
}

/** Reads the store from the environment (and the file it names). Throws an Error naming the bad part. */
export function loadSecretStore(env: Environment): SecretStore {
  const entries = new Map<string, string>();
  const file = env.AGENT_SECRETS_FILE;
  if (file) for (const [name, value] of readSecretsFile(file)) entries.set(name, value);
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith(ENV_PREFIX) || value === undefined || value === '') continue;
    const name = key.slice(ENV_PREFIX.length);
    if (!SECRET_NAME.test(name)) throw new Error(`${key}: a secret's name must match ${SECRET_NAME.source}`);
    entries.set(name, value);
  }
  return secretStore(entries);
}

/** The secret store's variables: read (file and all) when a worker starts. */
export const SECRETS_PART: SettingsPart<SecretStore> = {
  title: 'Secret store',
  intro:
    'Tokens the host-side code uses (MCP servers, egress credentials); inputs name a secret, never hold it, and every output is masked of every token (`activities/secrets/store.ts`).',
  variables: [
    variable(
      'AGENT_SECRETS_FILE',
      {
        description: 'a JSON object of name → token, in a file only its owner may read (a readable one is refused)',
        default: 'none',
        values: 'a path to a file of mode 600',
      },
      text(undefined),
    ),
  ],
  documented: [
    {
      name: `${ENV_PREFIX}<NAME>`,
      description: 'one token, named by what follows the prefix; wins over the file for the same name',
      default: 'none',
      values: 'a name of 1–64 letters, digits or `_`, starting with a letter',
    },
  ],
  read(env) {
    try {
      return { ok: true, value: loadSecretStore(env) };
    } catch (err) {
      return { ok: false, problems: [(err as Error).message] };
    }
  },
};

/** A store over the given entries (tests and callers that already hold them). */
export function secretStore(entries: ReadonlyMap<string, string>): SecretStore {
  const forms = maskForms(entries);
  return {
    get: (name) => entries.get(name),
    require(name, usedBy) {
      const value = entries.get(name);
      if (value !== undefined) return value;
      throw ApplicationFailure.create({
        type: 'SecretNotFound',
        nonRetryable: true,
        message:
          `${usedBy} needs the secret ${JSON.stringify(name)}, which the host's secret store does not hold ` +
          `(set AGENT_SECRET_${name} or add it to the file AGENT_SECRETS_FILE names; held: ${[...entries.keys()].join(', ') || 'none'})`,
      });
    },
    names: () => [...entries.keys()].sort(),
    mask(text) {
      let out = text;
      for (const [form, name] of forms) if (out.includes(form)) out = out.split(form).join(`[secret ${name}]`);
      return out;
    },
  };
}

function readSecretsFile(file: string): Array<[string, string]> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (err) {
    throw new Error(`AGENT_SECRETS_FILE ${file}: ${(err as Error).message}`);
  }
  if ((stat.mode & 0o077) !== 0) {
    throw new Error(
      `AGENT_SECRETS_FILE ${file}: readable by others (mode ${(stat.mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`AGENT_SECRETS_FILE ${file}: not JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`AGENT_SECRETS_FILE ${file}: must hold a JSON object of name → token`);
  }
  return Object.entries(parsed).map(([name, value]) => {
    if (!SECRET_NAME.test(name))
      throw new Error(`AGENT_SECRETS_FILE ${file}: ${JSON.stringify(name)} is not a valid secret name`);
    if (typeof value !== 'string' || value === '')
      throw new Error(`AGENT_SECRETS_FILE ${file}: ${name} must be a non-empty string`);
    return [name, value];
  });
}

/** Every form of every token worth masking, longest first (a longer form may contain a shorter one). */
function maskForms(entries: ReadonlyMap<string, string>): Array<[string, string]> {
  const forms: Array<[string, string]> = [];
  for (const [name, value] of entries) {
    if (value.length < MIN_MASKED_LENGTH) continue;
    const variants = new Set([
      value,
      Buffer.from(value).toString('base64'),
      Buffer.from(value).toString('base64').replace(/=+$/, ''),
      encodeURIComponent(value),
    ]);
    for (const form of variants) forms.push([form, name]);
  }
  return forms.sort((a, b) => b[0].length - a[0].length);
}
