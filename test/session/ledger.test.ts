/**
 * The session's ledger on the real Temporal server, Docker and the scripted model: after operations
 * in two lanes, `agent report <session>` (its data, `client/session-report.ts`) adds up to exactly
 * what the operations say they used — per lane and for the session — and agrees with the session's
 * own count, which it publishes as `AgentTokens` / `AgentCostUsd` and shows in its details.
 */
import { sessionReport } from '../../client/session-report';
import { addUsage, totalTokens, ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import type { OperationResult } from '../../common/operation';
import { sessionWorkflowId } from '../../common/session';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { renderSessionReport } from '../../cli/report';
import { conversations } from '../support/conversations';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const sum = (results: OperationResult[]) => ({
  operations: results.length,
  usage: results.reduce<TokenUsage>((total, r) => addUsage(total, r.usage), { ...ZERO_USAGE }),
  costUsd: results.reduce((total, r) => total + r.costUsd, 0),
});

describe("a session's ledger", () => {
  let s: SessionHarness;
  beforeAll(async () => {
    s = await startSessionHarness();
  });
  afterAll(async () => {
    await s.close();
  });

  it('reports per lane and in all exactly the sum of its operations, and publishes it', async () => {
    s.h.model.setScript(
      conversations({
        'ledger one': [{ toolCalls: [{ name: 'bash', input: { command: 'echo counted' } }] }, { text: 'one done' }],
        'ledger two': [{ text: 'two done' }],
        'ledger docs': [
          { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'notes\n' } }] },
          { text: 'docs done' },
        ],
      }),
    );
    const sessionId = s.newSession('ledger');
    const ids: string[] = [];
    const run = async (prompt: string, lane?: string) => {
      const { operationId } = await s.submit(sessionId, { prompt, ...(lane ? { lane } : {}) });
      ids.push(operationId);
      return s.result(operationId);
    };
    const one = await run('ledger one');
    const docs = await run('ledger docs', 'docs');
    const two = await run('ledger two');
    expect([one, docs, two].map((r) => r.state)).toEqual(['completed', 'completed', 'completed']);

    const main = sum([one, two]);
    const all = sum([one, two, docs]);
    const report = await waitFor(async () => {
      const candidate = await sessionReport(s.h.temporal.client, sessionId);
      return candidate.recorded?.operations === 3 ? candidate : undefined;
    }, 'the session to count its three operations');
    expect(report.operations.map((row) => [row.operationId, row.lane, row.state])).toEqual([
      [ids[0], 'main', 'completed'],
      [ids[1], 'docs', 'completed'],
      [ids[2], 'main', 'completed'],
    ]);
    expect(report.session.operations).toBe(3);
    expect(report.session.usage).toEqual(all.usage);
    expect(report.session.costUsd).toBeCloseTo(all.costUsd, 9);
    const lanes = Object.fromEntries(report.lanes.map((lane) => [lane.lane, lane]));
    expect(lanes.main).toMatchObject({ operations: 2, usage: main.usage });
    expect(lanes.main!.costUsd).toBeCloseTo(main.costUsd, 9);
    expect(lanes.docs).toMatchObject({ operations: 1, usage: docs.usage });
    // The session's own count agrees to the token.
    expect(report.consistent).toBe(true);
    expect(report.recorded!.usage).toEqual(all.usage);
    expect(report.recorded!.lanes.main!.usage).toEqual(main.usage);
    expect(report.recorded!.lanes.docs!.usage).toEqual(docs.usage);

    const text = renderSessionReport(report);
    expect(text.split('\n')[0]).toBe(
      `session ${sessionId} — 3 operations · ${totalTokens(all.usage).toLocaleString('en-US')} tokens · $${all.costUsd.toFixed(4)}`,
    );
    expect(text).toContain(`lane docs: 1 operation · ${totalTokens(docs.usage).toLocaleString('en-US')} tokens`);
    expect(text).toContain('(agrees with its operations)');

    const session = s.h.temporal.client.workflow.getHandle(sessionWorkflowId(sessionId));
    const attributes = (await session.describe()).typedSearchAttributes;
    expect(attributes.get(SEARCH_ATTRIBUTES.tokens)).toBe(totalTokens(all.usage));
    expect(attributes.get(SEARCH_ATTRIBUTES.costUsd)).toBeCloseTo(all.costUsd, 5); // published rounded to the micro-dollar
    const metadata = await session.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`tokens: ${totalTokens(all.usage)} (input ${all.usage.input}`);
    expect(metadata.currentDetails).toContain(`- lane \`docs\`: idle`);
    expect(metadata.currentDetails).toContain(`${totalTokens(docs.usage)} tokens · $${docs.costUsd.toFixed(4)}`);
  });
});
