/**
 * Test helpers for the real Temporal server started by the global setup: a client, and a worker on
 * a unique task queue built from the shared workflow bundle.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { installRuntime } from '../../workers/runtime';
import { testPlatform } from './env';
import { traceSinks } from '../../activities/tracing/spans';

export interface TestTemporal {
  client: Client;
  connection: Connection;
  nativeConnection: NativeConnection;
  close(): Promise<void>;
}

/** A client and a worker connection to the test server (or to `address`, a server a test started itself). */
export async function connectTestTemporal(address?: string): Promise<TestTemporal> {
  installRuntime();
  const { namespace } = testPlatform();
  const temporalAddress = address ?? testPlatform().temporalAddress;
  const connection = await Connection.connect({ address: temporalAddress });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  return {
    client: new Client({ connection, namespace }),
    connection,
    nativeConnection,
    async close() {
      await connection.close();
      await nativeConnection.close();
    },
  };
}

export const uniqueQueue = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A worker on the shared test bundle; `workflowBundle`/`connection`/`namespace` are filled in. */
export async function createTestWorker(
  temporal: TestTemporal,
  options: Omit<WorkerOptions, 'connection' | 'namespace' | 'workflowBundle' | 'workflowsPath'>,
): Promise<Worker> {
  const { namespace, workflowBundlePath } = testPlatform();
  return Worker.create({
    connection: temporal.nativeConnection,
    namespace,
    workflowBundle: { codePath: workflowBundlePath },
    ...options,
    // The bundle's traced workflows report their end through this sink (a no-op here).
    sinks: { ...traceSinks(undefined), ...options.sinks },
  });
}
