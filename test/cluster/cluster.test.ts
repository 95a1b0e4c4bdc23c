/**
 * On the real Temporal cluster of `npm run cluster` (four services in four processes, PostgreSQL for
 * persistence and visibility, several history shards), run by `.ci/run`'s cluster stage with
 * `TEMPORAL_ADDRESS` pointing at it (`npm run test:cluster`): operations complete with their tool
 * calls; the history service SIGKILLed while six operations wait inside a tool call, then started
 * again, costs nothing — every operation completes, and every command ran exactly once (the
 * workspaces' effect logs); the `AgentStatus` filter answers from PostgreSQL's visibility store.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { operationResult } from '../../client/operation-result';
import type { ScriptedTurn } from '../../scripted-model/script';
import { containerNameOf } from '../../common/sandbox-names';
import {
  clusterLayout,
  devServerVersion,
  ensureServerBinaries,
  servicePid,
  startService,
  stopService,
  waitServing,
} from '../../platform/temporal-cluster';
import { removeSandboxes } from '../support/hands';
import { testPlatform } from '../support/env';
import { startOperationHarness, waitFor, type OperationHarness } from '../support/operation-harness';

/** A command in the operation's sandbox, as the agent (uid 1000). */
const sh = (sessionId: string, script: string): string =>
  execFileSync('docker', ['exec', '-u', '1000', containerNameOf(sessionId), 'bash', '-c', script], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

describe('the harness on a real Temporal cluster', () => {
  let h: OperationHarness;
  const sessions: string[] = [];

  beforeAll(async () => {
    const layout = clusterLayout(await devServerVersion());
    if (testPlatform().temporalAddress !== layout.address)
      throw new Error(
        `these tests run on the cluster of \`npm run cluster\` (${layout.address}), not ${testPlatform().temporalAddress}: use npm run test:cluster`,
      );
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h?.close();
    await removeSandboxes(sessions);
  });

  it('runs operations with tools, and survives the history service killed mid-run', async () => {
    const layout = clusterLayout(await devServerVersion());
    expect(layout.shards).toBeGreaterThan(1);
    for (const service of ['history', 'matching', 'frontend', 'worker'] as const)
      expect(servicePid(layout, service)).toBeDefined();

    // Each operation's first call logs its effect, then waits for the test to release it.
    const release = '/workspace/.release';
    const ids = Array.from({ length: 6 }, () => `cluster-${randomUUID().slice(0, 8)}`);
    sessions.push(...ids);
    const scripts = new Map<string, ScriptedTurn[]>(
      ids.map((id) => [
        id,
        [
          {
            toolCalls: [
              {
                name: 'bash',
                input: { command: `echo ${id} >> /workspace/effects.log; until [ -f ${release} ]; do sleep 0.1; done` },
              },
            ],
          },
          { toolCalls: [{ name: 'bash', input: { command: 'wc -l < /workspace/effects.log' } }] },
          { text: `done ${id}` },
        ],
      ]),
    );
    // Each operation's turn from its own conversation: the goal names it, the messages count its turns.
    h.model.setScript((request) => {
      const body = JSON.stringify(request.body.messages[0]);
      const id = ids.find((candidate) => body.includes(candidate));
      return id ? scripts.get(id)![Math.floor(request.body.messages.length / 2)] : undefined;
    });
    const handles = await Promise.all(
      ids.map((id) => h.start({ goal: `cluster operation ${id}`, sessionId: id, keepContainer: true }, id)),
    );
    // Every operation is inside its first call (its effect is logged) before the kill.
    for (const id of ids)
      await waitFor(async () => {
        try {
          return sh(id, 'cat /workspace/effects.log 2>/dev/null').trim() === id;
        } catch {
          return false;
        }
      }, `${id} inside its first tool call`);

    await stopService(layout, 'history', 'SIGKILL');
    expect(servicePid(layout, 'history')).toBeUndefined();
    startService(layout, await ensureServerBinaries(layout.version), 'history');
    await waitServing(layout);
    for (const id of ids) sh(id, `touch ${release}`);

    const results = await Promise.all(handles.map((handle) => operationResult(handle)));
    for (const [index, result] of results.entries()) {
      expect(result.state).toBe('completed');
      expect(result.finalText).toBe(`done ${ids[index]}`);
      // Exactly once: the first call's effect is in its log once, whatever the server went through.
      expect(sh(ids[index]!, 'cat /workspace/effects.log')).toBe(`${ids[index]}\n`);
    }

    // The AgentStatus filter answers from the cluster's visibility store (PostgreSQL).
    const query = `AgentStatus = 'completed'`;
    const listed = await waitFor(async () => {
      const found: string[] = [];
      for await (const execution of h.temporal.client.workflow.list({ query })) found.push(execution.workflowId);
      return ids.every((id) => found.includes(id)) ? found : undefined;
    }, 'the completed operations in the AgentStatus filter');
    expect(listed).toEqual(expect.arrayContaining(ids));
  });
});
