/**
 * Session faults on a dev server of its own, SIGKILLed and restarted on the same SQLite file while a
 * follow-up is queued behind an operation that waits for approval: nothing is lost — the approval
 * still waits, the follow-up still runs afterwards, each exactly once.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decideToolCall } from '../../client/approvals';
import { statusQuery } from '../../common/operation';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import type { ScriptedRequest } from '../../scripted-model/script';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

describe('session faults', () => {
  it('keeps a waiting approval and a queued follow-up across a server SIGKILL and restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-session-restart-'));
    const port = await freePort();
    const start = () =>
      startDevServer({
        cli: { path: testPlatform().temporalCli, source: 'env' },
        port,
        dbFile: path.join(dir, 'dev.sqlite'),
        logFile: path.join(dir, 'server.log'),
      });
    let server: DevServer = await start();
    let s: SessionHarness | undefined;
    try {
      s = await startSessionHarness(
        conversations({
          'restart first': [
            {
              toolCalls: [
                { id: 'toolu_restart_ask', name: 'bash', input: { command: 'echo ran >> /workspace/runs.log' } },
              ],
            },
            { text: 'first done' },
          ],
          'restart follow-up': [
            { toolCalls: [{ name: 'bash', input: { command: 'cat /workspace/runs.log' } }] },
            { respond: (request: ScriptedRequest) => ({ text: `log: ${request.toolResults[0]?.content}` }) },
          ],
        }),
        { temporalAddress: server.address },
      );
      const harness = s;
      const sessionId = harness.newSession('restart');
      const first = await harness.submit(sessionId, { prompt: 'restart first', approvals: { bash: 'ask' } });
      const handle = harness.operation(first.operationId);
      await waitFor(async () => (await handle.query(statusQuery)).waitingApproval, 'the approval');
      const followUp = await harness.submit(sessionId, 'restart follow-up');
      expect(followUp.state).toBe('queued');

      await server.kill();
      server = await start();

      const waiting = await waitFor(
        async () => (await handle.query(statusQuery).catch(() => undefined))?.waitingApproval,
        'the operation to answer again',
        120_000,
      );
      expect(waiting.toolCallId).toBe('toolu_restart_ask');
      const queued = await harness.status(sessionId);
      expect(queued.lanes[0].queued.map((q) => q.operationId)).toEqual([followUp.operationId]);
      await decideToolCall(harness.h.temporal.client.workflow, {
        operationId: first.operationId,
        toolCallId: 'toolu_restart_ask',
        approve: true,
      });
      expect((await harness.result(first.operationId)).finalText).toBe('first done');
      const result = await harness.result(followUp.operationId);
      expect(result.finalText).toBe('log: ran\n[exit code 0]');
      // The session records an operation's end in its own next workflow task, after the operation's
      // result is already readable: wait for that record instead of reading it once.
      const ended = await waitFor(async () => {
        const states = (await harness.status(sessionId)).operations.map((o) => o.state);
        return states.every((state) => state !== 'running' && state !== 'queued') ? states : undefined;
      }, 'the session to record both operations ended');
      expect(ended).toEqual(['completed', 'completed']);
    } finally {
      await s?.close();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
