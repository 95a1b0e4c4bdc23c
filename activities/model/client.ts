/**
 * The Messages API client for model calls: `maxRetries: 0`, because Temporal owns retries (every
 * attempt is then visible in history and follows the model-call retry preset), and the request
 * timeout from the settings (it covers the wait for response headers; stalled streams are caught by
 * `streamIdleTimeoutMs` in `sendMessagesRequest`).
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ModelSettings } from './settings';

export function createAnthropicClient(
  settings: Pick<ModelSettings, 'apiKey' | 'baseURL' | 'requestTimeoutMs'>,
): Anthropic {
  return new Anthropic({
    apiKey: settings.apiKey,
    baseURL: settings.baseURL ?? null,
    maxRetries: 0,
    timeout: settings.requestTimeoutMs,
  });
}
