/**
 * `agent run`: submits a prompt to a session (a new one without `--session`) through Update-with-Start,
 * which returns once the prompt is durable — its operation started, or queued behind the lane's open
 * operation — then follows the operation live (its text as it streams, each tool call, progress)
 * until it ends. Ctrl-C detaches without stopping it. `--json` prints one line at the end (everything
 * else goes to stderr).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { operationResult } from '../client/operation-result';
import { requirePollers } from '../client/pollers';
import { submitPrompt } from '../client/session';
import { connectClient, workflowUrl } from '../client/connection';
import { totalTokens } from '../common/model-types';
import { parseOperationInput, type OperationResult } from '../common/operation';
import { isSessionId, SESSION_ID_RULE } from '../common/sandbox-names';
import { parsePrompt, type PromptInput, type SessionInput } from '../common/session';
import { readSession } from '../client/session';
import type { RunCommand } from './command-types';
import { followOperation, formatTokens } from './follow';
import { cliSettings } from './settings';

export async function run(command: RunCommand): Promise<number> {
  const out = command.json ? process.stderr : process.stdout;
  const sessionId = command.session ?? command.id ?? newSessionId();
  if (!isSessionId(sessionId)) {
    // Without --session, --id names the session too.
    const flag = command.session !== undefined ? '--session' : '--id';
    throw new Error(`${flag} ${sessionId}: must be ${SESSION_ID_RULE}`);
  }
  const { temporal: settings, queues } = cliSettings();
  const { prompt, session } = promptOf(command, queues.hands);
  const { client, connection } = await connectClient(settings);
  const workers = command.withWorker ? await (await import('../workers/run')).startWorkers('dev') : undefined;
  const running = workers?.run();
  try {
    if (!workers) await requirePollers(client, queues.brain);
    const accepted = await submitPrompt(client, {
      sessionId,
      prompt,
      session,
      taskQueue: queues.brain,
      updateId: randomUUID(),
    });
    const { operationId, lane } = accepted;
    const url = workflowUrl(settings, operationId);
    out.write(
      accepted.state === 'started'
        ? `operation ${operationId} accepted (session ${sessionId}, lane ${lane})\n`
        : `operation ${operationId} queued as a follow-up in lane ${lane} of session ${sessionId} (#${accepted.position}); it starts when the lane's operation ends\n`,
    );
    out.write(`Web UI: ${url}\n`);
    if (command.detach) {
      if (command.json) {
        const state = accepted.state === 'started' ? 'running' : 'queued';
        console.log(JSON.stringify({ operationId, sessionId, lane, state, turns: 0, usage: null }));
      }
      return 0;
    }
    const outcome = await follow(client, operationId, out, !workers);
    if (outcome === 'detached') {
      out.write(`\ndetached; the operation keeps running. Follow it with: agent events ${operationId} --follow\n`);
      return 0;
    }
    const result = await operationResult(client.workflow.getHandle(operationId));
    if (command.json) {
      const { state, turns, usage } = result;
      console.log(JSON.stringify({ operationId, sessionId, lane, state, turns, usage }));
    } else {
      printResult(result, url, operationId);
    }
    return result.state === 'completed' ? 0 : 1;
  } finally {
    if (workers) {
      // Let the session finish what it does when it goes idle (removing the container).
      await sandboxSettled(client, sessionId);
      workers.shutdown();
      await running;
      await workers.close();
    }
    await connection.close();
  }
}

/** The prompt and the session settings (used only if the session is new), checked before anything is sent. */
function promptOf(command: RunCommand, handsQueue: string): { prompt: PromptInput; session: SessionInput } {
  let repo: PromptInput['repo'];
  if (command.repo) {
    const repoPath = path.resolve(command.repo);
    if (!fs.existsSync(repoPath) || !fs.statSync(repoPath).isDirectory())
      throw new Error(`--repo ${command.repo}: no such directory`);
    repo = { kind: 'local', path: repoPath };
  }
  let approvals: PromptInput['approvals'];
  if (command.approvals) approvals = JSON.parse(command.approvals) as PromptInput['approvals'];
  const prompt: PromptInput = {
    prompt: command.goal,
    ...(command.lane ? { lane: command.lane } : {}),
    ...(command.newContext ? { newContext: true } : {}),
    ...(command.id ? { operationId: command.id } : {}),
    ...(repo ? { repo } : {}),
    ...(command.model ? { model: command.model } : {}),
    ...(command.maxTurns || command.askOverBudget
      ? {
          budget: {
            ...(command.maxTurns ? { maxTurns: command.maxTurns } : {}),
            ...(command.askOverBudget ? { onExceeded: 'ask' as const } : {}),
          },
        }
      : {}),
    ...(approvals ? { approvals } : {}),
    ...(command.approvalTimeoutMs ? { approvalTimeoutMs: command.approvalTimeoutMs } : {}),
    ...(command.eagerSandbox ? { eagerSandbox: true } : {}),
    ...(command.egress ? { egress: command.egress } : {}),
    ...(command.hooks ? { hooks: command.hooks } : {}),
  };
  const checked = parsePrompt(prompt);
  if (!checked.ok) throw new Error(`invalid prompt: ${flagNames(checked.error)}`);
  // The operation input the session will build must be valid too (e.g. the approval rules).
  const asOperation = parseOperationInput({ goal: command.goal, ...(approvals ? { approvals } : {}) });
  if (!asOperation.ok) throw new Error(`invalid prompt: ${flagNames(asOperation.error)}`);
  const session: SessionInput = {
    handsTaskQueue: handsQueue,
    ...(repo ? { repo } : {}),
    ...(command.environment !== undefined ? { environment: command.environment } : {}),
    ...(command.keepContainer ? { keepContainer: true } : {}),
  };
  return { prompt, session };
}

/** Names fields as the flags a person typed. */
function flagNames(error: string): string {
  return error
    .replace(/^prompt:/, 'the prompt:')
    .replace(/\bbudget\.maxTurns:/, '--max-turns:')
    .replace(/\bapprovals\./, '--approvals ')
    .replace(/\blane:/, '--lane:')
    .replace(/\boperationId:/, '--id:');
}

async function follow(
  client: Client,
  operationId: string,
  out: NodeJS.WriteStream,
  detachOnSigint: boolean,
): Promise<'closed' | 'detached'> {
  let detach: () => void = () => undefined;
  const stop = new Promise<void>((resolve) => {
    detach = resolve;
  });
  const onSigint = () => detach();
  if (detachOnSigint) process.once('SIGINT', onSigint);
  try {
    return await followOperation(client.workflow.getHandle(operationId), { stop, out, live: { client } });
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

function printResult(result: OperationResult, url: string, id: string): void {
  console.log(`\n${result.state.toUpperCase()}: ${result.reason}`);
  console.log(
    `${result.turns} turns, ${result.steps} steps, ${formatTokens(totalTokens(result.usage))} tokens ` +
      `(input ${result.usage.input}, cache write ${result.usage.cacheWrite}, cache read ${result.usage.cacheRead}, output ${result.usage.output}), $${result.costUsd.toFixed(4)}`,
  );
  if (result.tokens) {
    const t = result.tokens;
    console.log(
      `context: peak ${t.peakContextPct.toFixed(1)}% of the window, ${t.compactions} compactions, ${t.editBatches} clear batches, ` +
        `cache hit ${(100 * t.cacheHitRate).toFixed(1)}% (what each technique saved: agent report ${id})`,
    );
  }
  if (result.finalText) console.log(`\n${result.finalText}\n`);
  console.log(`workspace volume: ${result.workspaceVolume}`);
  console.log(`Web UI: ${url}`);
}

/** Waits (up to 30 s) until the session has removed its idle container, so the workers can stop. */
async function sandboxSettled(client: Client, sessionId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const status = await readSession(client, sessionId).catch(() => undefined);
    if (!status || (status.sandbox.state !== 'up' && status.sandbox.state !== 'removing')) return;
    if (status.lanes.some((lane) => lane.open || lane.queued.length > 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function newSessionId(): string {
  return `s-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${randomUUID().slice(0, 4)}`;
}
