/**
 * A test-only activity around the model boundary: `callModel` sends one request per attempt through
 * `sendWithHeartbeats` (as the brain's `modelStep` does), reading settings from the environment or
 * taking fixed ones, so the tests can drive the model boundary alone under the model-call preset.
 */
import type Anthropic from '@anthropic-ai/sdk';
import { notConfiguredFailure } from '../../activities/model/classify';
import { createAnthropicClient } from '../../activities/model/client';
import { sendWithHeartbeats } from '../../activities/model/activity';
import { readModelSettings, type ModelSettings } from '../../activities/model/settings';
import type { ModelReply, ModelRequest } from '../../common/model-types';

export interface CallModelInput {
  request: ModelRequest;
}

export interface ModelActivities {
  callModel(input: CallModelInput): Promise<ModelReply>;
}

export interface ModelActivityDeps {
  /** Where settings come from when `settings` is not given; read at each call. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Fixed settings (tests, embedding); skips the environment. */
  settings?: ModelSettings;
  /** A client to use for every call (built with `maxRetries: 0`); otherwise one per settings. */
  client?: Anthropic;
  /** Heartbeat at least this often while waiting; default a third of the heartbeat timeout. */
  heartbeatIntervalMs?: number;
}

export function createModelActivities(deps: ModelActivityDeps = {}): ModelActivities {
  const clients = new Map<string, Anthropic>();
  const clientFor = (settings: ModelSettings): Anthropic => {
    if (deps.client) return deps.client;
    const key = JSON.stringify([settings.apiKey, settings.baseURL, settings.requestTimeoutMs]);
    let client = clients.get(key);
    if (!client) {
      client = createAnthropicClient(settings);
      clients.set(key, client);
    }
    return client;
  };

  return {
    async callModel({ request }) {
      let settings = deps.settings;
      if (!settings) {
        const result = readModelSettings(deps.env ?? process.env);
        if (!result.ok) throw notConfiguredFailure(result.problems);
        settings = result.settings;
      }
      return sendWithHeartbeats({
        client: clientFor(settings),
        settings,
        request,
        heartbeatIntervalMs: deps.heartbeatIntervalMs,
      });
    },
  };
}
