/**
 * The sandbox's place in an operation's life, on the real Temporal server, Docker and the scripted
 * model: a lazy operation (the default) asks the model before any container exists, and makes one
 * only for its first tool call; and when its hands cannot reach their Docker engine, `agent doctor`'s
 * diagnosis names the operation `sandbox-gone` with the failure and the fix, until the engine
 * is back and the retried call goes on.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { diagnose } from '../../cli/doctor';
import { temporalSettings } from '../../client/connection-settings';
import { operationResult } from '../../client/operation-result';
import { containerNameOf } from '../../common/sandbox-names';
import { createHandsWorker } from '../../workers/workers';
import { testPlatform } from '../support/env';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';

/** Whether the session's container exists now (the scripted model asks while the request waits). */
function containerExists(sessionId: string): boolean {
  try {
    execFileSync('docker', ['container', 'inspect', containerNameOf(sessionId)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe("the sandbox in an operation's life", () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('sends the first model request of a lazy operation before any container exists', async () => {
    const sessionId = `lazy-${randomUUID().slice(0, 8)}`;
    h.removeOnClose(sessionId);
    const seen: boolean[] = [];
    h.model.setScript([
      {
        respond: () => {
          seen.push(containerExists(sessionId));
          return { toolCalls: [{ name: 'bash', input: { command: 'echo in the sandbox' } }] };
        },
      },
      {
        respond: (request) => {
          seen.push(containerExists(sessionId));
          return { text: `got: ${request.toolResults[0]?.content.trim()}` };
        },
      },
    ]);
    const result = await operationResult(await h.start({ goal: 'lazy', keepContainer: true }, sessionId));
    expect(result.state).toBe('completed');
    expect(result.finalText).toContain('got: in the sandbox');
    // No container when the model was first asked; the first tool call made it.
    expect(seen).toEqual([false, true]);
  });

  it('is named sandbox-gone by agent doctor while its hands cannot reach Docker', async () => {
    const deadQueue = `hands-dead-docker-${randomUUID().slice(0, 8)}`;
    const { namespace, sandboxImage, temporalAddress } = testPlatform();
    // A hands worker whose Docker engine does not answer, as on a host whose engine died.
    const broken: Worker = await createHandsWorker({
      connection: h.temporal.nativeConnection,
      namespace,
      taskQueue: deadQueue,
      docker: new Docker({ socketPath: `/nonexistent/docker-${randomUUID().slice(0, 8)}.sock` }),
      image: sandboxImage,
    });
    let running = broken.run();
    const operationId = `sandbox-gone-${randomUUID().slice(0, 8)}`;
    h.removeOnClose(operationId);
    h.model.setScript([
      { toolCalls: [{ name: 'bash', input: { command: 'echo the engine is back' } }] },
      { respond: (request) => ({ text: `got: ${request.toolResults[0]?.content.trim()}` }) },
    ]);
    const handle = await h.start({ goal: 'use a lost sandbox', handsTaskQueue: deadQueue }, operationId);
    // The doctor's own diagnosis, in this process: the finding must be seen while the call retries.
    const settings = temporalSettings({
      ...process.env,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
    });
    const doctor = () => diagnose({ settings, listSandboxes: async () => [] });
    let healthy: Worker | undefined;
    try {
      const finding = await waitFor(
        async () => (await doctor()).findings.find((f) => f.kind === 'sandbox-gone' && f.subject === operationId),
        'agent doctor to report the operation sandbox-gone',
      );
      expect(finding.reason).toMatch(/failed \d+ time\(s\): .*the Docker engine did not answer/);
      expect(finding.fix).toBe(`agent sandbox ls   # then fix the Docker host, or: agent abort ${operationId}`);

      // The engine comes back (a worker that reaches it takes the queue over): the retry succeeds.
      broken.shutdown();
      await running;
      healthy = await createHandsWorker({
        connection: h.temporal.nativeConnection,
        namespace,
        taskQueue: deadQueue,
        docker: h.docker,
        image: sandboxImage,
      });
      running = healthy.run();
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      expect(result.finalText).toContain('got: the engine is back');
      expect((await doctor()).findings.filter((f) => f.subject === operationId)).toEqual([]);
    } finally {
      for (const worker of [broken, healthy]) if (worker?.getState() === 'RUNNING') worker.shutdown();
      await running;
    }
  });
});
