/**
 * A model fault storm: 50 operations at once against the scripted Messages API, where 30% of all
 * model requests fail — in turn a 429 with `retry-after`, a 529, a 500, a stream cut mid-way and a
 * stream that stalls until the client gives up. Every operation completes, and the tokens in the
 * operations' ledgers equal, field by field, what the server itself reported sending: nothing lost,
 * nothing counted twice. Product retry presets; only the stream idle timeout (a product setting,
 * AGENT_MODEL_IDLE_TIMEOUT_MS) is short so a stall costs seconds.
 */
import { operationResult } from '../../client/operation-result';
import type { OperationResult } from '../../common/operation';
import type { ReportedUsage } from '../../scripted-model/server';
import type { ScriptedFault, ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { startOperationHarness, type OperationHarness } from '../support/operation-harness';

const OPERATIONS = 50;
/** Requests whose arrival index ends in one of these digits fail: 3 in 10. */
const FAILING_DIGITS = new Set([2, 5, 8]);
const IDLE_TIMEOUT_MS = 3_000;
const FAULTS: ScriptedFault[] = [
  { type: 'rate_limit', retryAfterSeconds: 1 },
  { type: 'overloaded' },
  { type: 'server_error', status: 500 },
  { type: 'drop_connection', afterBlocks: 1 },
  { type: 'stall', ms: 2 * IDLE_TIMEOUT_MS, afterBlocks: 1 },
];

/** Each operation: two turns whose tool call is refused (no sandbox needed), then the answer. */
function turnOf(request: ScriptedRequest): ScriptedTurn | undefined {
  const goal = request.body.messages[0]?.content;
  const op = /storm operation (\d+)/.exec(typeof goal === 'string' ? goal : JSON.stringify(goal))?.[1];
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
  if (op === undefined) return undefined;
  if (turn < 2) {
    return {
      text: `operation ${op}, step ${turn + 1}: checking`,
      toolCalls: [{ name: 'bash', input: { command: 'true', retries: 3 } }],
    };
  }
  return turn === 2 ? { text: `done ${op}` } : undefined;
}

let failed = 0;
function storm(request: ScriptedRequest): ScriptedTurn | undefined {
  const turn = turnOf(request);
  if (!turn || !FAILING_DIGITS.has(request.requestIndex % 10)) return turn;
  return { ...turn, fault: FAULTS[failed++ % FAULTS.length] };
}

const total = (u: ReportedUsage | null) =>
  u
    ? {
        input: u.input_tokens,
        cacheWrite: u.cache_creation_input_tokens,
        cacheRead: u.cache_read_input_tokens,
        output: u.output_tokens,
      }
    : undefined;

describe('model fault storm', () => {
  let h: OperationHarness;
  afterAll(async () => h?.close());

  it('completes 50 operations with 30% of model requests failing, and the ledger matches the server exactly', async () => {
    h = await startOperationHarness(storm, { modelSettings: { streamIdleTimeoutMs: IDLE_TIMEOUT_MS } });
    const handles = await Promise.all(
      Array.from({ length: OPERATIONS }, (_, i) => h.start({ goal: `storm operation ${i}` })),
    );
    const results: OperationResult[] = await Promise.all(handles.map((handle) => operationResult(handle)));

    expect(results.map((r) => r.state)).toEqual(Array(OPERATIONS).fill('completed'));
    expect(results.map((r) => r.finalText)).toEqual(results.map((_, i) => `done ${i}`));

    const requests = h.model.requests.filter((r) => r.path === '/v1/messages');
    const faulted = requests.filter((r) => FAILING_DIGITS.has(r.index % 10));
    expect(requests.length).toBeGreaterThanOrEqual(OPERATIONS * 3);
    expect(Math.abs(faulted.length / requests.length - 0.3)).toBeLessThanOrEqual(0.01);
    // Every kind of fault happened, and each faulted request really failed.
    expect(failed).toBe(faulted.length);
    expect(faulted.every((r) => r.status !== 200 || r.error !== null || r.clientDisconnected)).toBe(true);

    const server = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
    for (const request of requests) {
      const usage = total(request.reportedUsage);
      if (!usage) continue;
      server.input += usage.input;
      server.cacheWrite += usage.cacheWrite;
      server.cacheRead += usage.cacheRead;
      server.output += usage.output;
    }
    const ledger = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
    for (const r of results) {
      ledger.input += r.usage.input;
      ledger.cacheWrite += r.usage.cacheWrite;
      ledger.cacheRead += r.usage.cacheRead;
      ledger.output += r.usage.output;
    }
    expect(ledger).toEqual(server);
    expect(server.input + server.cacheWrite + server.cacheRead).toBeGreaterThan(0);
  }, 600_000);
});
