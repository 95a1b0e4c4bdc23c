/**
 * Connecting to Temporal with the settings of `connection-settings.ts`, and the Web UI links of
 * workflows.
 */
import { Client, Connection } from '@temporalio/client';
import type { TemporalSettings } from './connection-settings';

export {
  DEFAULT_TEMPORAL_ADDRESS,
  queueSettings,
  temporalSettings,
  type QueueSettings,
  type TemporalSettings,
} from './connection-settings';

export async function connectClient(settings: TemporalSettings): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect(settings.connectionOptions).catch((err: Error) => {
    throw new Error(
      `cannot reach Temporal at ${settings.address} (${err.message}): start it with \`npm run server\` or set TEMPORAL_ADDRESS`,
    );
  });
  return { client: new Client({ connection, namespace: settings.namespace }), connection };
}

/** The Web UI page of a workflow (of its run, with `runId`). */
export function workflowUrl(
  settings: Pick<TemporalSettings, 'webUi' | 'namespace'>,
  workflowId: string,
  runId?: string,
): string {
  const base = `${settings.webUi}/namespaces/${encodeURIComponent(settings.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${base}/${encodeURIComponent(runId)}/history` : base;
}
