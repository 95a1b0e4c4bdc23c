/**
 * The scripted Messages API server: a real HTTP server speaking `POST /v1/messages` (JSON and SSE
 * streaming) and `POST /v1/messages/count_tokens`, validating requests like the API, simulating the
 * prompt cache, answering from a script, injecting faults, and logging every request.
 *
 * Point the SDK at it with `baseURL: server.url`. Tests, the benchmark and the demo start it
 * in-process; `npm run scripted-model -- --port N --script <file>` runs it as a command.
 */
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { CacheDetail, CacheSimulationOptions, CacheUsage, PromptCacheSimulation } from './cache-simulation';
import { contentBlocks, promptBlocks } from './prompt';
import { blockTokens } from './token-estimate';
import { buildReply, ScriptedReply, ScriptViolation } from './reply';
import { ApiErrorType, ModelScript, ScriptedFault, scriptedRequest, ScriptedTurn } from './script';
import { formatSse, messageEventGroups, SseEvent } from './sse';
import { MessagesRequestBody, validateMessagesRequest } from './validation';

export interface ScriptedModelServerOptions extends CacheSimulationOptions {
  script?: ModelScript;
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** When set, requests must carry this key (`x-api-key` or `Authorization: Bearer`), else 401 `authentication_error`. */
  apiKey?: string;
  /** When set, other model names get 404 `not_found_error`. */
  models?: string[];
  /** Characters per text/thinking/JSON delta. Default 16. */
  chunkChars?: number;
  /** Bodies over this many bytes get 413 `request_too_large`. Default 32 MiB. */
  maxRequestBytes?: number;
  /**
   * The model's context window: a prompt over this many tokens gets the API's 400
   * `invalid_request_error` "prompt is too long: N tokens > M maximum" (no script turn consumed).
   * Default: no limit.
   */
  contextWindowTokens?: number;
  /**
   * Keep each request's body in the log (`rawBody`, `body`, `messagesRequest`). Default true; a
   * long run with megabyte-sized prompts turns it off and keeps the rest of the record (usage, status).
   */
  recordBodies?: boolean;
}

/** One request as received, and how it was answered. */
export interface RecordedRequest {
  /** 0-based, in arrival order. */
  index: number;
  /** Wall-clock arrival time (ms since the epoch), for ordering and delay assertions. */
  receivedAt: number;
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The body exactly as received (byte-level comparisons of what the harness sent). */
  rawBody: string;
  /** A hash of the body as received (kept when the body is not): a request sent again has the same. */
  bodyHash: string;
  /** The parsed JSON body, or null when absent or not JSON. */
  body: unknown;
  /** The body once it passed validation, typed; null when it was rejected before or by validation. */
  messagesRequest: MessagesRequestBody | null;
  /** The `request-id` the server answered with. */
  requestId: string;
  status: number;
  streamed: boolean;
  /** The script turn the request consumed, or null. */
  turnIndex: number | null;
  /** The error answered, if any (`type` as in the API's error body). */
  error: { type: string; message: string } | null;
  /** True when the client went away before the response was complete (e.g. it cancelled). */
  clientDisconnected: boolean;
  /** Usage answered (successful messages only). */
  usage: (CacheUsage & { output_tokens: number }) | null;
  /**
   * Where the answered prompt's tokens came from (successful messages only): the prefix an earlier
   * request to the same model already sent (`seenTokens`), and the tail this request added after the
   * conversation's last reply (`tailTokens`: that reply and the messages after it; the whole
   * conversation when it has no reply yet), and the model whose cache it used. Content sent again is
   * `prompt − tailTokens`.
   */
  cacheDetail: (CacheDetail & { tailTokens: number; model: string }) | null;
  /**
   * The usage the client was actually sent: the last usage figures written before the response
   * ended (a stream cut or abandoned after `message_start` reports its input tokens and one output
   * token), all of it for a JSON answer, null when no usage left the server (an HTTP error). The
   * server's own count of what each request cost.
   */
  reportedUsage: ReportedUsage | null;
}

/** Token counts as the API reports them. */
export interface ReportedUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

export interface ScriptError {
  requestIndex: number;
  turnIndex: number | null;
  message: string;
}

export interface ScriptedModelServer {
  /** The base URL to give the SDK (`baseURL`) or `ANTHROPIC_BASE_URL`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Off-script requests and exhausted scripts, in order. */
  readonly scriptErrors: ScriptError[];
  readonly cache: PromptCacheSimulation;
  /** Replaces the script; turn counting, tool-use ids and message ids restart. */
  setScript(script: ModelScript): void;
  /** Turns consumed so far. */
  readonly turnsServed: number;
  /** Enforces another context window from the next request on (`undefined`: none), as `contextWindowTokens`. */
  setContextWindowTokens(tokens: number | undefined): void;
  /** Throws when a script error was recorded or (for an array script) turns are left. */
  assertScriptFinished(): void;
  stop(): Promise<void>;
}

const ERROR_STATUS: Record<ApiErrorType, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

class ScriptedModelHttpServer implements ScriptedModelServer {
  readonly requests: RecordedRequest[] = [];
  readonly scriptErrors: ScriptError[] = [];
  readonly cache: PromptCacheSimulation;
  url = '';
  port = 0;
  private script: ModelScript = [];
  private contextWindow: number | undefined;
  private turns = 0;
  private toolUseIds = 0;
  private messageIds = 0;
  private readonly sockets = new Set<Socket>();
  private readonly server: http.Server;

  constructor(private readonly options: ScriptedModelServerOptions) {
    this.cache = new PromptCacheSimulation(options);
    this.contextWindow = options.contextWindowTokens;
    if (options.script) this.script = options.script;
    this.server = http.createServer((req, res) => {
      this.handle(req, res)
        .finally(() => this.forgetBody())
        .catch((error: unknown) => {
          if (!res.headersSent) this.sendError(res, null, 'api_error', `scripted model crashed: ${String(error)}`, 500);
          else res.destroy();
        });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Drops the bodies of answered requests when `recordBodies` is false. */
  private forgetBody(): void {
    if (this.options.recordBodies !== false) return;
    for (const record of this.requests) {
      if (record.status === 0 || record.rawBody === '') continue;
      record.rawBody = '';
      record.body = null;
      record.messagesRequest = null;
    }
  }

  get turnsServed(): number {
    return this.turns;
  }

  async listen(): Promise<void> {
    const host = this.options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, host, () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://${host.includes(':') ? `[${host}]` : host}:${this.port}`;
  }

  setContextWindowTokens(tokens: number | undefined): void {
    this.contextWindow = tokens;
  }

  setScript(script: ModelScript): void {
    this.script = script;
    this.turns = 0;
    this.toolUseIds = 0;
    this.messageIds = 0;
  }

  assertScriptFinished(): void {
    const problems = this.scriptErrors.map((error) => `request ${error.requestIndex}: ${error.message}`);
    if (Array.isArray(this.script) && this.turns < this.script.length) {
      problems.push(`${this.script.length - this.turns} of ${this.script.length} scripted turns were never requested`);
    }
    if (problems.length > 0)
      throw new Error(`the scripted model run did not go as scripted:\n  ${problems.join('\n  ')}`);
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const record: RecordedRequest = {
      index: this.requests.length,
      receivedAt: Date.now(),
      method: req.method ?? 'GET',
      path,
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [
          name,
          Array.isArray(value) ? value.join(', ') : (value ?? ''),
        ]),
      ),
      rawBody: '',
      bodyHash: '',
      body: null,
      messagesRequest: null,
      requestId: `req_scripted_${String(this.requests.length + 1).padStart(4, '0')}`,
      status: 0,
      streamed: false,
      turnIndex: null,
      error: null,
      clientDisconnected: false,
      usage: null,
      cacheDetail: null,
      reportedUsage: null,
    };
    this.requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished && record.error?.type !== 'connection_dropped') record.clientDisconnected = true;
    });

    const raw = await readBody(req, this.options.maxRequestBytes ?? 32 * 1024 * 1024);
    if (raw === null)
      return this.fail(res, record, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.');
    record.rawBody = raw;
    record.bodyHash = crypto.createHash('sha256').update(raw).digest('hex').slice(0, 16);
    try {
      record.body = raw.length > 0 ? JSON.parse(raw) : null;
    } catch {
      record.body = null;
    }
    const route = `${record.method} ${path}`;
    if (route !== 'POST /v1/messages' && route !== 'POST /v1/messages/count_tokens') {
      return this.fail(res, record, 'not_found_error', `Not found: ${route}`);
    }
    // The API takes the key as `x-api-key` or as `Authorization: Bearer <key>` (what SDK 1.x sends).
    const bearer = /^Bearer\s+(.+)$/i.exec(record.headers.authorization ?? '');
    const key = record.headers['x-api-key'] || bearer?.[1];
    if (!key) return this.fail(res, record, 'authentication_error', 'x-api-key header is required');
    if (this.options.apiKey !== undefined && key !== this.options.apiKey)
      return this.fail(res, record, 'authentication_error', 'invalid x-api-key');
    if (!record.headers['anthropic-version'])
      return this.fail(res, record, 'invalid_request_error', 'anthropic-version: header is required');
    if (record.body === null)
      return this.fail(
        res,
        record,
        'invalid_request_error',
        'There was an issue with the request body: it is not valid JSON',
      );

    const validation = validateMessagesRequest(
      route.endsWith('count_tokens') ? { max_tokens: 1, ...(record.body as object) } : record.body,
    );
    if (!validation.ok) return this.fail(res, record, 'invalid_request_error', validation.message);
    const body = validation.body;
    record.messagesRequest = body;
    if (this.options.models && !this.options.models.includes(body.model))
      return this.fail(res, record, 'not_found_error', `model: ${body.model}`);

    if (route.endsWith('count_tokens')) {
      const usage = PromptCacheSimulation.uncached(promptBlocks(body));
      return this.sendJson(res, record, 200, { input_tokens: usage.input_tokens });
    }
    const window = this.contextWindow;
    if (window !== undefined) {
      const prompt = PromptCacheSimulation.uncached(promptBlocks(body)).input_tokens;
      if (prompt > window)
        return this.fail(
          res,
          record,
          'invalid_request_error',
          `prompt is too long: ${prompt} tokens > ${window} maximum`,
        );
    }
    await this.answer(res, record, body);
  }

  private async answer(res: http.ServerResponse, record: RecordedRequest, body: MessagesRequestBody): Promise<void> {
    const turnIndex = this.turns;
    const context = scriptedRequest(body, record.index, turnIndex);
    let turn: ScriptedTurn | undefined;
    try {
      turn = Array.isArray(this.script)
        ? this.script[turnIndex]
        : (this.script as (r: typeof context) => ScriptedTurn | undefined)(context);
      if (turn === undefined) {
        const size = Array.isArray(this.script) ? ` (it has ${this.script.length} turns)` : '';
        throw new ScriptViolation(
          `the script has no turn for this request: it ran out after ${turnIndex} turns${size}`,
        );
      }
      this.turns += 1;
      record.turnIndex = turnIndex;
      turn.expect?.(context);
      if (turn.respond) {
        const { respond: _nested, expect: _check, ...computed } = await turn.respond(context);
        turn = { label: turn.label, ...computed };
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const label = turn?.label ? ` (${turn.label})` : '';
      this.scriptErrors.push({
        requestIndex: record.index,
        turnIndex: record.turnIndex,
        message: `turn ${turnIndex}${label}: ${message}`,
      });
      return this.fail(
        res,
        record,
        'invalid_request_error',
        `scripted model: off script at turn ${turnIndex}${label}: ${message}`,
      );
    }

    if (turn.latencyMs) await sleep(turn.latencyMs);
    const fault = turn.fault;
    if (fault && this.answerHttpFault(res, record, fault)) return;

    let reply: ScriptedReply;
    try {
      reply = buildReply(turn, body, () => `toolu_${String(++this.toolUseIds).padStart(2, '0')}`);
    } catch (error) {
      if (!(error instanceof ScriptViolation)) throw error;
      this.scriptErrors.push({ requestIndex: record.index, turnIndex, message: `turn ${turnIndex}: ${error.message}` });
      return this.fail(
        res,
        record,
        'invalid_request_error',
        `scripted model: off script at turn ${turnIndex}: ${error.message}`,
      );
    }
    const { usage, detail } = this.cache.processDetailed(promptBlocks(body), body.model);
    record.usage = { ...usage, output_tokens: reply.outputTokens };
    record.cacheDetail = { ...detail, tailTokens: tailTokensOf(body), model: body.model };
    const identity = { id: `msg_scripted_${String(++this.messageIds).padStart(4, '0')}`, model: body.model };

    if (body.stream !== true) {
      if (fault?.type === 'stream_error')
        return this.fail(res, record, fault.errorType ?? 'overloaded_error', 'Overloaded');
      if (fault?.type === 'drop_connection') return void res.destroy();
      record.reportedUsage = {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: reply.outputTokens,
      };
      return this.sendJson(res, record, 200, {
        id: identity.id,
        type: 'message',
        role: 'assistant',
        model: identity.model,
        content: reply.content,
        stop_reason: reply.stopReason,
        stop_sequence: reply.stopSequence,
        usage: { ...usage, output_tokens: reply.outputTokens, service_tier: 'standard' },
      });
    }
    await this.stream(
      res,
      record,
      messageEventGroups(identity, reply, usage, this.options.chunkChars ?? 16),
      fault,
      turn.eventDelayMs ?? 0,
      turn.hold,
    );
  }

  /** Answers faults that replace the response; returns false for faults applied to it. */
  private answerHttpFault(res: http.ServerResponse, record: RecordedRequest, fault: ScriptedFault): boolean {
    switch (fault.type) {
      case 'rate_limit': {
        const headers: Record<string, string> = { 'retry-after': String(Math.ceil(fault.retryAfterSeconds ?? 1)) };
        if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
        this.fail(
          res,
          record,
          'rate_limit_error',
          'Number of request tokens has exceeded your per-minute rate limit',
          undefined,
          headers,
        );
        return true;
      }
      case 'overloaded':
        this.fail(res, record, 'overloaded_error', 'Overloaded');
        return true;
      case 'server_error':
        this.fail(res, record, 'api_error', 'Internal server error', fault.status ?? 500);
        return true;
      case 'http_error':
        this.fail(res, record, fault.errorType, fault.message ?? `scripted ${fault.errorType}`, fault.status);
        return true;
      case 'drop_connection':
        if (fault.afterBlocks !== undefined) return false;
        record.status = 0;
        record.error = { type: 'connection_dropped', message: 'the scripted model dropped the connection' };
        res.destroy();
        return true;
      default:
        return false;
    }
  }

  private async stream(
    res: http.ServerResponse,
    record: RecordedRequest,
    groups: ReturnType<typeof messageEventGroups>,
    fault: ScriptedFault | undefined,
    delayMs: number,
    hold?: ScriptedTurn['hold'],
  ): Promise<void> {
    let deltas = 0;
    record.status = 200;
    record.streamed = true;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'request-id': record.requestId,
    });
    const send = async (events: SseEvent[]): Promise<boolean> => {
      for (const event of events) {
        if (res.destroyed) return false;
        if (delayMs > 0) await sleep(delayMs);
        res.write(formatSse(event));
        record.reportedUsage = usageIn(event) ?? record.reportedUsage;
        if (event.event === 'content_block_delta' && ++deltas === hold?.afterDeltas) await hold.until;
      }
      return !res.destroyed;
    };
    const faultAfter =
      fault?.type === 'stream_error' || fault?.type === 'stall' || fault?.type === 'drop_connection'
        ? (fault.afterBlocks ?? 0)
        : -1;
    if (!(await send(groups.head))) return;
    for (let block = 0; block <= groups.blocks.length; block++) {
      if (block === faultAfter && fault) {
        if (fault.type === 'stream_error') {
          const type = fault.errorType ?? 'overloaded_error';
          const message = type === 'overloaded_error' ? 'Overloaded' : 'Internal server error';
          record.error = { type, message };
          res.end(
            formatSse({
              event: 'error',
              data: { type: 'error', error: { type, message }, request_id: record.requestId },
            }),
          );
          return;
        }
        if (fault.type === 'drop_connection') {
          record.error = {
            type: 'connection_dropped',
            message: 'the scripted model dropped the connection mid-stream',
          };
          // Let what was sent reach the client first, as on a connection that breaks mid-answer.
          await new Promise<void>((resolve) => res.write('', () => resolve()));
          await sleep(20);
          res.destroy();
          return;
        }
        if (fault.type === 'stall') await sleep(fault.ms);
      }
      if (block < groups.blocks.length && !(await send(groups.blocks[block]!))) return;
    }
    if (await send(groups.tail)) res.end();
  }

  private fail(
    res: http.ServerResponse,
    record: RecordedRequest,
    type: ApiErrorType,
    message: string,
    status = ERROR_STATUS[type],
    headers: Record<string, string> = {},
  ): void {
    record.error = { type, message };
    this.sendError(res, record, type, message, status, headers);
  }

  private sendError(
    res: http.ServerResponse,
    record: RecordedRequest | null,
    type: string,
    message: string,
    status: number,
    headers: Record<string, string> = {},
  ): void {
    const requestId = record?.requestId ?? 'req_scripted_error';
    if (record) record.status = status;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
    res.end(JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId }));
  }

  private sendJson(res: http.ServerResponse, record: RecordedRequest, status: number, value: unknown): void {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': record.requestId });
    res.end(JSON.stringify(value));
  }
}

export async function startScriptedModelServer(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const server = new ScriptedModelHttpServer(options);
  await server.listen();
  return server;
}

/** The usage figures an SSE event carries (`message_start`, `message_delta`), if any. */
function usageIn(event: SseEvent): ReportedUsage | undefined {
  const data = event.data as { message?: { usage?: unknown }; usage?: unknown };
  const usage = (data.message?.usage ?? data.usage) as Partial<ReportedUsage> | undefined;
  if (!usage || typeof usage.input_tokens !== 'number') return undefined;
  return {
    input_tokens: usage.input_tokens,
    cache_creation_input_tokens: usage.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: usage.cache_read_input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
  };
}

function sleep(ms: number): Promise<void> {
  // Unreferenced: a stalled answer must not keep a finished test process alive.
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The body as text, or null when it is over `limit` bytes. */
async function readBody(req: http.IncomingMessage, limit: number): Promise<string | null> {
  const parts: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) tooLarge = true;
    if (!tooLarge) parts.push(chunk);
  }
  return tooLarge ? null : Buffer.concat(parts).toString('utf8');
}

/** Tokens of the conversation's last reply and every message after it (all messages without a reply). */
function tailTokensOf(body: MessagesRequestBody): number {
  const messages = body.messages;
  let from = 0;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (messages[index]!.role === 'assistant') {
      from = index;
      break;
    }
  }
  let tokens = 0;
  for (const message of messages.slice(from))
    for (const block of contentBlocks(message.content)) tokens += blockTokens(block);
  return tokens;
}
