/**
 * The brain's MCP activities against real MCP servers (a stdio server started by the activity, a
 * Streamable HTTP server in this process), in Temporal's activity test environment: the replay
 * decision of a retried attempt, secrets in headers, and the classification of connect failures.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createMcpActivities } from '../../activities/mcp/activities';
import { readMcpSettings } from '../../activities/mcp/settings';
import { secretStore } from '../../activities/secrets/store';
import {
  mcpServerSchema,
  type McpActivities,
  type McpCallInput,
  type McpCallOutcome,
  type McpCatalogue,
  type McpServerInput,
} from '../../common/mcp';
import { PROJECT_ROOT } from '../../platform/paths';

const SERVER_SCRIPT = path.join(PROJECT_ROOT, 'test', 'support', 'mcp-test-server.ts');
const TOKEN = 'http-mcp-token-0a9b8c7d';

const activities: McpActivities = createMcpActivities({
  settings: { allowedCommands: new Set([process.execPath]) },
  secrets: secretStore(new Map([['API_TOKEN', TOKEN]])),
});

function callInput(
  server: McpServerInput,
  tool: string,
  args: Record<string, unknown>,
  replayPolicy: 'safe' | 'never',
) {
  const input: McpCallInput = {
    operationId: 'op-test',
    toolCallId: 'toolu_test',
    server: 'notes',
    config: mcpServerSchema.parse(server),
    tool,
    arguments: args,
    replayPolicy,
  };
  return input;
}

/** Runs `mcpCallTool` as the given attempt, with the heartbeat details the previous attempt left. */
function callAs(attempt: number, heartbeatDetails: unknown, input: McpCallInput) {
  return new MockActivityEnvironment({ attempt, heartbeatDetails }).run(
    activities.mcpCallTool,
    input,
  ) as Promise<McpCallOutcome>;
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('a retried MCP call follows the tool replay policy', () => {
  let dir: string;
  let notes: string;
  let stdio: McpServerInput;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-replay-'));
    notes = path.join(dir, 'notes.txt');
    stdio = { command: process.execPath, args: ['--import', 'tsx', SERVER_SCRIPT], env: { NOTES_FILE: notes } };
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('does not send a `never` call again when an earlier attempt may have sent it', async () => {
    const first = await callAs(1, undefined, callInput(stdio, 'add_note', { text: 'once' }, 'never'));
    expect(first).toMatchObject({ content: 'noted: once', isError: false });
    // A second attempt after a worker died mid-call: its heartbeat said it was connecting or had sent.
    for (const details of [undefined, { stage: 'sent', attempt: 1 }, { stage: 'connecting', attempt: 1 }]) {
      const retried = await callAs(2, details, callInput(stdio, 'add_note', { text: 'once' }, 'never'));
      expect(retried.isError).toBe(true);
      expect(retried.content).toMatch(
        /^\[interrupted: an earlier attempt of this call to add_note on the MCP server "notes"/,
      );
      expect(retried.summary).toBe('interrupted: not sent again');
    }
    // An older attempt's "not sent" does not vouch for the attempt just before this one.
    const stale = await callAs(
      3,
      { stage: 'not-sent', attempt: 1 },
      callInput(stdio, 'add_note', { text: 'once' }, 'never'),
    );
    expect(stale.summary).toBe('interrupted: not sent again');
    expect(fs.readFileSync(notes, 'utf8')).toBe('once\n');
  });

  it('sends a `never` call again when the previous attempt failed before sending, and a `safe` call always', async () => {
    const resent = await callAs(
      2,
      { stage: 'not-sent', attempt: 1 },
      callInput(stdio, 'add_note', { text: 'two' }, 'never'),
    );
    expect(resent).toMatchObject({ content: 'noted: two', isError: false });
    const safe = await callAs(
      4,
      { stage: 'sent', attempt: 3 },
      callInput(stdio, 'search_notes', { query: 'two' }, 'safe'),
    );
    expect(safe).toMatchObject({ content: 'two', isError: false });
  });

  it('names a server that fails to start and marks it final', async () => {
    const failure = await failureOf(
      callAs(
        1,
        undefined,
        callInput({ ...stdio, args: [...stdio.args!, '--fail-at-start'] }, 'add_note', { text: 'x' }, 'never'),
      ),
    );
    expect(failure.type).toBe('McpServerFailedToStart');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('cannot open database');
  });
});

describe('an HTTP MCP server with a token from the host store', () => {
  let server: http.Server;
  let url: string;
  const seen: string[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      const mcp = new McpServer({ name: 'issues', version: '1.0.0' });
      mcp.registerTool(
        'get_issue',
        { description: 'Read an issue.', inputSchema: { id: z.number().int() }, annotations: { readOnlyHint: true } },
        async ({ id }) => ({
          content: [{ type: 'text', text: `issue ${id}: fix it (seen with ${req.headers.authorization})` }],
        }),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      void mcp.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends the secret as the header, lists and calls the tool, and masks the token in the result', async () => {
    const config: McpServerInput = { url, headers: { Authorization: { secret: 'API_TOKEN', scheme: 'Bearer' } } };
    const catalogue = (await new MockActivityEnvironment().run(activities.mcpListTools, {
      operationId: 'op-test',
      servers: { issues: mcpServerSchema.parse(config) },
    })) as McpCatalogue;
    expect(catalogue.tools).toEqual([
      expect.objectContaining({ name: 'mcp__issues__get_issue', tool: 'get_issue', replayPolicy: 'safe' }),
    ]);
    const outcome = await callAs(1, undefined, {
      ...callInput(config, 'get_issue', { id: 7 }, 'safe'),
      server: 'issues',
    });
    expect(outcome.content).toBe('issue 7: fix it (seen with Bearer [secret API_TOKEN])');
    expect(seen).toContain(`Bearer ${TOKEN}`);
  });

  it('refuses a server that answers 401 as failing to start, and retries one that cannot be reached', async () => {
    const unauthorized = await failureOf(
      callAs(
        1,
        undefined,
        callInput({ url, headers: { Authorization: 'Bearer wrong' } }, 'get_issue', { id: 1 }, 'safe'),
      ),
    );
    expect(unauthorized.type).toBe('McpServerFailedToStart');
    expect(unauthorized.nonRetryable).toBe(true);

    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await failureOf(
      callAs(1, undefined, callInput({ url: `http://127.0.0.1:${port}/mcp` }, 'get_issue', { id: 1 }, 'safe')),
    );
    expect(unreachable.type).toBe('McpServerUnavailable');
    expect(unreachable.nonRetryable).toBe(false);
  });

  it('names a secret the host store does not hold', async () => {
    const failure = await failureOf(
      callAs(
        1,
        undefined,
        callInput({ url, headers: { Authorization: { secret: 'MISSING' } } }, 'get_issue', { id: 1 }, 'safe'),
      ),
    );
    expect(failure.type).toBe('SecretNotFound');
    expect(failure.message).toContain('MCP server "notes" (header Authorization) needs the secret "MISSING"');
  });
});

describe("servers of the brain worker's MCP config (AGENT_MCP_CONFIG)", () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-config-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('runs a configured server that an input names, without allow-listing its command', async () => {
    const file = path.join(dir, 'mcp.json');
    const notes = path.join(dir, 'notes.txt');
    const server = { command: process.execPath, args: ['--import', 'tsx', SERVER_SCRIPT], env: { NOTES_FILE: notes } };
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { notes: { ...server, timeoutMs: 5_000 } } }));
    const settings = readMcpSettings({ AGENT_MCP_CONFIG: file });
    expect(settings.allowedCommands).toEqual(new Set());
    const configured = createMcpActivities({ settings, secrets: secretStore(new Map()) });
    const byName = mcpServerSchema.parse({ configured: true });
    const catalogue = (await new MockActivityEnvironment().run(configured.mcpListTools, {
      operationId: 'op-test',
      servers: { notes: byName },
    })) as McpCatalogue;
    expect(catalogue.servers).toEqual([{ server: 'notes', tools: 4, timeoutMs: 5_000, startupTimeoutMs: 30_000 }]);
    const outcome = (await new MockActivityEnvironment().run(configured.mcpCallTool, {
      ...callInput({ configured: true }, 'add_note', { text: 'configured' }, 'never'),
    })) as McpCallOutcome;
    expect(outcome.content).toBe('noted: configured');
    expect(fs.readFileSync(notes, 'utf8')).toBe('configured\n');

    const unknown = await failureOf(
      new MockActivityEnvironment().run(configured.mcpListTools, {
        operationId: 'op-test',
        servers: { other: byName },
      }),
    );
    expect(unknown.type).toBe('McpServerNotConfigured');
    expect(unknown.message).toBe(
      `MCP server "other" is not in the brain worker's MCP config ${file} (it holds: notes)`,
    );
    // The same input without a configured server is refused by the allow-list.
    const refused = await failureOf(
      new MockActivityEnvironment().run(configured.mcpCallTool, callInput(server, 'add_note', { text: 'x' }, 'never')),
    );
    expect(refused.type).toBe('McpServerNotAllowed');
  });

  it('refuses a config file with a bad server, naming the file and the field', () => {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, JSON.stringify({ mcpServers: { api: { url: 'ftp://example.com/mcp' } } }));
    expect(() => readMcpSettings({ AGENT_MCP_CONFIG: file })).toThrow(`AGENT_MCP_CONFIG ${file}: api.url:`);
    fs.writeFileSync(file, JSON.stringify({ servers: {} }));
    expect(() => readMcpSettings({ AGENT_MCP_CONFIG: file })).toThrow('must be a JSON object {"mcpServers": {…}}');
  });
});
