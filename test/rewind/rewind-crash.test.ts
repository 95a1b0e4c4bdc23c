/**
 * A rewind survives a worker killed (SIGKILL, as a power cut) while it restores the workspace: the
 * worker process is told to kill itself at a named boundary (`AGENT_CRASH_AT_POINT`) — once the
 * container writing the new workspace has started, and once the restore has finished but before the
 * server has recorded it. While no worker runs there is no new session; a second worker finishes the
 * rewind, and the session it makes is complete: its lane continues the conversation on the files of
 * the turn. Real worker processes, Temporal server, Docker engine and scripted model.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { operationResult } from '../../client/operation-result';
import { runRewind } from '../../client/rewind';
import { submitPrompt } from '../../client/session';
import { RESTORE_CHECKPOINT_ACTIVITY, type RestoredWorkspace } from '../../common/checkpoints';
import { sessionWorkflowId } from '../../common/session';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { conversations, type RequestBody } from '../support/conversations';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

jest.setTimeout(600_000);

const LIST = `echo '<<<'; cd /workspace && find . -type f | sort | xargs -r -d '\\n' sha256sum | cut -c1-16,65-; echo '>>>'`;

const CRASH_POINTS = ['checkpoint: restoring the workspace', `activity completed: ${RESTORE_CHECKPOINT_ACTIVITY}`];

describe('a worker killed during a rewind’s restore', () => {
  let model: ScriptedModelServer;
  let server: TestTemporal;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewind-crash-'));
  const sessions: string[] = [];
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    model = await startScriptedModelServer({
      script: conversations({
        'crash original': [
          { label: 'first', toolCalls: [{ name: 'bash', input: { command: 'echo first > first.txt' } }] },
          { label: 'second', toolCalls: [{ name: 'bash', input: { command: 'echo second > second.txt' } }] },
          { label: 'done', text: 'original done' },
        ],
        'crash rewound': [
          { label: 'list', toolCalls: [{ name: 'bash', input: { command: LIST } }] },
          { label: 'rewound done', text: 'rewound done' },
        ],
      }),
    });
    server = await connectTestTemporal();
  });
  afterAll(async () => {
    for (const worker of workers) await worker.kill();
    for (const id of sessions) {
      await server.client.workflow
        .getHandle(sessionWorkflowId(id))
        .terminate('test finished')
        .catch(() => undefined);
    }
    await removeSandboxes(sessions);
    await model.stop();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const startWorker = (queues: { brainQueue: string; handsQueue: string }, env: Record<string, string> = {}) => {
    const worker = startWorkerProcess({ ...queues, modelUrl: model.url, env });
    workers.push(worker);
    return worker;
  };
  const polled = (queue: string) =>
    waitFor(
      async () => {
        const description = await server.client.workflowService.describeTaskQueue({
          namespace: testPlatform().namespace,
          taskQueue: { name: queue },
        });
        return (description.pollers ?? []).length > 0;
      },
      `a worker to poll ${queue}`,
      120_000,
    );

  it.each(CRASH_POINTS)('at "%s": no new session until a worker finishes it, then a complete one', async (point) => {
    const id = `rwc-${randomUUID().slice(0, 6)}`;
    const queues = { brainQueue: `${id}-brain`, handsQueue: `${id}-hands` };
    const original = `${id}-orig`;
    const forked = `${id}-fork`;
    sessions.push(original, forked);
    const log = path.join(dir, `${id}.boundaries`);
    const first = startWorker(queues, { AGENT_CRASH_LOG: log, AGENT_CRASH_AT_POINT: `${point}#1` });
    await polled(queues.brainQueue);

    const accepted = await submitPrompt(server.client, {
      sessionId: original,
      prompt: { prompt: 'crash original' },
      session: { handsTaskQueue: queues.handsQueue },
      taskQueue: queues.brainQueue,
    });
    const result = await operationResult(server.client.workflow.getHandle(accepted.operationId));
    expect(result).toMatchObject({ state: 'completed', turns: 3 });

    const rewound = runRewind(server.client, {
      input: { operationId: accepted.operationId, toTurn: 1, sessionId: forked, prompt: 'crash rewound' },
      taskQueue: queues.brainQueue,
    });
    rewound.catch(() => undefined);
    // The worker kills itself at the boundary; the test waits for it to have done so.
    await waitFor(
      async () => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes(`\t${point}\n`),
      `the worker to reach "${point}"`,
      120_000,
    );
    await first.kill();
    const sessionHandle = server.client.workflow.getHandle(sessionWorkflowId(forked));
    await expect(sessionHandle.describe()).rejects.toThrow();

    startWorker(queues);
    const done = await rewound;
    expect(done).toMatchObject({ sessionId: forked, lane: 'main', from: { operationId: accepted.operationId } });

    // The restore ran again after the kill, and its result is the one the session was made with.
    const events = (await server.client.workflow.getHandle(`rewind-${forked}`).fetchHistory()).events ?? [];
    const restoreScheduled = events.find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === RESTORE_CHECKPOINT_ACTIVITY,
    );
    const started = events.find(
      (event) =>
        event.activityTaskStartedEventAttributes &&
        String(event.activityTaskStartedEventAttributes.scheduledEventId) === String(restoreScheduled?.eventId),
    );
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
    const childStarts = events.filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes);
    expect(childStarts).toHaveLength(1);

    // A complete session: its lane continues after turn 1, on the files turn 1 left.
    const operation = await operationResult(server.client.workflow.getHandle(done.operationId!));
    expect(operation).toMatchObject({ state: 'completed', finalText: 'rewound done' });
    const listed = model.requests
      .filter((request) => request.status === 200)
      .map((request) => (request.body as RequestBody).messages)
      .filter((messages) => JSON.stringify(messages).includes('crash rewound'))
      .at(-1)!;
    const toolResult = JSON.stringify(listed.at(-1)!.content);
    expect(toolResult).toContain('./first.txt');
    expect(toolResult).not.toContain('second.txt');
    expect(done.files).toBeGreaterThan(0);
    expect((restoredOf(events) ?? { files: -1 }).files).toBe(done.files);
  });
});

/** The result of the rewind's restore activity, as its history recorded it. */
function restoredOf(events: temporal.api.history.v1.IHistoryEvent[]): RestoredWorkspace | undefined {
  const scheduled = events.find(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === RESTORE_CHECKPOINT_ACTIVITY,
  );
  const completed = events.find(
    (event) => String(event.activityTaskCompletedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
  );
  const payload = completed?.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload<RestoredWorkspace>(payload) : undefined;
}
