/**
 * The brain worker's MCP settings, from its environment.
 *
 * A stdio MCP server is a program the brain worker runs on its own host, so whoever can start a
 * workflow must not choose any program: `AGENT_MCP_COMMANDS` lists the commands an input's
 * `command` may name (exactly as written, `:`-separated, e.g. `npx:/usr/local/bin/github-mcp`), or
 * `*` for any. Default: none.
 *
 * `AGENT_MCP_CONFIG` names a JSON file of servers the worker's operator defines,
 * `{"mcpServers": {"<name>": {…}}}` in the input's format; an input uses one by name
 * (`{"github": {"configured": true}}`). Their commands need no allow-listing and their URLs and
 * headers are the operator's, so a secret can be bound to the one server that should receive it.
 */
import * as fs from 'node:fs';
import { ApplicationFailure } from '@temporalio/common';
import { MCP_FAILURE_TYPES, mcpServersSchema, type McpServerConfig, type McpServers } from '../../common/mcp';
import { parsed, readPart, settingsPart, variable, type Environment } from '../../common/env-settings';
import { describeZodError } from '../../common/validation';

export interface McpHostSettings {
  allowedCommands: ReadonlySet<string> | 'any';
  /** The servers of the worker's MCP config (`AGENT_MCP_CONFIG`), by name. */
  configured?: McpServers;
  /** Where they came from, for messages. */
  configFile?: string;
}

/** The brain worker's MCP variables (messages read `AGENT_MCP_CONFIG <file>: <field>: …`). */
export const MCP_PART = settingsPart({
  title: 'MCP servers',
  intro: "What MCP servers an operation may use; they run on the brain worker's host (`activities/mcp/`).",
  problem: (name, message) => `${name} ${message}`,
  variables: {
    allowedCommands: variable(
      'AGENT_MCP_COMMANDS',
      {
        description:
          "the commands a stdio MCP server of an input may run, exactly as the input's `command` names them (servers of `AGENT_MCP_CONFIG` need no entry)",
        default: 'none',
        values: '`:`-separated commands (`npx:/usr/local/bin/github-mcp`), or `*` for any',
      },
      parsed<McpHostSettings['allowedCommands']>(
        (raw) =>
          raw === '*'
            ? 'any'
            : new Set(
                raw
                  .split(':')
                  .map((entry) => entry.trim())
                  .filter(Boolean),
              ),
        () => new Set<string>(),
      ),
    ),
    config: variable(
      'AGENT_MCP_CONFIG',
      {
        description:
          'a JSON file `{"mcpServers": {…}}` of servers (in the input\'s format) that an input names with `{"configured": true}`; checked at start',
        default: 'none',
        values: 'a path to a readable JSON file',
      },
      parsed<{ file: string; servers: McpServers } | undefined>(
        (file) => ({ file, servers: readMcpConfig(file) }),
        () => undefined,
      ),
    ),
  },
  build: ({ allowedCommands, config }): McpHostSettings =>
    config ? { allowedCommands, configured: config.servers, configFile: config.file } : { allowedCommands },
});

/** Reads the settings; an unreadable or invalid `AGENT_MCP_CONFIG` throws an Error naming the file and field. */
export function readMcpSettings(env: Environment): McpHostSettings {
  return readPart('MCP', MCP_PART, env);
}

function readMcpConfig(file: string): McpServers {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
  const servers = (parsed as { mcpServers?: unknown } | null)?.mcpServers;
  if (servers === undefined) throw new Error(`${file}: must be a JSON object {"mcpServers": {…}}`);
  const checked = mcpServersSchema.safeParse(servers);
  if (!checked.success) throw new Error(`${file}: ${describeZodError(checked.error, servers)}`);
  for (const [name, server] of Object.entries(checked.data)) {
    if (server.configured) throw new Error(`${file}: ${name}: must give "command" or "url"`);
  }
  return checked.data;
}

/**
 * The server an activity connects to: the input's own, or — for `configured` — the worker's of that
 * name (`trusted`: its command needs no allow-listing).
 */
export function resolveMcpServer(
  server: string,
  config: McpServerConfig,
  settings: McpHostSettings,
): { config: McpServerConfig; trusted: boolean } {
  if (!config.configured) return { config, trusted: false };
  const own = settings.configured?.[server];
  if (own) return { config: own, trusted: true };
  const held = Object.keys(settings.configured ?? {});
  throw ApplicationFailure.create({
    type: MCP_FAILURE_TYPES.notConfigured,
    nonRetryable: true,
    message: settings.configFile
      ? `MCP server "${server}" is not in the brain worker's MCP config ${settings.configFile} (it holds: ${held.join(', ') || 'none'})`
      : `MCP server "${server}" is marked configured, but the brain worker has no MCP config (set AGENT_MCP_CONFIG)`,
  });
}
