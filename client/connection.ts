/**
 * Temporal connection settings from the environment, read the same way as the `temporal` CLI:
 * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_PROFILE`
 * and the TOML profiles (`@temporalio/envconfig`). With nothing set: `127.0.0.1:7233`, `default`.
 * So the same workers and CLI run against the local dev server, a cluster or Temporal Cloud.
 */
import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { DEFAULT_BRAIN_QUEUE, DEFAULT_HANDS_QUEUE } from '../common/task-queues';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';

export interface TemporalSettings {
  connectionOptions: ReturnType<typeof loadClientConnectConfig>['connectionOptions'];
  address: string;
  namespace: string;
}

export function temporalSettings(): TemporalSettings {
  const { connectionOptions, namespace } = loadClientConnectConfig({ profile: process.env.TEMPORAL_PROFILE });
  const address = connectionOptions.address ?? DEFAULT_TEMPORAL_ADDRESS;
  return { connectionOptions: { ...connectionOptions, address }, address, namespace: namespace ?? 'default' };
}

export async function connectClient(
  settings = temporalSettings(),
): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect(settings.connectionOptions).catch((err: Error) => {
    throw new Error(
      `cannot reach Temporal at ${settings.address} (${err.message}): start it with \`npm run server\` or set TEMPORAL_ADDRESS`,
    );
  });
  return { client: new Client({ connection, namespace: settings.namespace }), connection };
}

export interface QueueSettings {
  brain: string;
  hands: string;
}

/** `AGENT_BRAIN_QUEUE` / `AGENT_HANDS_QUEUE`; a hands worker per Docker host gets its own queue. */
export function queueSettings(env: NodeJS.ProcessEnv = process.env): QueueSettings {
  return { brain: env.AGENT_BRAIN_QUEUE || DEFAULT_BRAIN_QUEUE, hands: env.AGENT_HANDS_QUEUE || DEFAULT_HANDS_QUEUE };
}

/** The Web UI address for links: `AGENT_WEB_UI` or the local dev server's. */
export function webUiBase(env: NodeJS.ProcessEnv = process.env): string {
  return (env.AGENT_WEB_UI || `http://127.0.0.1:${env.TEMPORAL_UI_PORT || '8233'}`).replace(/\/$/, '');
}

export function workflowUrl(namespace: string, workflowId: string, runId?: string): string {
  const base = `${webUiBase()}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${base}/${encodeURIComponent(runId)}/history` : base;
}
