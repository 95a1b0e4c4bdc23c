/**
 * The forges a worker may talk to, from `AGENT_FORGES`: a JSON object (inline, or the path of a
 * file holding it) of forge name → where it is, which kind it is, and the *names* of its secrets in
 * the host's secret store. Inputs name a forge; the URL and the tokens stay here, on the host.
 *
 * ```json
 * { "local": { "kind": "gitea", "url": "http://127.0.0.1:3000", "token": "GITEA_TOKEN",
 *              "webhookSecret": "GITEA_WEBHOOK_SECRET", "label": "agent", "allowUsers": ["alice"],
 *              "commentsPerHour": 20, "logHosts": ["ci.example.com"],
 *              "tasks": { "verify": "npm test", "budget": { "maxCostUsd": 5 } } } }
 * ```
 */
import * as fs from 'node:fs';
import { z } from 'zod';
import { parsed, settingsPart, variable, type Environment } from '../../common/env-settings';
import { FORGE_KINDS, FORGE_NAME, type ForgeKind } from '../../common/forge';
import { forgeTaskDefaultsSchema, type ForgeTaskDefaults } from '../../common/pull-request';
import { describeZodError } from '../../common/validation';
import { SECRET_NAME } from '../secrets/store';

const secretName = z.string().regex(SECRET_NAME, 'must name a secret of the secret store (letters, digits, "_")');

const forgeEntrySchema = z.strictObject({
  kind: z.enum(FORGE_KINDS),
  /** The forge's web address (`http://127.0.0.1:3000`, `https://github.com`). */
  url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).transform((url) => url.replace(/\/+$/, '')),
  /** The REST API's base; default: `<url>/api/v1` (Gitea), `https://api.github.com` (github.com). */
  apiUrl: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  /** The secret holding the bot's API token (also used for git over https). */
  token: secretName,
  /** The secret webhook deliveries are signed with (none: webhooks are refused; polling only). */
  webhookSecret: secretName.optional(),
  /** The user name git sends with the token over https (default: the forge's convention). */
  gitUser: z.string().min(1).max(100).optional(),
  /** The label that starts a coding task on an issue. */
  label: z.string().min(1).max(100).default('agent'),
  /** Users who may start work whatever the forge says of their permission. */
  allowUsers: z.array(z.string().min(1).max(100)).max(1000).default([]),
  /** The most comments the harness writes on one issue or pull request in an hour. */
  commentsPerHour: z.int().min(1).max(1000).default(20),
  /** Hosts (`host` or `host:port`) whose check logs the harness may read, besides the forge's own. */
  logHosts: z.array(z.string().min(1).max(300)).max(100).default([]),
  /** What the coding tasks and review rounds started on this forge run with. */
  tasks: forgeTaskDefaultsSchema.default({}),
});

export interface ForgeSettings {
  name: string;
  kind: ForgeKind;
  url: string;
  apiUrl: string;
  tokenSecret: string;
  webhookSecret?: string;
  gitUser: string;
  label: string;
  allowUsers: readonly string[];
  commentsPerHour: number;
  logHosts: readonly string[];
  tasks: ForgeTaskDefaults;
}

export type Forges = ReadonlyMap<string, ForgeSettings>;

/** Parses `AGENT_FORGES` (JSON, or a file's path); throws an Error naming the bad field. */
export function parseForges(raw: string): Forges {
  const fromFile = !raw.trimStart().startsWith('{');
  let text = raw;
  if (fromFile) {
    try {
      text = fs.readFileSync(raw, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the file ${raw}: ${(err as Error).message}`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${fromFile ? `${raw}: ` : ''}is not JSON: ${(err as Error).message}`);
  }
  const schema = z.record(
    z.string().regex(FORGE_NAME, 'a forge name: lower-case letters, digits, "-"'),
    forgeEntrySchema,
  );
  const result = schema.safeParse(json);
  if (!result.success) throw new Error(`${fromFile ? `${raw}: ` : ''}${describeZodError(result.error, json)}`);
  const forges = new Map<string, ForgeSettings>();
  for (const [name, entry] of Object.entries(result.data)) {
    forges.set(name, {
      name,
      kind: entry.kind,
      url: entry.url,
      apiUrl: entry.apiUrl ?? defaultApiUrl(entry.kind, entry.url),
      tokenSecret: entry.token,
      ...(entry.webhookSecret ? { webhookSecret: entry.webhookSecret } : {}),
      gitUser: entry.gitUser ?? (entry.kind === 'github' ? 'x-access-token' : 'agent'),
      label: entry.label,
      allowUsers: entry.allowUsers,
      commentsPerHour: entry.commentsPerHour,
      logHosts: entry.logHosts,
      tasks: entry.tasks,
    });
  }
  return forges;
}

function defaultApiUrl(kind: ForgeKind, url: string): string {
  if (kind === 'gitea') return `${url}/api/v1`;
  return new URL(url).hostname === 'github.com' ? 'https://api.github.com' : `${url}/api/v3`;
}

export const FORGES_PART = settingsPart({
  title: 'Forges',
  intro:
    'The forges (Gitea, GitHub) pull requests are opened on and webhooks come from (`activities/forge/`, [Pull requests](pull-requests.md)). Tokens are named here and held by the secret store.',
  variables: {
    forges: variable(
      'AGENT_FORGES',
      {
        description:
          'forge name → `{kind, url, token, webhookSecret?, label?, allowUsers?, commentsPerHour?, logHosts?, tasks?}` (`token` and `webhookSecret` name secrets of the secret store)',
        default: 'none: no forge',
        values: 'a JSON object, or the path of a file holding one',
      },
      parsed<Forges>(parseForges, () => new Map()),
    ),
  },
  build: ({ forges }): Forges => forges,
});

export function readForges(env: Environment): Forges {
  const reading = FORGES_PART.read(env);
  if (!reading.ok) throw new Error(reading.problems.join('; '));
  return reading.value;
}
