import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Connection, Client } from '@temporalio/client';
import { createHealthActivities } from '../../activities/health';
import { freePort, startDevServer } from '../../platform/dev-server';
import { connectTestTemporal, createTestWorker, TestTemporal, uniqueQueue } from '../support/temporal';
import { testPlatform } from '../support/env';
import { healthCheck } from '../../workflows/shared/health';
import { NativeConnection, Worker } from '@temporalio/worker';

describe('Temporal dev server (real)', () => {
  let temporal: TestTemporal;
  beforeAll(async () => {
    temporal = await connectTestTemporal();
  });
  afterAll(async () => {
    await temporal.close();
  });

  it('runs a workflow that runs an activity', async () => {
    const taskQueue = uniqueQueue('smoke');
    const worker = await createTestWorker(temporal, { taskQueue, activities: createHealthActivities() });
    const result = await worker.runUntil(
      temporal.client.workflow.execute(healthCheck, {
        taskQueue,
        workflowId: `smoke-${taskQueue}`,
        args: [{ message: 'hello' }],
      }),
    );
    expect(result.echoed).toBe('hello');
    expect(result.activityHost).toContain(`:${process.pid}`);
  });

  it('keeps a completed workflow history across a restart on the same SQLite file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-persist-'));
    const dbFile = path.join(dir, 'dev.sqlite');
    const cli = { path: testPlatform().temporalCli, source: 'env' as const };
    const start = async (port: number) => startDevServer({ cli, port, dbFile, logFile: path.join(dir, 'server.log') });

    const port = await freePort();
    let server = await start(port);
    const workflowId = 'persisted-health-check';
    const taskQueue = 'persist-smoke';
    try {
      const connection = await Connection.connect({ address: server.address });
      const nativeConnection = await NativeConnection.connect({ address: server.address });
      const worker = await Worker.create({
        connection: nativeConnection,
        taskQueue,
        workflowBundle: { codePath: testPlatform().workflowBundlePath },
        activities: createHealthActivities(),
      });
      const client = new Client({ connection });
      const result = await worker.runUntil(
        client.workflow.execute(healthCheck, { taskQueue, workflowId, args: [{ message: 'persist me' }] }),
      );
      expect(result.echoed).toBe('persist me');
      await connection.close();
      await nativeConnection.close();
    } finally {
      await server.stop();
    }

    server = await start(port);
    try {
      const connection = await Connection.connect({ address: server.address });
      const handle = new Client({ connection }).workflow.getHandle(workflowId);
      const description = await handle.describe();
      expect(description.status.name).toBe('COMPLETED');
      expect(await handle.result()).toEqual(expect.objectContaining({ echoed: 'persist me' }));
      const history = await handle.fetchHistory();
      const types = (history.events ?? [])
        .map((e) => (e.activityTaskCompletedEventAttributes ? 'activityCompleted' : undefined))
        .filter(Boolean);
      expect(types).toEqual(['activityCompleted']);
      await connection.close();
    } finally {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
