/**
 * Server and sandbox faults in the middle of an operation: the Temporal dev server killed with
 * SIGKILL and restarted on the same SQLite file, and the sandbox container killed while a `never`
 * tool runs.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import Docker from 'dockerode';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE, statusQuery } from '../../common/operation';
import { freePort, startDevServer } from '../../platform/dev-server';
import { startScriptedModelServer } from '../../scripted-model/server';
import { createBrainWorker, createHandsWorker } from '../../workers/workers';
import { testPlatform } from '../support/env';
import { startOperationHarness, testModelSettings, waitFor } from '../support/operation-harness';
import { containerNameOf } from '../../common/sandbox-names';
import { removeSandboxes } from '../support/hands';

const docker = new Docker();
const exec = (container: string, script: string): string =>
  execFileSync('docker', ['exec', '-u', AGENT_USER, container, 'bash', '-c', script], { encoding: 'utf8' });
const tryExec = (container: string, script: string): string | undefined => {
  try {
    return exec(container, script);
  } catch {
    return undefined;
  }
};

describe('faults during an operation', () => {
  it('completes after the Temporal server is SIGKILLed and restarted on the same SQLite file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-server-kill-'));
    const { temporalCli, workflowBundlePath, sandboxImage } = testPlatform();
    const port = await freePort();
    const start = () =>
      startDevServer({
        cli: { path: temporalCli, source: 'env' },
        port,
        dbFile: path.join(dir, 'dev.sqlite'),
        logFile: path.join(dir, 'server.log'),
      });
    let server = await start();
    const model = await startScriptedModelServer({
      script: [
        {
          toolCalls: [
            {
              name: 'bash',
              input: {
                command:
                  'echo before >> /workspace/log.txt; while [ ! -f /workspace/release ]; do sleep 0.05; done; echo after >> /workspace/log.txt',
              },
            },
          ],
        },
        { toolCalls: [{ name: 'bash', input: { command: 'cat /workspace/log.txt' } }] },
        { respond: (request) => ({ text: request.toolResults[0]?.content ?? '' }) },
      ],
    });
    const connection = await Connection.connect({ address: server.address });
    const nativeConnection = await NativeConnection.connect({ address: server.address });
    const client = new Client({ connection });
    const session = `server-kill-${process.pid}`;
    const workers = [
      await createBrainWorker({
        connection: nativeConnection,
        namespace: 'default',
        taskQueue: 'sk-brain',
        client,
        modelSettings: testModelSettings(model.url),
        workflowBundle: { codePath: workflowBundlePath },
      }),
      await createHandsWorker({
        connection: nativeConnection,
        namespace: 'default',
        taskQueue: 'sk-hands',
        docker,
        image: sandboxImage,
      }),
    ];
    const running = workers.map((w) => w.run());
    try {
      const handle = await client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: 'sk-brain',
        workflowId: session,
        args: [{ goal: 'survive a server crash', handsTaskQueue: 'sk-hands', heartbeatTimeoutMs: 5_000 }],
      });
      await waitFor(
        async () => tryExec(containerNameOf(session), 'cat /workspace/log.txt')?.includes('before'),
        'the tool to start',
      );
      await server.kill();
      server = await start();
      exec(containerNameOf(session), 'touch /workspace/release');
      const result = await operationResult(client.workflow.getHandle(session));
      expect(result.state).toBe('completed');
      expect(result.finalText.trim().split('\n').slice(0, 2)).toEqual(['before', 'after']);
      expect(handle.workflowId).toBe(session);
    } finally {
      workers.forEach((w) => w.getState() === 'RUNNING' && w.shutdown());
      await Promise.all(running);
      await connection.close();
      await nativeConnection.close();
      await model.stop();
      await server.stop();
      await removeSandboxes([session]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a never tool interrupted by a container death, then goes on in a new container', async () => {
    const h = await startOperationHarness([
      { toolCalls: [{ name: 'bash', input: { command: 'echo effect >> /workspace/effects.log; sleep 600' } }] },
      {
        respond: (request) => ({
          text: request.toolResults[0]?.content ?? '',
          toolCalls: [{ name: 'bash', input: { command: 'cat /workspace/effects.log' } }],
        }),
      },
      { respond: (request) => ({ text: request.toolResults[0]?.content ?? '' }) },
    ]);
    try {
      const handle = await h.start({ goal: 'lose the container mid-command' });
      const container = containerNameOf(handle.workflowId);
      await waitFor(
        async () => (tryExec(container, 'pgrep -f "sleep 60[0]" || true') ?? '').trim() !== '',
        'the command to run',
      );
      await docker.getContainer(container).kill();
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      const requests = h.model.requests.filter((r) => r.status === 200);
      const interrupted = JSON.stringify(
        (requests[1].body as { messages: Array<{ content: unknown }> }).messages.at(-1)!.content,
      );
      expect(interrupted).toContain('[interrupted:');
      expect(interrupted).toContain('sandbox restarted');
      expect(result.finalText.trim().split('\n')[0]).toBe('effect'); // it ran once, and was not run again
      expect(result.finalText).not.toMatch(/effect\s+effect/);
      const status = await handle.query(statusQuery);
      expect(status.state).toBe('completed');
    } finally {
      await h.close();
    }
  });
});
