/**
 * MCP tools: the contract between the operation workflow and the brain worker's MCP client.
 *
 * An operation (or coding task) names MCP servers in its input (`mcpServers`): stdio servers
 * (`command`, `args`, `env`) or HTTP servers (`url`, `headers`, Streamable HTTP). They run on the
 * brain worker's host, never in the sandbox. Tokens are never in the input: an `env` value or a
 * header names a secret of the host-side store (`{"secret": "GH"}`), which the brain worker
 * resolves when it connects (`activities/secrets/store.ts`).
 *
 * The servers' tools are listed once per operation (the `mcpListTools` activity; the catalogue is
 * kept in the workflow's state, so a replay or a continued run does not list again) and offered to
 * the model as `mcp__<server>__<tool>` — a name none of the harness's own tools can have — with the
 * server's input schema. Each call is validated against that schema in the workflow (a mismatch is
 * refused by name, like the harness's own tools, and records no intent), then runs as the activity
 * `mcp-<tool_use_id>` (`mcpCallTool`).
 *
 * Replay policy: `safe` when the server marks the tool read-only (`annotations.readOnlyHint`),
 * otherwise `never` — a retried attempt of a `never` call that may have reached the server is not
 * sent again; its result says so (`[interrupted: …]`).
 *
 * Deterministic (imported by workflow code): zod, @cfworker/json-schema (no code generation) and
 * type-only imports.
 */
import { Validator, type OutputUnit, type Schema, type SchemaDraft } from '@cfworker/json-schema';
import { z } from 'zod';

/** Most MCP servers one operation may name. */
export const MCP_MAX_SERVERS = 10;
/** Most MCP tools offered to the model in one operation (across its servers). */
export const MCP_MAX_TOOLS = 100;
/** Default time one MCP tool call may take before it fails with `McpToolTimeout`. */
export const MCP_CALL_TIMEOUT_DEFAULT_MS = 60_000;
/** Default and longest time a server has to start and answer `initialize` (`McpServerTimeout` otherwise). */
export const MCP_STARTUP_TIMEOUT_DEFAULT_MS = 30_000;
export const MCP_STARTUP_TIMEOUT_MAX_MS = 600_000;
/** Most characters of an MCP tool result kept (head and tail; the rest is cut with a note). */
export const MCP_RESULT_MAX_CHARS = 100_000;
/** The prefix of every MCP tool's name as the model sees it. */
export const MCP_TOOL_PREFIX = 'mcp__';
/** Names of MCP servers: short, so `mcp__<server>__<tool>` stays within the API's 128 characters. */
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/;
const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

const noControl = (text: string) => !/[\u0000-\u001f\u007f]/.test(text); // eslint-disable-line no-control-regex -- finding them is the point

const plainValue = z
  .string()
  .max(4096, 'must be at most 4096 characters')
  .refine(noControl, 'must not contain control characters');
const secretName = z.string().regex(SECRET_NAME, 'must name a secret of the host store: 1-64 letters, digits or _');

/** An environment variable's value: a plain string, or a secret of the host store by name. */
const envValue = z.union([plainValue, z.strictObject({ secret: secretName })], {
  error: 'must be a string or {"secret": "<name>"} (a secret of the host store; never the token itself)',
});
/** A header's value: a plain string, or a secret by name sent as `<scheme> <token>` (or the token alone). */
const headerValue = z.union(
  [
    plainValue,
    z.strictObject({
      secret: secretName,
      scheme: z
        .string()
        .regex(/^[A-Za-z][A-Za-z0-9-]{0,31}$/, 'must be a word such as Bearer')
        .optional(),
    }),
  ],
  { error: 'must be a string or {"secret": "<name>", "scheme"?: "Bearer"} (never the token itself)' },
);

export const mcpServerSchema = z
  .strictObject({
    /**
     * The server of this name in the brain worker's MCP config (`AGENT_MCP_CONFIG`): its command or
     * URL, environment, headers and timeouts are the worker's; the input only names it.
     */
    configured: z
      .literal(true, "must be true (the server of this name in the brain worker's AGENT_MCP_CONFIG)")
      .optional(),
    /** A stdio server: the program the brain worker starts (it must be allowed by `AGENT_MCP_COMMANDS`). */
    command: z
      .string()
      .min(1, 'must be a non-empty program name or path')
      .max(4096)
      .refine(noControl, 'must not contain control characters')
      .refine((c) => !c.startsWith('-'), 'must not start with "-"')
      .optional(),
    args: z.array(plainValue).max(64, 'at most 64 arguments').optional(),
    env: z
      .record(z.string().regex(ENV_NAME, 'must be an environment variable name'), envValue)
      .refine((env) => Object.keys(env).length <= 64, 'at most 64 variables')
      .optional(),
    /** An HTTP server (Streamable HTTP): its endpoint. */
    url: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .max(2048)
      .refine((u) => !/^[a-z]+:\/\/[^/]*@/i.test(u), 'must not carry credentials (name a secret in headers instead)')
      .optional(),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), headerValue)
      .refine((headers) => Object.keys(headers).length <= 32, 'at most 32 headers')
      .optional(),
    /** How long one tool call may take (default 60 s). */
    timeoutMs: z.int().min(100).max(3_600_000).default(MCP_CALL_TIMEOUT_DEFAULT_MS),
    /** How long the server has to start and answer `initialize` (default 30 s). */
    startupTimeoutMs: z.int().min(100).max(MCP_STARTUP_TIMEOUT_MAX_MS).default(MCP_STARTUP_TIMEOUT_DEFAULT_MS),
  })
  .superRefine((server, ctx) => {
    const kinds = [server.command, server.url, server.configured].filter((kind) => kind !== undefined).length;
    if (kinds !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message:
          'must have exactly one of "command" (a stdio server), "url" (an HTTP server) or "configured": true (the worker\'s server of this name)',
      });
    }
    if (server.configured) {
      for (const field of ['args', 'env', 'headers'] as const) {
        if (server[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: "is set by the brain worker's MCP config for a configured server",
          });
      }
    }
    if (server.url !== undefined) {
      for (const field of ['args', 'env'] as const) {
        if (server[field] !== undefined)
          ctx.addIssue({ code: 'custom', path: [field], message: 'is for stdio servers ("command"), not "url"' });
      }
    }
    if (server.command !== undefined && server.headers !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'is for HTTP servers ("url"), not "command"' });
    }
  });

/** `mcpServers` of an operation or coding task: server name → server. */
export const mcpServersSchema = z
  .record(
    z.string().regex(MCP_SERVER_NAME, 'must be 1-32 letters, digits or "-", starting with a letter or digit'),
    mcpServerSchema,
  )
  .refine((servers) => Object.keys(servers).length <= MCP_MAX_SERVERS, `at most ${MCP_MAX_SERVERS} servers`);

export type McpServerInput = z.input<typeof mcpServerSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type McpServers = z.output<typeof mcpServersSchema>;

/** One tool of the catalogue: as the model sees it, and where it lives. */
export interface McpToolEntry {
  /** `mcp__<server>__<tool>`, made API-safe and unique. */
  name: string;
  server: string;
  /** The tool's name on its server. */
  tool: string;
  description: string;
  /** The server's JSON schema of the arguments (an object schema). */
  inputSchema: Record<string, unknown>;
  replayPolicy: 'safe' | 'never';
}

/** What `mcpListTools` found: every server's tools, in the servers' order. */
export interface McpCatalogue {
  tools: McpToolEntry[];
  /** Each server's tool count and, when the worker's config set them (`configured`), its timeouts. */
  servers: Array<{ server: string; tools: number; timeoutMs?: number; startupTimeoutMs?: number }>;
}

export interface McpListToolsInput {
  operationId: string;
  servers: McpServers;
}

export interface McpCallInput {
  operationId: string;
  toolCallId: string;
  server: string;
  config: McpServerConfig;
  /** The tool's name on its server. */
  tool: string;
  arguments: Record<string, unknown>;
  replayPolicy: 'safe' | 'never';
}

export interface McpCallOutcome {
  /** The result's content as text (masked of known secrets, long results cut with a note). */
  content: string;
  /** The server said the tool failed (`isError`), or the call was interrupted. */
  isError: boolean;
  /** One line recorded with the result: `ok · 2 text blocks · 134 chars`, `interrupted`, … */
  summary: string;
}

/** The brain worker's MCP activities (`activities/mcp/`). */
export interface McpActivities {
  /** Starts (connects to) each server, lists its tools and closes it again. */
  mcpListTools(input: McpListToolsInput): Promise<McpCatalogue>;
  /** One tool call: connect, `tools/call`, close. Failures are classified (`MCP_FAILURE_TYPES`). */
  mcpCallTool(input: McpCallInput): Promise<McpCallOutcome>;
}

export const MCP_LIST_TOOLS_ACTIVITY = 'mcpListTools';
export const MCP_CALL_TOOL_ACTIVITY = 'mcpCallTool';

/** The failure types of the MCP activities (ApplicationFailure `type`). */
export const MCP_FAILURE_TYPES = {
  /** A stdio command the worker does not allow (`AGENT_MCP_COMMANDS`). Not retried. */
  notAllowed: 'McpServerNotAllowed',
  /** A `configured` server the worker's MCP config (`AGENT_MCP_CONFIG`) does not hold. Not retried. */
  notConfigured: 'McpServerNotConfigured',
  /** The server could not be started or refused `initialize` (no such program, exited, HTTP 4xx). Not retried. */
  failedToStart: 'McpServerFailedToStart',
  /** The server did not answer `initialize` within `startupTimeoutMs`. Not retried. */
  startupTimeout: 'McpServerTimeout',
  /** The server (HTTP) could not be reached or answered 5xx while connecting. Retried. */
  unavailable: 'McpServerUnavailable',
  /** A tool call got no answer within `timeoutMs`. Retried for read-only tools. */
  callTimeout: 'McpToolTimeout',
  /** The server refused the request as malformed (JSON-RPC -32700, -32600, -32601, -32602). Not retried. */
  rejected: 'McpRequestRejected',
  /** Any other JSON-RPC error, or the connection dropped mid-call. Retried for read-only tools. */
  serverError: 'McpServerError',
  /** A listing the harness cannot offer (too many tools, a schema that is not an object schema). Not retried. */
  badListing: 'McpBadListing',
} as const;

/** `mcp__<server>__<tool>`, reduced to the characters the Messages API allows in a tool name. */
export function mcpToolName(server: string, tool: string): string {
  const safe = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  return `${MCP_TOOL_PREFIX}${server}__${safe}`.slice(0, 128);
}

/** Whether the model's tool name is in the MCP namespace (none of the harness's own tools is). */
export function isMcpToolName(name: string): boolean {
  return name.startsWith(MCP_TOOL_PREFIX);
}

/** The catalogue's tools as the Messages API takes them (not `strict`: the schemas are the servers'). */
export function mcpToolDefinitions(catalogue: McpCatalogue): McpToolDefinition[] {
  return catalogue.tools.map((entry) => ({
    name: entry.name,
    description: entry.description,
    input_schema: { ...entry.inputSchema, type: 'object' },
  }));
}

/** A tool definition of the Messages API (`Tool`), as the model step carries it. */
export interface McpToolDefinition {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
}

export type McpArgumentCheck = { ok: true; input: Record<string, unknown> } | { ok: false; error: string };

/**
 * Validates a call's arguments against the tool's input schema. Strict like the harness's own
 * tools: an object schema that lists `properties` and says nothing of `additionalProperties`
 * refuses fields it does not list. The error names every offending field and goes back to the
 * model as-is.
 */
export function checkMcpArguments(entry: McpToolEntry, input: unknown): McpArgumentCheck {
  const problems: string[] = [];
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    problems.push(`the arguments must be a JSON object, got ${input === null ? 'null' : typeof input}`);
  } else {
    const schema = JSON.parse(JSON.stringify(entry.inputSchema)) as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, unknown>;
    if (schema.additionalProperties === undefined && schema.properties !== undefined) {
      for (const key of Object.keys(input)) {
        if (!Object.prototype.hasOwnProperty.call(properties, key))
          problems.push(
            `unknown field "${key}" is not allowed (${Object.keys(properties).length ? `allowed: ${Object.keys(properties).join(', ')}` : 'the tool takes no arguments'})`,
          );
      }
    }
    const result = new Validator(schema as Schema, draftOf(schema), false).validate(input);
    if (!result.valid) problems.push(...describeErrors(result.errors));
  }
  if (problems.length === 0) return { ok: true, input: input as Record<string, unknown> };
  return {
    ok: false,
    error: `Invalid arguments for ${entry.name}: ${[...new Set(problems)].join('; ')}. Nothing was run. Call ${entry.name} again with arguments that match its input schema (fields: ${describeMcpFields(entry)}).`,
  };
}

function draftOf(schema: Record<string, unknown>): SchemaDraft {
  const declared = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('draft-04')) return '4';
  if (declared.includes('draft-07') || declared.includes('draft-06')) return '7';
  if (declared.includes('2019-09')) return '2019-09';
  return '2020-12';
}

/** The leaf errors (the validator also reports each enclosing keyword), one line per problem. */
function describeErrors(errors: OutputUnit[]): string[] {
  const enclosing = ['properties', 'allOf', 'anyOf', 'oneOf', 'items', '$ref', 'additionalProperties', 'prefixItems'];
  const leaves = errors.filter((unit) => !enclosing.includes(unit.keyword));
  return (leaves.length ? leaves : errors).map((unit) => {
    const field = unit.instanceLocation.replace(/^#\/?/, '').split('/').filter(Boolean).join('.');
    const message = unit.error.replace(/\.+$/, '');
    const missing = unit.keyword === 'required' ? /required property "(.+?)"/.exec(message) : null;
    if (missing) return `required field "${field ? `${field}.` : ''}${missing[1]}" is missing`;
    const type = unit.keyword === 'type' ? /type "(\w+)" is invalid\. Expected "(.+?)"/.exec(unit.error) : null;
    if (type && field) return `field "${field}" must be ${withArticle(type[2])}, got ${withArticle(type[1])}`;
    return field ? `field "${field}": ${message}` : message;
  });
}

const withArticle = (noun: string): string => `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;

function describeMcpFields(entry: McpToolEntry): string {
  const properties = Object.keys((entry.inputSchema.properties ?? {}) as Record<string, unknown>);
  const required = new Set((entry.inputSchema.required ?? []) as string[]);
  return properties.map((key) => (required.has(key) ? key : `${key}?`)).join(', ') || 'none';
}

/** One line for the Web UI: `mcp__notes__search: {"query":"x"}` (≤ 100 characters). */
export function mcpCallSummary(name: string, input: unknown): string {
  const line = `${name}: ${JSON.stringify(input) ?? ''}`.replace(/\s+/g, ' ');
  return line.length <= 100 ? line : `${line.slice(0, 99)}…`;
}
