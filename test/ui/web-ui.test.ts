/**
 * The Temporal Web UI as the ops console, in a real browser (Playwright + Debian's Chromium) against
 * a dev server with its UI: the list filtered by `AgentStatus`, a completed operation (its summary,
 * current details and activity summaries) and a stuck one (its stuck reason). Screenshots are
 * written to `.data/test-artifacts/web-ui/`.
 */
import { removeSandboxes } from '../support/hands';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { FrameLocator, Page } from 'playwright-core';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE, statusQuery, type OperationInput } from '../../common/operation';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { DATA_DIR } from '../../platform/paths';
import { launchBrowser, type TestBrowser } from '../support/browser';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { startServerWorkers, type ServerWorkers } from '../support/server-workers';

const UI_WAIT = { timeout: 30_000 };

describe('the Web UI shows what operators need (real browser)', () => {
  let server: DevServer;
  let workers: ServerWorkers;
  let browser: TestBrowser;
  const id = randomUUID().slice(0, 8);
  const queues = { brain: `ui-brain-${id}`, hands: `ui-hands-${id}` };
  const lonely = `ui-nobody-${id}`;
  const shots: string[] = [];
  let completed: WorkflowHandleWithFirstExecutionRunId;
  let stuck: WorkflowHandleWithFirstExecutionRunId;

  const start = (workflowId: string, input: OperationInput) =>
    workers.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: queues.brain,
      workflowId,
      args: [input],
      staticSummary: input.goal,
    });

  beforeAll(async () => {
    const uiPort = await freePort();
    server = await startDevServer({
      cli: { path: testPlatform().temporalCli, source: 'env' },
      port: await freePort(),
      uiPort,
      logFile: path.join(DATA_DIR, 'test', `ui-server-${process.pid}.log`),
    });
    await waitFor(async () => (await fetch(server.uiUrl!).catch(() => undefined))?.ok, 'the Web UI to answer');
    workers = await startServerWorkers(server.address, queues);
    workers.model.setScript((request) => {
      const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
      if (turn === 0) return { toolCalls: [{ name: 'bash', input: { command: 'echo hello from the sandbox' } }] };
      if (turn === 1) return { toolCalls: [{ name: 'write_file', input: { path: 'notes.md', content: '# notes\n' } }] };
      return { text: 'All done: said hello and wrote notes.md.' };
    });
    completed = await start(`ui-done-${id}`, {
      goal: `say hello and write notes (${id})`,
      handsTaskQueue: queues.hands,
    });
    expect((await operationResult(completed)).state).toBe('completed');
    stuck = await start(`ui-stuck-${id}`, {
      goal: `wait for hands nobody runs (${id})`,
      handsTaskQueue: lonely,
      stuck: { notStartedMs: 500 },
    });
    await waitFor(async () => (await stuck.query(statusQuery)).stuck, 'the operation to be stuck');
    browser = await launchBrowser('web-ui');
  });

  afterAll(async () => {
    await browser?.close();
    await stuck?.terminate('test done').catch(() => undefined);
    await workers?.stop();
    await server?.stop();
    for (const session of [completed?.workflowId, stuck?.workflowId].filter(Boolean) as string[]) {
      await removeSandboxes([session]);
    }
    for (const shot of shots) expect(fs.existsSync(shot)).toBe(true);
  });

  const ui = (route: string) => `${server.uiUrl}/namespaces/default${route}`;
  const frame = (page: Page, name: string): FrameLocator => page.frameLocator(`iframe#user-metadata-${name}`);
  const historyRow = (page: Page, type: string, text: string) =>
    page.locator('tr[data-testid="event-summary-row"]', { hasText: type }).filter({ hasText: text }).first();

  it('lists the stuck operation under AgentStatus = "stuck", and not the completed one', async () => {
    const { page } = browser;
    await page.goto(ui(`/workflows?query=${encodeURIComponent('AgentStatus = "stuck"')}`));
    const rows = page.locator('[data-testid="workflows-summary-configurable-table-row"]');
    await rows.filter({ hasText: stuck.workflowId }).waitFor(UI_WAIT);
    expect(await rows.filter({ hasText: completed.workflowId }).count()).toBe(0);
    shots.push(await browser.screenshot('1-list-agentstatus-stuck'));
  });

  it("shows a completed operation's summary, current details and activity summaries", async () => {
    const { page } = browser;
    const base = ui(`/workflows/${completed.workflowId}/${completed.firstExecutionRunId}`);
    await page.goto(`${base}/user-metadata`);
    await frame(page, 'summary').getByText(`say hello and write notes (${id})`).waitFor(UI_WAIT);
    const details = frame(page, 'current-details');
    await details.getByText('completed — end_turn', { exact: false }).waitFor(UI_WAIT);
    await details.getByText('last turn: turn 3 → end_turn', { exact: false }).waitFor(UI_WAIT);
    await details.getByText('last tool: ', { exact: false }).waitFor(UI_WAIT);
    shots.push(await browser.screenshot('2-completed-summary-and-details'));

    await page.goto(`${base}/history`);
    await historyRow(page, 'Activity Task Scheduled', 'bash: echo hello from the sandbox').waitFor(UI_WAIT);
    await historyRow(page, 'Activity Task Scheduled', 'turn 2 · turn 1 → bash').waitFor(UI_WAIT);
    await historyRow(page, 'Activity Task Scheduled', 'turn 3 · turn 2 → write_file').waitFor(UI_WAIT);
    await historyRow(page, 'Activity Task Scheduled', 'claim a hands host').waitFor(UI_WAIT);
    await historyRow(page, 'Activity Task Scheduled', 'remove the container').waitFor(UI_WAIT);
    await historyRow(page, 'Activity Task Scheduled', 'turn 3 · turn 2 → write_file').scrollIntoViewIfNeeded();
    shots.push(await browser.screenshot('3-completed-activity-summaries'));

    // Kept for when no worker answers "Current Details" any more: the memo.
    await page.goto(`${base}/memo`);
    await page.getByText('**completed** — end_turn', { exact: false }).first().waitFor(UI_WAIT);
    shots.push(await browser.screenshot('3b-completed-memo'));
  });

  it("shows a stuck operation's reason in its current details", async () => {
    const { page } = browser;
    await page.goto(ui(`/workflows/${stuck.workflowId}/${stuck.firstExecutionRunId}/user-metadata`));
    await frame(page, 'summary').getByText(`wait for hands nobody runs (${id})`).waitFor(UI_WAIT);
    await frame(page, 'current-details')
      .getByText(`stuck: no worker polls ${lonely}`, { exact: false })
      .first()
      .waitFor(UI_WAIT);
    shots.push(await browser.screenshot('4-stuck-reason'));
  });
});
