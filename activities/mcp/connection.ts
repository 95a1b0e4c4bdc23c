/**
 * Connecting to one MCP server from the brain worker: a stdio server started as a child process
 * (only commands the worker allows, with a minimal environment plus the server's `env`), or an HTTP
 * server (Streamable HTTP). Secrets named by `env` and `headers` are read from the host-side store
 * here and go nowhere else. Failures while connecting are classified once, here
 * (`McpServerNotAllowed`, `McpServerFailedToStart`, `McpServerTimeout`, `McpServerUnavailable`).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ApplicationFailure } from '@temporalio/common';
import { MCP_FAILURE_TYPES, type McpServerConfig } from '../../common/mcp';
import type { SecretStore } from '../secrets/store';
import { resolveMcpServer, type McpHostSettings } from './settings';

/** The client's name and version in `initialize`. */
const CLIENT_INFO = { name: 'durable-agent-harness', version: '0.1.0' };
/** The last characters of a stdio server's stderr quoted in a failure. */
const STDERR_TAIL_CHARS = 2_000;

export interface McpConnection {
  client: Client;
  /** The server connected to: the input's, or the worker's configured server of that name. */
  config: McpServerConfig;
  /** What the server wrote to stderr so far (its tail; masked), for failures. */
  stderrTail(): string;
  close(): Promise<void>;
}

/** Connects and runs `initialize` within the server's `startupTimeoutMs`; a classified failure otherwise. */
export async function connectMcpServer(
  server: string,
  requested: McpServerConfig,
  deps: { settings: McpHostSettings; secrets: SecretStore; signal?: AbortSignal },
): Promise<McpConnection> {
  const { config, trusted } = resolveMcpServer(server, requested, deps.settings);
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  let stderr = '';
  let transport: StdioClientTransport | StreamableHTTPClientTransport;
  if (config.command !== undefined) {
    if (!trusted) checkCommandAllowed(server, config.command, deps.settings);
    const stdio = new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...resolveEnv(server, config, deps.secrets) },
      stderr: 'pipe',
    });
    stdio.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    transport = stdio;
  } else {
    transport = new StreamableHTTPClientTransport(new URL(config.url!), {
      requestInit: { headers: resolveHeaders(server, config, deps.secrets) },
    });
  }
  const stderrTail = () => deps.secrets.mask(stderr.trim());
  try {
    await client.connect(transport, { timeout: config.startupTimeoutMs, signal: deps.signal });
  } catch (err) {
    await client.close().catch(() => undefined);
    throw connectFailure(server, config, err, stderrTail(), deps.secrets);
  }
  return { client, config, stderrTail, close: () => client.close().catch(() => undefined) };
}

function checkCommandAllowed(server: string, command: string, settings: McpHostSettings): void {
  if (settings.allowedCommands === 'any' || settings.allowedCommands.has(command)) return;
  const allowed = settings.allowedCommands.size ? [...settings.allowedCommands].join(', ') : 'none';
  throw ApplicationFailure.create({
    type: MCP_FAILURE_TYPES.notAllowed,
    nonRetryable: true,
    message: `MCP server "${server}": the brain worker does not allow the command ${JSON.stringify(command)} (AGENT_MCP_COMMANDS allows: ${allowed})`,
  });
}

function resolveEnv(server: string, config: McpServerConfig, secrets: SecretStore): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(config.env ?? {})) {
    env[key] = typeof value === 'string' ? value : secrets.require(value.secret, `MCP server "${server}" (env ${key})`);
  }
  return env;
}

function resolveHeaders(server: string, config: McpServerConfig, secrets: SecretStore): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(config.headers ?? {})) {
    if (typeof value === 'string') {
      headers[key] = value;
      continue;
    }
    const token = secrets.require(value.secret, `MCP server "${server}" (header ${key})`);
    headers[key] = value.scheme ? `${value.scheme} ${token}` : token;
  }
  return headers;
}

function connectFailure(
  server: string,
  config: McpServerConfig,
  err: unknown,
  stderr: string,
  secrets: SecretStore,
): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const what = config.command !== undefined ? `${JSON.stringify(config.command)}` : config.url!;
  const said = stderr ? `; its stderr ends: ${stderr}` : '';
  const reason = secrets.mask(describeError(err));
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
    return ApplicationFailure.create({
      type: MCP_FAILURE_TYPES.startupTimeout,
      nonRetryable: true,
      message: `MCP server "${server}" (${what}) did not answer initialize within ${config.startupTimeoutMs} ms${said}`,
    });
  }
  const retryable =
    config.url !== undefined &&
    !(err instanceof StreamableHTTPError && err.code !== undefined && err.code >= 400 && err.code < 500);
  return ApplicationFailure.create({
    type: retryable ? MCP_FAILURE_TYPES.unavailable : MCP_FAILURE_TYPES.failedToStart,
    nonRetryable: !retryable,
    message: `MCP server "${server}" (${what}) ${retryable ? 'could not be reached' : 'failed to start'}: ${reason}${said}`,
  });
}

/** An error's message with its cause's code (`fetch failed (ECONNREFUSED)`). */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? `${err.message} (${code})` : err.message;
}
