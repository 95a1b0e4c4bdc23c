/**
 * Model settings from the environment, validated in one place. Every problem names the variable
 * to set, so a misconfigured worker says exactly what to fix.
 *
 * | variable                      | meaning                                                | default            |
 * |-------------------------------|--------------------------------------------------------|--------------------|
 * | `ANTHROPIC_API_KEY`           | API key sent as `x-api-key` (required)                 | —                  |
 * | `ANTHROPIC_BASE_URL`          | Messages API base URL (any server speaking the API)    | the SDK's default  |
 * | `AGENT_MODEL`                 | model name                                             | `claude-sonnet-4-6`|
 * | `AGENT_MAX_TOKENS`            | `max_tokens` of a request that does not set its own    | 16000              |
 * | `AGENT_MODEL_TIMEOUT_MS`      | wait for the response headers of one request           | 120000             |
 * | `AGENT_MODEL_IDLE_TIMEOUT_MS` | longest gap between two stream events before giving up | 120000             |
 * | `AGENT_PROMPT_CACHE_TTL`      | TTL of prompt-cache breakpoints: `5m` or `1h`          | `5m`               |
 */
import { z } from 'zod';
import type { PromptCacheTtl } from '../../common/model-types';

export interface ModelSettings {
  apiKey: string;
  /** Undefined: the SDK's default endpoint. */
  baseURL: string | undefined;
  model: string;
  maxTokens: number;
  requestTimeoutMs: number;
  streamIdleTimeoutMs: number;
  promptCacheTtl: PromptCacheTtl;
}

export const MODEL_ENV = {
  apiKey: 'ANTHROPIC_API_KEY',
  baseURL: 'ANTHROPIC_BASE_URL',
  model: 'AGENT_MODEL',
  maxTokens: 'AGENT_MAX_TOKENS',
  requestTimeoutMs: 'AGENT_MODEL_TIMEOUT_MS',
  streamIdleTimeoutMs: 'AGENT_MODEL_IDLE_TIMEOUT_MS',
  promptCacheTtl: 'AGENT_PROMPT_CACHE_TTL',
} as const satisfies Record<keyof ModelSettings, string>;

export const DEFAULT_MODEL = 'claude-sonnet-4-6';

const blankToUndefined = (value: unknown): unknown =>
  typeof value === 'string' && value.trim() === '' ? undefined : value;
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(blankToUndefined, schema.optional());
const positiveInt = (max: number) =>
  z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be positive')
    .max(max, `must be at most ${max}`);

const modelEnvSchema = z.object({
  [MODEL_ENV.apiKey]: z.preprocess(
    blankToUndefined,
    z.string({ error: 'is not set: set it to an API key for the Messages API' }),
  ),
  [MODEL_ENV.baseURL]: optional(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' })),
  [MODEL_ENV.model]: optional(z.string()),
  [MODEL_ENV.maxTokens]: optional(positiveInt(1_000_000)),
  [MODEL_ENV.requestTimeoutMs]: optional(positiveInt(3_600_000)),
  [MODEL_ENV.streamIdleTimeoutMs]: optional(positiveInt(3_600_000)),
  [MODEL_ENV.promptCacheTtl]: optional(z.enum(['5m', '1h'], { error: 'must be 5m or 1h' })),
});

export type ModelSettingsResult =
  | { ok: true; settings: ModelSettings }
  | { ok: false; /** One line per problem, each starting with the variable's name. */ problems: string[] };

/** Reads and validates the model settings; never throws. */
export function readModelSettings(env: Record<string, string | undefined> = process.env): ModelSettingsResult {
  const parsed = modelEnvSchema.safeParse(env);
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => `${String(issue.path[0])} ${issue.message}`),
    };
  }
  const values = parsed.data;
  return {
    ok: true,
    settings: {
      apiKey: values[MODEL_ENV.apiKey],
      baseURL: values[MODEL_ENV.baseURL],
      model: values[MODEL_ENV.model] ?? DEFAULT_MODEL,
      maxTokens: values[MODEL_ENV.maxTokens] ?? 16_000,
      requestTimeoutMs: values[MODEL_ENV.requestTimeoutMs] ?? 120_000,
      streamIdleTimeoutMs: values[MODEL_ENV.streamIdleTimeoutMs] ?? 120_000,
      promptCacheTtl: values[MODEL_ENV.promptCacheTtl] ?? '5m',
    },
  };
}
