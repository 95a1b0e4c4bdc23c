/**
 * The benchmark's model side: settings that point the real Anthropic client at the scripted Messages
 * API server, scripts written as functions of the request (so any number of operations can share one
 * server), and reading the server's request log (timings and usage).
 */
import type { ModelSettings } from '../activities/model/settings';
import { DEFAULT_MODEL } from '../activities/model/settings';
import type { TokenUsage } from '../common/model-types';
import type { RecordedRequest } from '../scripted-model/server';
import type { ScriptedRequest, ScriptedTurn } from '../scripted-model/script';
import { contentBlocks } from '../scripted-model/prompt';

/** Priced as the default model (`common/pricing.ts`), served by the scripted server. */
export const BENCH_MODEL = DEFAULT_MODEL;

export function benchModelSettings(baseURL: string): ModelSettings {
  return {
    apiKey: 'bench-key',
    baseURL,
    model: BENCH_MODEL,
    maxTokens: 8192,
    requestTimeoutMs: 120_000,
    streamIdleTimeoutMs: 120_000,
    promptCacheTtl: '5m',
  };
}

/** Model turns already taken in the conversation a request carries (its assistant messages). */
export function turnsTaken(request: ScriptedRequest): number {
  return request.body.messages.filter((message) => message.role === 'assistant').length;
}

/** The text of the first user message: the operation's goal, where the bench puts its run marker. */
export function goalOf(body: unknown): string {
  const messages = (body as { messages?: Array<{ content: unknown }> } | null)?.messages;
  const first = messages?.[0];
  if (!first) return '';
  return contentBlocks(first.content)
    .filter((block) => block.type === 'text')
    .map((block) => String(block.text))
    .join('\n');
}

/** A run marker for goals: `[bench:<marker>]`, found again in every request of that run. */
export const markerText = (marker: string): string => `[bench:${marker}]`;

/** The answered `POST /v1/messages` requests of the run whose goal carries `marker`, in arrival order. */
export function requestsOf(requests: readonly RecordedRequest[], marker: string): RecordedRequest[] {
  const tag = markerText(marker);
  return requests.filter(
    (request) => request.path === '/v1/messages' && request.status === 200 && goalOf(request.body).includes(tag),
  );
}

/** A numeric `name=<n>` parameter the bench wrote into a run's goal (e.g. `steps=20`), or undefined. */
export function goalParam(request: ScriptedRequest, name: string): number | undefined {
  const match = new RegExp(`\\b${name}=(\\d+)`).exec(goalOf(request.body));
  return match ? Number(match[1]) : undefined;
}

/**
 * A script for "N steps, each one tool call, then a final answer": turn k (0-based) asks for
 * `call(k)`; the turn after the last step answers in text. Stateless, so concurrent runs can share it.
 */
export function stepsScript(options: {
  steps: (request: ScriptedRequest) => number;
  call: (turn: number, request: ScriptedRequest) => { name: string; input: Record<string, unknown> };
  latencyMs?: number;
}): (request: ScriptedRequest) => ScriptedTurn {
  return (request) => {
    const turn = turnsTaken(request);
    const latency = options.latencyMs ? { latencyMs: options.latencyMs } : {};
    if (turn >= options.steps(request)) return { text: `done after ${turn} steps`, ...latency };
    return { toolCalls: [options.call(turn, request)], ...latency };
  };
}

/** Usage of requests as the server answered it, summed, with the largest single prompt. */
export function usageOf(requests: readonly RecordedRequest[]): { usage: TokenUsage; peakContext: number } {
  const usage: TokenUsage = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
  let peakContext = 0;
  for (const request of requests) {
    const u = request.usage;
    if (!u) continue;
    usage.input += u.input_tokens;
    usage.cacheWrite += u.cache_creation_input_tokens;
    usage.cacheRead += u.cache_read_input_tokens;
    usage.output += u.output_tokens;
    peakContext = Math.max(peakContext, u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens);
  }
  return { usage, peakContext };
}
