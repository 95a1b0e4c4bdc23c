/**
 * `agent setup` and `agent doctor` as a person runs them (real processes), against a second dev
 * server started *without* the project's search attributes, as a real cluster is: doctor says to
 * run setup; setup registers them (twice: idempotent); an operation then completes there; doctor
 * then reports a queue nobody polls, the stuck operation waiting on it, a workflow whose task keeps
 * failing (a mistyped workflow type) and a leaked container, and exits non-zero.
 */
import { removeSandboxes } from '../support/hands';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import Docker from 'dockerode';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE, statusQuery, type OperationInput } from '../../common/operation';
import { SEARCH_ATTRIBUTES } from '../../common/search-attributes';
import { containerNameOf } from '../../common/sandbox-names';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { DATA_DIR, PROJECT_ROOT } from '../../platform/paths';
import type { ScriptedModelServer } from '../../scripted-model/server';
import type { DoctorReport } from '../../cli/doctor';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { withServerWorkers } from '../support/server-workers';

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');

interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function agent(args: string[], env: NodeJS.ProcessEnv): Promise<CliOutcome> {
  try {
    const { stdout, stderr } = await run(AGENT, args, { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('agent setup and agent doctor on a bare server (real processes)', () => {
  let server: DevServer;
  let env: NodeJS.ProcessEnv;
  const id = randomUUID().slice(0, 8);
  const brainQueue = `bare-brain-${id}`;
  const handsQueue = `bare-hands-${id}`;
  const leaked = `leak-${id}`;
  const sessions: string[] = [leaked];
  const docker = new Docker();

  beforeAll(async () => {
    server = await startDevServer({
      cli: { path: testPlatform().temporalCli, source: 'env' },
      port: await freePort(),
      searchAttributes: false,
      logFile: path.join(DATA_DIR, 'test', `bare-server-${process.pid}.log`),
    });
    env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: 'default',
      AGENT_BRAIN_QUEUE: brainQueue,
      AGENT_HANDS_QUEUE: handsQueue,
    };
  });
  afterAll(async () => {
    await server?.stop();
    for (const session of sessions) {
      await removeSandboxes([session]);
    }
  });

  it('doctor against an unreachable server is one line naming the address', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const outcome = await agent(['doctor'], { TEMPORAL_ADDRESS: address });
    expect(outcome.code).toBe(1);
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
    expect(outcome.stderr).toContain(`cannot reach Temporal at ${address}`);
  });

  it('doctor on a namespace without the search attributes says to run agent setup', async () => {
    const outcome = await agent(['doctor', '--json'], env);
    expect(outcome.code).toBe(1);
    const report = JSON.parse(outcome.stdout) as DoctorReport;
    expect(report.healthy).toBe(false);
    expect(report.findings).toEqual([
      expect.objectContaining({ kind: 'search-attributes-missing', fix: expect.stringContaining('agent setup') }),
    ]);
    expect(report.findings[0].reason).toContain('AgentStatus');
  });

  it('setup registers the search attributes, twice without harm, and an operation then completes', async () => {
    const first = await agent(['setup'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('registered search attributes: AgentStatus');
    expect(first.stdout).toContain(`brain queue ${brainQueue}: no worker polls it yet`);
    const second = await agent(['setup'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(`search attributes already registered (${Object.keys(SEARCH_ATTRIBUTES).length})`);

    await withWorkers(async (client, model) => {
      model.setScript([
        { toolCalls: [{ name: 'bash', input: { command: 'echo on the bare server' } }] },
        { respond: (request) => ({ text: request.toolResults[0]?.content ?? '' }) },
      ]);
      const workflowId = `bare-op-${id}`;
      sessions.push(workflowId);
      const input: OperationInput = { goal: 'say where you are', handsTaskQueue: handsQueue };
      const handle = await client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: brainQueue,
        workflowId,
        args: [input],
      });
      const result = await operationResult(handle);
      expect(result.state).toBe('completed');
      expect(result.finalText).toContain('on the bare server');
    });
  });

  it('doctor --json reports a queue nobody polls, the stuck operation, a failing workflow task and a leaked container', async () => {
    const { sandboxImage: image, sandboxTools } = testPlatform();
    await createSandboxes({ docker, image, sandboxTools }).lifecycle.ensure(leaked, {
      operationId: `gone-op-${id}`,
    });
    const lonely = `nobody-${id}`;
    await withWorkers(async (client, model) => {
      model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'echo never runs' } }] }]);
      const stuckId = `bare-stuck-${id}`;
      sessions.push(stuckId);
      const stuck = await client.workflow.start(OPERATION_WORKFLOW_TYPE, {
        taskQueue: brainQueue,
        workflowId: stuckId,
        args: [{ goal: 'wait forever', handsTaskQueue: lonely, stuck: { notStartedMs: 500 } }],
      });
      await waitFor(async () => (await stuck.query(statusQuery)).stuck, 'the operation to be stuck');
      const mistyped = await client.workflow.start('operatoin', {
        taskQueue: brainQueue,
        workflowId: `bare-typo-${id}`,
        args: [{ goal: 'x' }],
      });
      await waitFor(async () => {
        const described = await client.workflowService.describeWorkflowExecution({
          namespace: 'default',
          execution: { workflowId: mistyped.workflowId },
        });
        return (described.pendingWorkflowTask?.attempt ?? 1) > 1;
      }, 'the mistyped workflow task to fail twice');

      const outcome = await agent(['doctor', '--json'], env);
      expect(outcome.code).toBe(1);
      const report = JSON.parse(outcome.stdout) as DoctorReport;
      const find = (kind: string, subject: string) =>
        report.findings.find((f) => f.kind === kind && f.subject === subject);
      expect(find('queue-without-pollers', lonely)).toMatchObject({
        fix: expect.stringContaining(`AGENT_HANDS_QUEUE=${lonely} agent worker hands`),
      });
      expect(find('stuck-operation', stuckId)?.reason).toBe(`stuck: no worker polls ${lonely}`);
      expect(find('workflow-task-failing', mistyped.workflowId)?.reason).toContain('operatoin');
      expect({ skipped: report.skipped, leak: find('leaked-container', containerNameOf(leaked)) }).toMatchObject({
        skipped: [],
        leak: {
          fix: `agent sandbox rm ${leaked} --keep-volume   # or all old ones: agent sandbox gc`,
        },
      });
      const text = await agent(['doctor'], env);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain(`✗ queue-without-pollers ${lonely}`);
      await stuck.terminate('test done');
      await mistyped.terminate('test done');
    });
  });

  const withWorkers = (fn: (client: Client, model: ScriptedModelServer) => Promise<void>) =>
    withServerWorkers(server.address, { brain: brainQueue, hands: handsQueue }, fn);
});
