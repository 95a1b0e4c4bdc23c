/**
 * The typed session log on its own dev server, where Temporal suggests continue-as-new after 30
 * events so both the session and a long operation continue as new: `agent events --json` (the real
 * CLI process) lists prompts, operations, replies, tool calls, steering, approvals, facts and ends in
 * the order they were recorded, across every run, numbered 1…n; filters and operation mode too.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { decideToolCall } from '../../client/approvals';
import { setFact } from '../../client/session';
import type { SessionEvent } from '../../common/events';
import { statusQuery, steerUpdate } from '../../common/operation';
import { HEALTH_CHECK_WORKFLOW_TYPE } from '../../common/health';
import { containerNameOf } from '../../common/sandbox-names';
import { sessionWorkflowId } from '../../common/session';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { PROJECT_ROOT } from '../../platform/paths';
import { conversations } from '../support/conversations';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { startSessionHarness, type SessionHarness } from '../support/session-harness';

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');
const bash = (command: string) => ({ toolCalls: [{ name: 'bash', input: { command } }] });

describe('agent events across continue-as-new', () => {
  let server: DevServer;
  let s: SessionHarness;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-events-'));

  beforeAll(async () => {
    server = await startDevServer({
      cli: { path: testPlatform().temporalCli, source: 'env' },
      port: await freePort(),
      logFile: path.join(dir, 'server.log'),
      dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 30 },
    });
    s = await startSessionHarness([], { temporalAddress: server.address });
  });
  afterAll(async () => {
    await s?.close();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const agentEvents = async (...args: string[]): Promise<SessionEvent[]> => {
    const { stdout } = await run(AGENT, ['events', ...args, '--json'], {
      env: { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: testPlatform().namespace },
    });
    return stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as SessionEvent);
  };

  it('lists every event in order, numbered, across the runs of the session and its operations', async () => {
    s.h.model.setScript(
      conversations({
        'events op one': [
          bash('echo one'),
          bash('echo two'),
          bash('while [ ! -f /workspace/go ]; do sleep 0.05; done; echo released'),
          bash('echo four'),
          bash('echo five'),
          { text: 'one done' },
        ],
        'events op two': [{ text: 'two done' }],
        'events op three': [{ text: 'three done' }],
      }),
    );
    const sessionId = s.newSession('events');
    const client = s.h.temporal.client;
    const one = await s.submit(sessionId, { prompt: 'events op one', approvals: { 'bash:/echo two/': 'ask' } });
    const opOne = s.operation(one.operationId);
    const waiting = await waitFor(async () => (await opOne.query(statusQuery)).waitingApproval, 'the approval');
    const two = await s.submit(sessionId, 'events op two');
    expect(two.state).toBe('queued');
    await setFact(client, sessionId, 'stage', 'testing');
    await decideToolCall(client.workflow, {
      operationId: one.operationId,
      toolCallId: waiting.toolCallId,
      approve: true,
    });
    await waitFor(async () => {
      const st = await opOne.query(statusQuery);
      return st.phase === 'tools' && st.turn === 3;
    }, 'the third tool call');
    await opOne.executeUpdate(steerUpdate, { args: [{ text: 'mind the tests' }] });
    await waitFor(async () => {
      try {
        execFileSync('docker', ['exec', '-u', AGENT_USER, containerNameOf(sessionId), 'touch', '/workspace/go']);
        return true;
      } catch {
        return false;
      }
    }, 'release');
    expect((await s.result(one.operationId)).state).toBe('completed');
    expect((await s.result(two.operationId)).state).toBe('completed');
    // Idle and past the suggestion: the session continues as new; the next prompt lands in run 2.
    await waitFor(async () => (await s.status(sessionId)).runs > 1, 'the session to continue as new');
    const three = await s.submit(sessionId, 'events op three');
    expect((await s.result(three.operationId)).state).toBe('completed');
    // The first operation continued as new on the way.
    const described = await opOne.describe();
    expect(described.raw.workflowExecutionInfo?.firstRunId).not.toBe(described.runId);

    const events = await agentEvents(sessionId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.every((e) => e.sessionId === sessionId)).toBe(true);
    const find = (from: number, type: string, match: (e: SessionEvent) => boolean = () => true): number => {
      const index = events.findIndex((e, i) => i >= from && e.type === type && match(e));
      if (index < 0) throw new Error(`no ${type} after #${from + 1}: ${events.map((e) => e.type).join(', ')}`);
      return index;
    };
    const ofOne = (e: SessionEvent) => e.operationId === one.operationId;
    let i = find(0, 'prompt.accepted', ofOne);
    i = find(i, 'operation.started', ofOne);
    i = find(i, 'model.reply', ofOne);
    i = find(i, 'tool.started', ofOne);
    i = find(i, 'tool.finished', ofOne);
    i = find(i, 'approval.requested', (e) => e.data.toolCallId === waiting.toolCallId);
    i = find(i, 'prompt.accepted', (e) => e.operationId === two.operationId && e.data.state === 'queued');
    i = find(i, 'fact.set', (e) => e.data.key === 'stage' && e.lane === null);
    i = find(i, 'approval.decided', (e) => e.data.decision === 'approved');
    i = find(i, 'tool.finished', (e) => e.data.toolCallId === waiting.toolCallId);
    i = find(i, 'steering.accepted', (e) => e.data.text === 'mind the tests');
    i = find(i, 'operation.ended', (e) => ofOne(e) && e.data.state === 'completed');
    i = find(i, 'operation.started', (e) => e.operationId === two.operationId);
    i = find(i, 'operation.ended', (e) => e.operationId === two.operationId);
    i = find(i, 'prompt.accepted', (e) => e.operationId === three.operationId);
    find(i, 'operation.ended', (e) => e.operationId === three.operationId);
    // Every reply of the first operation is there, whichever run recorded it.
    const replies = events.filter((e) => ofOne(e) && e.type === 'model.reply');
    expect(replies.map((e) => e.turn)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(events.filter((e) => e.type === 'tool.finished' && ofOne(e)).map((e) => e.turn))).toEqual(
      new Set([1, 2, 3, 4, 5]),
    );

    // Filters keep the numbering; an operation id lists that operation alone.
    const tools = await agentEvents(sessionId, '--type', 'tool', '--lane', 'main', '--from', '3');
    expect(tools.length).toBe(10);
    expect(tools.every((e) => e.type.startsWith('tool.') && e.seq >= 3)).toBe(true);
    expect(tools.map((e) => e.seq)).toEqual(
      events.filter((e) => e.type.startsWith('tool.') && e.seq >= 3).map((e) => e.seq),
    );
    const ofTwo = await agentEvents(two.operationId);
    expect(ofTwo.map((e) => e.type)).toEqual(['operation.started', 'model.reply', 'operation.ended']);

    // The session's own workflow id (what the Web UI shows) reads the same log; a workflow of another
    // type is refused by its type.
    expect(await agentEvents(sessionWorkflowId(sessionId))).toEqual(events);
    const healthId = `health-${sessionId}`;
    await client.workflow.execute(HEALTH_CHECK_WORKFLOW_TYPE, {
      taskQueue: s.h.brainQueue,
      workflowId: healthId,
      args: [{ message: 'hi' }],
    });
    await expect(agentEvents(healthId)).rejects.toThrow(
      `${healthId} is a healthCheck workflow; agent events reads sessions and operations`,
    );
  });
});
