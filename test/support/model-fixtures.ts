/**
 * Shared pieces of the model-boundary tests: settings and a client pointed at a scripted server,
 * and a small tool definition.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { Tool } from '@anthropic-ai/sdk/resources/messages';
import { createAnthropicClient } from '../../activities/model/client';
import type { ModelSettings } from '../../activities/model/settings';
import type { ScriptedModelServer } from '../../scripted-model/server';

export const READ_TOOL: Tool = {
  name: 'read',
  description: 'Read a file of the workspace.',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string' }, limit: { type: 'number' } },
    required: ['path'],
  },
};

export function scriptedSettings(
  server: Pick<ScriptedModelServer, 'url'>,
  overrides: Partial<ModelSettings> = {},
): ModelSettings {
  return {
    apiKey: 'test-key',
    baseURL: server.url,
    model: 'scripted-model',
    maxTokens: 1024,
    requestTimeoutMs: 10_000,
    streamIdleTimeoutMs: 10_000,
    promptCacheTtl: '5m',
    ...overrides,
  };
}

export function scriptedClient(
  server: Pick<ScriptedModelServer, 'url'>,
  overrides: Partial<ModelSettings> = {},
): Anthropic {
  return createAnthropicClient(scriptedSettings(server, overrides));
}
