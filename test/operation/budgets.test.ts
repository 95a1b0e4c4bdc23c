/**
 * An operation's budgets on the real Temporal server, Docker and the scripted model: the token and
 * wall-clock budgets end it with an honest reason; with `budget.onExceeded: "ask"` a spent budget
 * waits for a person instead (`waiting-approval`, the approval `budget-<n>`): approving allows a
 * quarter of the limit more than was used and the operation goes on, denying — or nobody deciding —
 * ends it as the spent budget would have, with the decision in the reason.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { decideToolCall } from '../../client/approvals';
import { operationResult } from '../../client/operation-result';
import { parseOperationInput, statusQuery } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';

const bash = (command: string) => ({ toolCalls: [{ name: 'bash', input: { command } }] });

const waitingBudget = (handle: WorkflowHandle, id: string) =>
  waitFor(async () => {
    const waiting = (await handle.query(statusQuery).catch(() => undefined))?.waitingApproval;
    return waiting?.toolCallId === id ? waiting : undefined;
  }, `the budget approval ${id}`);

const decide = (handle: WorkflowHandle, toolCallId: string, approve: boolean, reason?: string) =>
  decideToolCall(handle.client, { operationId: handle.workflowId, toolCallId, approve, reason });

describe("an operation's budgets", () => {
  let h: OperationHarness;
  beforeAll(async () => {
    h = await startOperationHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('ends at maxTotalTokens before the next turn, with the tokens used in the reason', async () => {
    h.model.setScript([bash('echo one'), bash('echo never')]);
    const result = await operationResult(await h.start({ goal: 'spend tokens', budget: { maxTotalTokens: 100 } }));
    expect(result.state).toBe('failed');
    const used = result.usage.input + result.usage.cacheWrite + result.usage.cacheRead + result.usage.output;
    expect(result.reason).toBe(`budget: tokens (${used} of 100)`);
    expect(result.turns).toBe(1);
    expect(h.model.requests.filter((r) => r.status === 200).at(-1)?.rawBody).not.toContain('echo never');
  });

  it('ends at maxDurationMs once the wall-clock budget has passed', async () => {
    // The tool takes longer than the whole budget: whichever step the deadline finds, it ends the run.
    h.model.setScript([bash('sleep 6; echo slept'), { text: 'never sent' }]);
    const result = await operationResult(await h.start({ goal: 'take time', budget: { maxDurationMs: 5_000 } }));
    expect(result.state).toBe('failed');
    expect(result.reason).toBe('budget: deadline (5000 ms)');
    expect(result.finalText).not.toBe('never sent');
  });

  it('validates onExceeded by name', () => {
    expect(parseOperationInput({ goal: 'g', budget: { onExceeded: 'maybe' } })).toEqual({
      ok: false,
      error: 'budget.onExceeded: must be "end" or "ask"',
    });
    expect(parseOperationInput({ goal: 'g', budget: { onExceeded: 'ask' } })).toMatchObject({
      ok: true,
      value: { budget: { onExceeded: 'ask' } },
    });
  });

  it('asks when a budget is spent: approving allows more, denying ends the operation', async () => {
    h.model.setScript([bash('echo one'), bash('echo two'), { text: 'never sent' }]);
    const handle = await h.start({
      goal: 'spend and ask',
      budget: { maxTotalTokens: 100, onExceeded: 'ask' },
    });
    const first = await waitingBudget(handle, 'budget-1');
    expect(first).toMatchObject({ tool: 'budget', budget: { name: 'tokens', limit: 100, extension: 25 } });
    expect(first.summary).toMatch(/^budget exceeded: [\d.]+k? of 100 tokens; approve to allow 25 more$/);
    const status = await handle.query(statusQuery);
    expect(status.state).toBe('waiting-approval');
    expect(status.turn).toBe(1);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status)).toBe('waiting-approval');
    expect(description.memo?.approval).toMatchObject({ toolCallId: 'budget-1', tool: 'budget', state: 'waiting' });
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`**waiting for approval:** \`${first.summary}\``);
    expect(metadata.currentDetails).toContain(`agent approve ${handle.workflowId} budget-1`);

    expect(await decide(handle, 'budget-1', true)).toEqual({ toolCallId: 'budget-1', decision: 'approved' });
    // The approval allowed 25 tokens more than were used: one more turn, then the budget asks again.
    const second = await waitingBudget(handle, 'budget-2');
    expect(second.budget).toMatchObject({ name: 'tokens', limit: first.budget!.used + 25, extension: 25 });
    expect((await handle.query(statusQuery)).turn).toBe(2);
    await expect(decide(handle, 'budget-1', true)).rejects.toMatchObject({ type: 'ApprovalAlreadyDecided' });
    await decide(handle, 'budget-2', false, 'enough for today');

    const result = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.turns).toBe(2);
    expect(result.reason).toMatch(
      /^budget: tokens \(\d+ of \d+\); not extended: denied by a person: enough for today$/,
    );
    expect((await handle.describe()).memo?.approval).toMatchObject({
      toolCallId: 'budget-2',
      state: 'denied',
      by: 'person',
    });
  });

  it('approving a spent deadline arms it again: the operation goes on and completes', async () => {
    // The tool outlasts the deadline; the approval allows a quarter of it (3 s) from then on, which
    // the one remaining model step fits in many times over.
    h.model.setScript([bash('sleep 13; echo slept'), { text: 'done after the extension' }]);
    const handle = await h.start({
      goal: 'run out of time, ask, go on',
      budget: { maxDurationMs: 12_000, onExceeded: 'ask' },
    });
    const asked = await waitingBudget(handle, 'budget-1');
    expect(asked.budget).toMatchObject({ name: 'deadline', limit: 12_000, extension: 3_000 });
    await decide(handle, 'budget-1', true);
    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.finalText).toBe('done after the extension');
    // One timer for the deadline as set (it fired), one for the extended deadline; none per step.
    const timers = ((await handle.fetchHistory()).events ?? []).filter((e) => e.timerStartedEventAttributes);
    const summaries = timers.map((e) =>
      e.userMetadata?.summary ? String(defaultPayloadConverter.fromPayload(e.userMetadata.summary)) : '',
    );
    expect(summaries.filter((summary) => summary.startsWith('deadline: '))).toHaveLength(2);
  });

  it('ends a spent deadline that asks once nobody decides within the approval timeout', async () => {
    h.model.setScript([bash('sleep 4; echo slept'), { text: 'never sent' }]);
    const handle = await h.start({
      goal: 'run out of time and ask',
      budget: { maxDurationMs: 3_000, onExceeded: 'ask' },
      approvalTimeoutMs: 1_000,
    });
    const result = await operationResult(handle);
    expect(result.state).toBe('failed');
    expect(result.reason).toBe('budget: deadline (3000 ms); not extended: the approval timed out');
    expect((await handle.describe()).memo?.approval).toMatchObject({
      toolCallId: 'budget-1',
      tool: 'budget',
      state: 'denied',
      by: 'timeout',
    });
  });
});
