/**
 * The token ledger and `agent report` against the scripted server's own usage log, reactive
 * compaction on a refused request, compactions that fail, and the inputs and Updates around them.
 * Prompt-cache writes use the 1-hour TTL here, so the 5 min / 1 h split is checked too.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFile, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import type { OperationTokenReport } from '../../client/token-report';
import { operationResult } from '../../client/operation-result';
import { COMPACTION_REQUEST_MARKER } from '../../common/context';
import { promptTokens, type TokenUsage } from '../../common/model-types';
import { compactUpdate, statusQuery, switchModelUpdate } from '../../common/operation';
import { costUsd } from '../../common/pricing';
import { containerNameOf } from '../../common/sandbox-names';
import { PROJECT_ROOT } from '../../platform/paths';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import type { RecordedRequest } from '../../scripted-model/server';
import { testPlatform } from '../support/env';
import { isCompactionRequest, recordedStepsOf } from '../support/context-scripts';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');
const agent = (args: string[]) =>
  run(AGENT, args, {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: testPlatform().temporalAddress,
      TEMPORAL_NAMESPACE: testPlatform().namespace,
    },
  });

/** What the scripted server answered, summed: the usage it billed. */
function serverUsage(requests: readonly RecordedRequest[]): TokenUsage {
  const usage: TokenUsage = { input: 0, cacheWrite: 0, cacheRead: 0, output: 0 };
  let oneHour = 0;
  for (const r of requests) {
    if (!r.usage) continue;
    usage.input += r.usage.input_tokens;
    usage.cacheWrite += r.usage.cache_creation_input_tokens;
    usage.cacheRead += r.usage.cache_read_input_tokens;
    usage.output += r.usage.output_tokens;
    oneHour += r.usage.cache_creation.ephemeral_1h_input_tokens;
  }
  if (oneHour > 0) usage.cacheWrite1h = oneHour;
  return usage;
}

const bash = (command: string): ScriptedTurn => ({ toolCalls: [{ name: 'bash', input: { command } }] });
const big = (turn: number, chars = 3000) => bash(`printf 'output ${turn} %0${chars}d\\n' 0`);

/** A script of `turns` big outputs and a final answer, answering compactions with `summary`. */
function withSummaries(
  turns: ScriptedTurn[],
  summary: (n: number) => ScriptedTurn = (n) => ({ text: `summary ${n}` }),
) {
  let compactions = 0;
  let next = 0;
  return (request: ScriptedRequest): ScriptedTurn | undefined => {
    if (isCompactionRequest(request)) return summary(++compactions);
    return turns[next++];
  };
}

describe('the token ledger and agent report (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness([], { modelSettings: { promptCacheTtl: '1h' } });
  });
  afterAll(async () => {
    await h.close();
  });

  it('agent report matches the scripted server’s own usage totals exactly', async () => {
    // Big outputs with old ones cleared in batches, a 429 (retried, nothing billed), a 413 (one
    // reactive compaction), 1-hour cache writes throughout.
    const turns: ScriptedTurn[] = [
      ...Array.from({ length: 6 }, (_, i) => big(i + 1)),
      { fault: { type: 'rate_limit', retryAfterSeconds: 1 } },
      big(7),
      { fault: { type: 'http_error', status: 413, errorType: 'request_too_large' } },
      big(8),
      big(9),
      { text: 'done' },
    ];
    h.model.setScript(withSummaries(turns));
    const first = h.model.requests.length;
    const handle = await h.start({
      goal: 'print big outputs',
      context: { windowTokens: 12_000, keepTurns: 1, editing: { atPct: 25, keepTurns: 1, minClearTokens: 1000 } },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const served = h.model.requests.slice(first);
    const billed = serverUsage(served);
    expect(billed.cacheWrite1h).toBeGreaterThan(0);

    const { stdout } = await agent(['report', handle.workflowId, '--json']);
    const report = JSON.parse(stdout) as OperationTokenReport;
    expect(report.historyTotals.usage).toEqual(billed);
    expect(report.economy!.usage).toEqual(billed);
    expect(result.tokens.usage).toEqual(billed);
    expect(result.usage).toEqual(billed);
    expect(report.consistent).toBe(true);
    const answered = served.filter((r) => r.usage);
    expect(report.economy!.requests).toBe(answered.length);
    expect(report.economy!.peakPromptTokens).toBe(
      Math.max(
        ...answered.map(
          (r) => r.usage!.input_tokens + r.usage!.cache_creation_input_tokens + r.usage!.cache_read_input_tokens,
        ),
      ),
    );
    expect(report.economy!.cacheHitRate).toBeCloseTo(billed.cacheRead / promptTokens(billed), 12);
    expect(report.economy!.costUsd).toBeCloseTo(costUsd(billed, 'scripted-model'), 12);
    // It compacted and cleared old tool results on the way, and says what that saved.
    expect(report.economy!.compactions).toBeGreaterThanOrEqual(1);
    expect(report.economy!.editBatches).toBeGreaterThanOrEqual(1);
    expect(report.economy!.saved.contextEditing.tokens).toBeGreaterThan(0);
    expect(report.economy!.saved.compaction.tokens).toBeGreaterThan(0);
    expect(report.economy!.saved.promptCaching.usd).toBeGreaterThan(0);
    expect(report.steps.filter((s) => s.kind === 'compaction')).toHaveLength(report.economy!.compactions);
    expect(report.steps.some((s) => (s.clearedResults ?? 0) > 0)).toBe(true);
    // The same model turns in one growing conversation: every answered turn, its output, and a
    // conversation larger than anything this run sent (it compacted and cleared).
    const modelTurns = report.steps.filter((s) => s.kind === 'model' && s.status === 'ok');
    expect(report.growing.requests).toBe(modelTurns.length);
    expect(report.growing.output).toBe(modelTurns.reduce((sum, s) => sum + s.usage!.output, 0));
    expect(report.growing.finalTokens).toBeGreaterThan(report.economy!.peakPromptTokens);
    expect(report.growing.cacheWrite + report.growing.cacheRead).toBe(report.growing.promptTokens);

    const text = (await agent(['report', handle.workflowId, '--steps'])).stdout;
    expect(text).toMatch(
      /one growing context \(every turn kept, as resuming a transcript keeps it\): ≈ \$\d+\.\d{4} for [\d,]+ prompt tokens, the conversation reaching [\d,]+ tokens/,
    );
    expect(text).toContain(`operation ${handle.workflowId} — completed (end_turn)`);
    expect(text).toMatch(/cache hit \d+\.\d% of prompt tokens · peak context \d+\.\d% of the window/);
    expect(text).toContain('compaction 1 (too-large, reduced)');
    expect(text).toMatch(/failed: turn \d+: ModelRequestTooLarge/);
    expect(text).toContain('output spill');
  });

  it('keeps the usage of a model step that finally failed, attempts included', async () => {
    h.model.setScript([
      big(1, 200),
      { text: 'x'.repeat(2000), fault: { type: 'stream_error', afterBlocks: 1 } },
      { fault: { type: 'http_error', status: 400, errorType: 'invalid_request_error', message: 'messages: broken' } },
    ]);
    const first = h.model.requests.length;
    const result = await operationResult(await h.start({ goal: 'fail after a broken stream' }));
    expect(result.state).toBe('failed');
    expect(result.reason).toContain('model step failed [ModelInvalidRequest]');
    const served = h.model.requests.slice(first);
    const broken = served.find((r) => r.error?.type === 'overloaded_error')!;
    // The broken attempt's prompt was billed; of its output, the client saw message_start's 1 token.
    const billed = serverUsage(served.filter((r) => r !== broken));
    billed.input += broken.usage!.input_tokens;
    billed.cacheWrite += broken.usage!.cache_creation_input_tokens;
    billed.cacheRead += broken.usage!.cache_read_input_tokens;
    billed.cacheWrite1h = (billed.cacheWrite1h ?? 0) + broken.usage!.cache_creation.ephemeral_1h_input_tokens;
    billed.output += 1;
    expect(result.usage).toEqual(billed);
    expect(result.tokens.failedSteps).toBe(1);
  });

  it('compacts once and retries when the API answers 413', async () => {
    h.model.setScript(
      withSummaries([
        big(1),
        big(2),
        big(3),
        { fault: { type: 'http_error', status: 413, errorType: 'request_too_large' } },
        { text: 'fits now' },
      ]),
    );
    const first = h.model.requests.length;
    const handle = await h.start({ goal: 'survive a 413', context: { keepTurns: 1 } });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('fits now');
    const steps = await recordedStepsOf(handle);
    expect(
      steps.map((s) =>
        s.kind === 'model' ? (s.failure ? `failed:${s.failure.type}` : 'model') : `compaction:${s.input.reason}`,
      ),
    ).toEqual(['model', 'model', 'model', 'failed:ModelRequestTooLarge', 'compaction:too-large', 'model']);
    const compaction = steps[4]!;
    expect(compaction.kind === 'compaction' && compaction.input.reduced).toBe(true);
    // The summary request had the old tool results stubbed.
    const summaryCall = h.model.requests.slice(first).find((r) => r.rawBody.includes(COMPACTION_REQUEST_MARKER))!;
    expect(summaryCall.rawBody).toContain('[cleared: ');
  });

  it('compacts once and retries on the API’s prompt-too-long 400, then fails if it still does not fit', async () => {
    // The harness plans with a 200k window; the server's is 6k.
    const small = await startOperationHarness([], { model: { contextWindowTokens: 6_000 } });
    try {
      small.model.setScript(withSummaries([big(1, 7000), big(2, 7000), big(3, 7000), { text: 'fits now' }]));
      const handle = await small.start({
        goal: 'the window is smaller than the harness thinks',
        context: { keepTurns: 1 },
      });
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      const steps = await recordedStepsOf(handle);
      const failed = steps.filter((s) => s.failure);
      expect(failed.map((s) => s.failure!.type)).toEqual(['ModelPromptTooLong']);
      expect(steps.filter((s) => s.kind === 'compaction').map((s) => s.input.reason)).toEqual(['too-large']);

      // The summary call fits, but the summary makes the retried request too long: one
      // compaction, one retry, then failed.
      small.model.setScript(
        withSummaries([big(1, 6000), big(2, 6000), big(3, 10_000), { text: 'never' }], () => ({
          text: 'S'.repeat(10_000),
        })),
      );
      const again = await operationResult(await small.start({ goal: 'too big to save', context: { keepTurns: 1 } }));
      expect(again.state).toBe('failed');
      expect(again.reason).toContain('[ModelPromptTooLong]');
      expect(again.tokens.compactions).toBe(1);
    } finally {
      await small.close();
    }
  });

  it('fails with the reason and the ledger intact when the compaction call finally fails', async () => {
    h.model.setScript(
      withSummaries([big(1), big(2), big(3), { text: 'unreachable' }], () => ({
        fault: { type: 'http_error', status: 403, errorType: 'permission_error', message: 'no summaries today' },
      })),
    );
    const first = h.model.requests.length;
    const handle = await h.start({
      goal: 'compact or fail',
      context: { windowTokens: 5_000, keepTurns: 1, editing: { enabled: false } },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.reason).toMatch(/^compaction failed \[ModelPermissionDenied\]: permission denied \(403\)/);
    expect(result.usage).toEqual(serverUsage(h.model.requests.slice(first)));
    expect(result.tokens.failedSteps).toBe(1);
  });

  it('cuts a summary that runs past its limit and marks it', async () => {
    h.model.setScript(
      withSummaries([big(1), big(2), big(3), big(4), { text: 'done' }], () => ({ text: 'long summary '.repeat(400) })),
    );
    const first = h.model.requests.length;
    const handle = await h.start({
      goal: 'summarise briefly',
      context: { windowTokens: 6_000, keepTurns: 1, summaryMaxTokens: 256, editing: { enabled: false } },
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const compaction = (await recordedStepsOf(handle)).find((s) => s.kind === 'compaction')!;
    expect(compaction.kind === 'compaction' && compaction.result?.truncated).toBe(true);
    const after = h.model.requests
      .slice(first)
      .filter((r) => r.status === 200)
      .at(-1)!;
    expect(after.rawBody).toContain('[summary truncated by the harness: it reached the 256-token limit]');
  });

  it('agent compact compacts a running operation at its next checkpoint, and refuses an ended one', async () => {
    h.model.setScript(
      withSummaries([
        big(1, 100),
        big(2, 100),
        big(3, 100),
        bash('while [ ! -f /workspace/release ]; do sleep 0.05; done; echo released'),
        { text: 'done' },
      ]),
    );
    const handle = await h.start({ goal: 'compact me by hand', context: { keepTurns: 1 } });
    await waitFor(async () => {
      const st = await handle.query(statusQuery);
      return st.phase === 'tools' && st.turn === 4;
    }, 'the waiting tool call');
    const { stdout } = await agent(['compact', handle.workflowId]);
    expect(stdout).toContain(`compaction requested for ${handle.workflowId}`);
    expect((await handle.query(statusQuery)).context.compactionRequested).toBe(true);
    const switched = await handle
      .executeUpdate(switchModelUpdate, { args: [{ model: 'claude-opus-4-1' }] })
      .catch((err: unknown) => err);
    expect((switched as { cause?: Error }).cause?.message).toMatch(
      /^model: an operation's model is fixed for its life/,
    );
    execFileSync('docker', [
      'exec',
      '-u',
      AGENT_USER,
      containerNameOf(handle.workflowId),
      'touch',
      '/workspace/release',
    ]);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    const steps = await recordedStepsOf(handle);
    expect(steps.filter((s) => s.kind === 'compaction').map((s) => s.input.reason)).toEqual(['manual']);

    const refused = await agent(['compact', handle.workflowId]).catch((err: { stderr: string; code: number }) => err);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr.trim()).toBe(
      `error: cannot compact ${handle.workflowId}: the operation has ended (completed)`,
    );
    await expect(handle.executeUpdate(compactUpdate, { args: [{}] })).rejects.toThrow();
  });

  it('refuses a compaction threshold outside 10–95 % with the field named, and stops at budget.maxCostUsd', async () => {
    const handle = await h.start({ goal: 'x', context: { compactAtPct: 99 } });
    const error = await handle.result().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause?.message).toBe(
      'invalid operation input: context.compactAtPct: must be between 10 and 95 (percent of the context window)',
    );
    const low = await h.start({ goal: 'x', context: { editing: { atPct: 5 } } });
    expect(String(((await low.result().catch((err: unknown) => err)) as WorkflowFailedError).cause?.message)).toContain(
      'context.editing.atPct: must be between 10 and 95',
    );

    h.model.setScript([big(1), big(2), big(3), { text: 'unreachable' }]);
    const result = await operationResult(await h.start({ goal: 'spend', budget: { maxCostUsd: 0.001 } }));
    expect(result.state).toBe('failed');
    expect(result.reason).toMatch(/^budget: cost \(\$0\.\d{4} of \$0\.001\)$/);
    expect(result.costUsd).toBeGreaterThanOrEqual(0.001);
  });
});
