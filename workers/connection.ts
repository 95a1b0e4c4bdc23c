/**
 * The workers' connection to Temporal, from the same settings as every client
 * (`client/connection-settings.ts`).
 */
import { NativeConnection } from '@temporalio/worker';
import type { TemporalSettings } from '../client/connection';

export async function connectWorker(settings: TemporalSettings): Promise<NativeConnection> {
  return NativeConnection.connect(settings.connectionOptions).catch((err: Error) => {
    throw new Error(
      `cannot reach Temporal at ${settings.address} (${err.message}): start it with \`npm run server\` or set TEMPORAL_ADDRESS`,
    );
  });
}
