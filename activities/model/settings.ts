/**
 * Model settings from the environment, declared as settings (`common/env-settings.ts`; the
 * configuration page is generated from them). Every problem names the variable to set, so a
 * misconfigured worker says exactly what to fix.
 */
import { z } from 'zod';
import { settingsPart, variable, type Environment, type VariableSchema } from '../../common/env-settings';
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

const positiveInt = (max: number, fallback: number): VariableSchema<number> =>
  z.coerce
    .number<string>({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be positive')
    .max(max, `must be at most ${max}`)
    .optional()
    .transform((value) => value ?? fallback);

/** The model's variables (messages read `ANTHROPIC_BASE_URL must be an http(s) URL`). */
export const MODEL_PART = settingsPart({
  title: 'Model',
  intro: 'The Messages API the brain worker calls (`activities/model/`).',
  problem: (name, message) => `${name} ${message}`,
  variables: {
    apiKey: variable(
      MODEL_ENV.apiKey,
      { description: 'API key sent as `x-api-key` (required by the brain worker)', default: 'none: required' },
      z.string({ error: 'is not set: set it to an API key for the Messages API' }),
    ),
    baseURL: variable(
      MODEL_ENV.baseURL,
      {
        description: 'the Messages API base URL (any server speaking the API, e.g. the scripted model server)',
        default: "the SDK's (`https://api.anthropic.com`)",
        values: 'an http(s) URL',
      },
      z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    ),
    model: variable(
      MODEL_ENV.model,
      { description: 'the model of an operation whose input names none', default: `\`${DEFAULT_MODEL}\`` },
      z
        .string()
        .optional()
        .transform((value) => value ?? DEFAULT_MODEL),
    ),
    maxTokens: variable(
      MODEL_ENV.maxTokens,
      {
        description: '`max_tokens` of a request whose operation sets none',
        default: '`16000`',
        values: 'a whole number from 1 to 1000000',
      },
      positiveInt(1_000_000, 16_000),
    ),
    requestTimeoutMs: variable(
      MODEL_ENV.requestTimeoutMs,
      {
        description: 'how long one request waits for the response headers, in milliseconds',
        default: '`120000`',
        values: 'a whole number from 1 to 3600000',
      },
      positiveInt(3_600_000, 120_000),
    ),
    streamIdleTimeoutMs: variable(
      MODEL_ENV.streamIdleTimeoutMs,
      {
        description: 'the longest gap between two stream events before the request is given up, in milliseconds',
        default: '`120000`',
        values: 'a whole number from 1 to 3600000',
      },
      positiveInt(3_600_000, 120_000),
    ),
    promptCacheTtl: variable(
      MODEL_ENV.promptCacheTtl,
      { description: 'the TTL of prompt-cache breakpoints', default: '`5m`', values: '`5m`, `1h`' },
      z
        .enum(['5m', '1h'], { error: 'must be 5m or 1h' })
        .optional()
        .transform((value): PromptCacheTtl => value ?? '5m'),
    ),
  },
});

export type ModelSettingsResult =
  | { ok: true; settings: ModelSettings }
  | { ok: false; /** One line per problem, each starting with the variable's name. */ problems: string[] };

/** Reads and validates the model settings; never throws. */
export function readModelSettings(env: Environment): ModelSettingsResult {
  const reading = MODEL_PART.read(env);
  return reading.ok ? { ok: true, settings: reading.value } : reading;
}
