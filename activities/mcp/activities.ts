/**
 * The brain worker's MCP activities: list the tools of an operation's servers, and run one tool call.
 * Each activity connects, does its one thing and closes the connection (a stdio server lives for
 * one call). Every failure leaves as a classified ApplicationFailure (`MCP_FAILURE_TYPES`); every
 * text that is recorded (results, descriptions, errors, a server's stderr) is masked of the host
 * store's secrets first.
 *
 * Replay: a `never` tool's call is sent at most once. A retried attempt sends it again only when
 * the previous attempt recorded, as its last heartbeat, that it failed before sending; any other
 * retried attempt (a dead worker, a failure after sending) returns an `[interrupted: …]` result.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  MCP_FAILURE_TYPES,
  MCP_MAX_TOOLS,
  mcpToolName,
  type McpActivities,
  type McpCallInput,
  type McpCallOutcome,
  type McpCatalogue,
  type McpServerConfig,
  type McpToolEntry,
} from '../../common/mcp';
import { currentActivity, Heartbeat } from '../heartbeat';
import type { SecretStore } from '../secrets/store';
import { connectMcpServer, describeError } from './connection';
import { mcpResultText } from './result';
import type { McpHostSettings } from './settings';

export interface McpDependencies {
  settings: McpHostSettings;
  secrets: SecretStore;
}

/** What a `never` call's attempt heartbeats: where it is, so the next attempt knows whether it may send. */
interface CallProgress {
  stage: 'connecting' | 'not-sent' | 'sent';
  attempt: number;
}

const HEARTBEAT_EVERY_MS = 1_000;
const DESCRIPTION_MAX_CHARS = 4_000;

export function createMcpActivities(deps: McpDependencies): McpActivities {
  return {
    async mcpListTools(input): Promise<McpCatalogue> {
      const ctx = currentActivity();
      const beat = new Heartbeat(ctx, HEARTBEAT_EVERY_MS, { stage: 'listing' });
      try {
        const catalogue: McpCatalogue = { tools: [], servers: [] };
        const taken = new Set<string>();
        for (const [server, config] of Object.entries(input.servers)) {
          const { tools, resolved } = await listServerTools(server, config, deps, ctx?.cancellationSignal);
          for (const tool of tools) catalogue.tools.push(catalogueEntry(server, tool, taken, deps.secrets));
          const timeouts = config.configured
            ? { timeoutMs: resolved.timeoutMs, startupTimeoutMs: resolved.startupTimeoutMs }
            : {};
          catalogue.servers.push({ server, tools: tools.length, ...timeouts });
        }
        if (catalogue.tools.length > MCP_MAX_TOOLS) {
          throw ApplicationFailure.create({
            type: MCP_FAILURE_TYPES.badListing,
            nonRetryable: true,
            message: `the MCP servers offer ${catalogue.tools.length} tools, more than the ${MCP_MAX_TOOLS} an operation may offer the model (${catalogue.servers.map((s) => `${s.server}: ${s.tools}`).join(', ')})`,
          });
        }
        return catalogue;
      } finally {
        beat.stop();
      }
    },

    async mcpCallTool(input): Promise<McpCallOutcome> {
      const ctx = Context.current();
      const { attempt } = ctx.info;
      if (input.replayPolicy === 'never' && attempt > 1 && !failedBeforeSending(ctx.info.heartbeatDetails, attempt)) {
        return interrupted(input);
      }
      const beat = new Heartbeat<CallProgress>(ctx, HEARTBEAT_EVERY_MS, { stage: 'connecting', attempt });
      try {
        let connection;
        try {
          connection = await connectMcpServer(input.server, input.config, { ...deps, signal: ctx.cancellationSignal });
        } catch (err) {
          beat.set({ stage: 'not-sent', attempt });
          throw err;
        }
        try {
          beat.set({ stage: 'sent', attempt });
          const result = (await connection.client.callTool(
            { name: input.tool, arguments: input.arguments },
            undefined,
            { timeout: connection.config.timeoutMs, signal: ctx.cancellationSignal },
          )) as CallToolResult;
          return mcpResultText(result, deps.secrets);
        } catch (err) {
          throw callFailure({ ...input, config: connection.config }, err, connection.stderrTail(), deps.secrets);
        } finally {
          await connection.close();
        }
      } finally {
        beat.stop();
      }
    },
  };
}

async function listServerTools(
  server: string,
  config: McpServerConfig,
  deps: McpDependencies,
  signal: AbortSignal | undefined,
): Promise<{ tools: Tool[]; resolved: McpServerConfig }> {
  const connection = await connectMcpServer(server, config, { ...deps, signal });
  const resolved = connection.config;
  try {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await connection.client.listTools(cursor ? { cursor } : undefined, {
        timeout: resolved.startupTimeoutMs,
        signal,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor && tools.length <= MCP_MAX_TOOLS);
    return { tools, resolved };
  } catch (err) {
    throw callFailure(
      { server, tool: 'tools/list', replayPolicy: 'safe', config: resolved },
      err,
      connection.stderrTail(),
      deps.secrets,
    );
  } finally {
    await connection.close();
  }
}

function catalogueEntry(server: string, tool: Tool, taken: Set<string>, secrets: SecretStore): McpToolEntry {
  let name = mcpToolName(server, tool.name);
  for (let n = 2; taken.has(name); n += 1) name = `${mcpToolName(server, tool.name).slice(0, 120)}_${n}`;
  taken.add(name);
  const schema = tool.inputSchema as Record<string, unknown>;
  if (schema?.type !== 'object') {
    throw ApplicationFailure.create({
      type: MCP_FAILURE_TYPES.badListing,
      nonRetryable: true,
      message: `MCP server "${server}": tool ${JSON.stringify(tool.name)} has an input schema that is not an object schema`,
    });
  }
  const description = secrets.mask(tool.description ?? tool.title ?? '').slice(0, DESCRIPTION_MAX_CHARS);
  return {
    name,
    server,
    tool: tool.name,
    description: description || `${tool.name} (MCP server ${server})`,
    inputSchema: JSON.parse(secrets.mask(JSON.stringify(schema))) as Record<string, unknown>,
    replayPolicy: tool.annotations?.readOnlyHint === true ? 'safe' : 'never',
  };
}

function failedBeforeSending(details: unknown, attempt: number): boolean {
  const progress = details as Partial<CallProgress> | undefined;
  return progress?.stage === 'not-sent' && progress.attempt === attempt - 1;
}

function interrupted(input: McpCallInput): McpCallOutcome {
  return {
    content:
      `[interrupted: an earlier attempt of this call to ${input.tool} on the MCP server "${input.server}" may have reached the server, ` +
      'and its result was not recorded. It was not sent again because the server does not mark the tool read-only. ' +
      'Check whether it took effect before calling it again.]',
    isError: true,
    summary: 'interrupted: not sent again',
  };
}

/**
 * A failure of a request that reached the server: JSON-RPC errors saying the request itself was
 * wrong are final; timeouts, other server errors and a dropped connection are retried for read-only
 * tools only (a `never` tool's retry would not send again anyway, so it gets the real error now).
 */
function callFailure(
  input: Pick<McpCallInput, 'server' | 'tool' | 'replayPolicy' | 'config'>,
  err: unknown,
  stderr: string,
  secrets: SecretStore,
): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  const said = stderr ? `; its stderr ends: ${stderr}` : '';
  const reason = secrets.mask(describeError(err));
  const retryable = input.replayPolicy === 'safe';
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
    return ApplicationFailure.create({
      type: MCP_FAILURE_TYPES.callTimeout,
      nonRetryable: !retryable,
      message: `MCP server "${input.server}" did not answer ${input.tool} within ${input.config.timeoutMs} ms${said}`,
    });
  }
  const refused = [ErrorCode.ParseError, ErrorCode.InvalidRequest, ErrorCode.MethodNotFound, ErrorCode.InvalidParams];
  if (err instanceof McpError && refused.includes(err.code)) {
    return ApplicationFailure.create({
      type: MCP_FAILURE_TYPES.rejected,
      nonRetryable: true,
      message: `MCP server "${input.server}" refused ${input.tool}: ${reason}`,
    });
  }
  return ApplicationFailure.create({
    type: MCP_FAILURE_TYPES.serverError,
    nonRetryable: !retryable,
    message: `MCP server "${input.server}" failed on ${input.tool}: ${reason}${said}`,
  });
}
