/**
 * Worker Versioning on a real Temporal dev server (its own, with drainage observed every few seconds
 * instead of minutes), real Docker and the scripted model: two brain workers of one Worker
 * Deployment with different workflow code — build A the released bundle, build B the same with a
 * change to `operation` that A's histories cannot replay (`test/support/versioning-workflows.ts`) —
 * and one unversioned hands worker.
 *
 * An operation started on A waits for an approval while B is ramped to 100 % and then made current
 * (with `agent deploy`); an operation started then runs on B; the first one's workers are stopped
 * (`agent doctor` names the pinned work nobody serves) and started again, and it finishes on A —
 * every workflow task of it completed by A, its tool run by the unversioned hands worker, no task
 * failed — and A drains. Its history replays on A's code and fails on B's: the change was one
 * `patched()` would have had to guard, and Pinned made it safe.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { ContextCache } from '../../activities/brain/context-cache';
import { crashPointSinks } from '../../activities/crash-points';
import { traceSinks } from '../../activities/tracing/spans';
import { diagnose } from '../../cli/doctor';
import { decideToolCall } from '../../client/approvals';
import { temporalSettings } from '../../client/connection';
import { deploymentStatus, setCurrentVersion, type DeploymentStatus } from '../../client/deployments';
import { operationResult } from '../../client/operation-result';
import { OPERATION_WORKFLOW_TYPE, statusQuery, type OperationInput } from '../../common/operation';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { DATA_DIR } from '../../platform/paths';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { workflowInterceptorModules, workflowPreloadModules } from '../../workers/workflow-bundle';
import { bundleBuildId, createBrainWorker, createHandsWorker } from '../../workers/workers';
import { agentProcessArgs } from '../support/compiled-entries';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';
import { testModelSettings, waitFor } from '../support/operation-harness';
import { connectTestTemporal, type TestTemporal } from '../support/temporal';

const execute = promisify(execFile);
const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

/** Drainage checked every few seconds (the server's defaults are three minutes each). */
const FAST_DRAINAGE = {
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '5s',
  'matching.wv.VersionDrainageStatusRefreshInterval': '2s',
};

describe('Worker Versioning: a rollout from build A to build B', () => {
  const id = randomUUID().slice(0, 8);
  const deployment = `agent-test-${id}`;
  const brainQueue = `brain-v-${id}`;
  const handsQueue = `hands-v-${id}`;
  const sessions: string[] = [];
  let server: DevServer;
  let t: TestTemporal;
  let model: ScriptedModelServer;
  let bundleB: string;
  let buildA: string;
  let buildB: string;
  const running = new Map<Worker, Promise<void>>();
  let brainA: Worker;
  let env: NodeJS.ProcessEnv;
  let op1: WorkflowHandle;

  const brainWorker = async (
    bundle: { codePath: string } | { code: string },
    versioning: { deployment?: string } = { deployment },
  ) => {
    const worker = await createBrainWorker({
      connection: t.nativeConnection,
      namespace: 'default',
      taskQueue: brainQueue,
      client: t.client,
      modelSettings: testModelSettings(model.url),
      cache: new ContextCache(),
      workflowBundle: bundle,
      versioning,
    });
    running.set(worker, worker.run());
    return worker;
  };
  const stop = async (worker: Worker) => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.get(worker);
    running.delete(worker);
  };
  const start = (workflowId: string, input: Omit<OperationInput, 'handsTaskQueue'>) => {
    sessions.push(workflowId);
    return t.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: brainQueue,
      workflowId,
      args: [{ handsTaskQueue: handsQueue, ...input }],
    });
  };
  const agent = async (...args: string[]) =>
    (await execute(process.execPath, agentProcessArgs(...args), { env: { ...process.env, ...env } })).stdout;
  const describe = async (handle: WorkflowHandle) =>
    (
      await t.client.workflowService.describeWorkflowExecution({
        namespace: 'default',
        execution: { workflowId: handle.workflowId },
      })
    ).workflowExecutionInfo;
  const status = (): Promise<DeploymentStatus> => deploymentStatus(t.client, deployment);
  const version = (s: DeploymentStatus, buildId: string) => s.versions.find((v) => v.buildId === buildId);
  /** The version that completed each workflow task (`unversioned`: a worker without a deployment), and the failed tasks. */
  const taskBuilds = async (handle: WorkflowHandle) => {
    const events = (await handle.fetchHistory()).events ?? [];
    return {
      completed: events.flatMap((e) => {
        const version = e.workflowTaskCompletedEventAttributes?.deploymentVersion;
        if (!e.workflowTaskCompletedEventAttributes) return [];
        return [version?.deploymentName ? version.buildId! : 'unversioned'];
      }),
      failed: events.filter((e) => e.workflowTaskFailedEventAttributes).length,
    };
  };
  const only = (buildId: string, builds: { completed: string[] }) => builds.completed.map(() => buildId);

  beforeAll(async () => {
    const platform = testPlatform();
    server = await startDevServer({
      cli: { path: platform.temporalCli, source: 'env' },
      port: await freePort(),
      logFile: path.join(DATA_DIR, 'test', `temporal-versioning-${process.pid}.log`),
      dynamicConfig: FAST_DRAINAGE,
    });
    env = { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default', AGENT_WORKER_DEPLOYMENT: deployment };
    t = await connectTestTemporal(server.address);
    model = await startScriptedModelServer({ script: [] });
    bundleB = (
      await bundleWorkflowCode({
        workflowsPath: require.resolve('../support/versioning-workflows'),
        workflowInterceptorModules: workflowInterceptorModules(),
        preloadModules: workflowPreloadModules(),
        logger: quiet,
      })
    ).code;
    buildA = bundleBuildId(fs.readFileSync(platform.workflowBundlePath, 'utf8'));
    buildB = bundleBuildId(bundleB);
    const hands = await createHandsWorker({
      connection: t.nativeConnection,
      namespace: 'default',
      taskQueue: handsQueue,
      docker: new Docker(),
      image: platform.sandboxImage,
    });
    running.set(hands, hands.run());
  });

  afterAll(async () => {
    for (const worker of [...running.keys()]) await stop(worker);
    await model?.stop();
    await removeSandboxes(sessions);
    await t?.close();
    await server?.stop();
  });

  it('adopts an operation started before versioning into the first versioned build, A', async () => {
    const unversioned = await brainWorker({ codePath: testPlatform().workflowBundlePath }, {});
    model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'echo never' } }] }]);
    const op0 = await start(`op-0-${id}`, { goal: 'started unversioned', approvals: { bash: 'ask' } });
    const { toolCallId } = await waitFor(
      async () => (await op0.query(statusQuery).catch(() => undefined))?.waitingApproval,
      'the unversioned operation to wait for its approval',
    );
    brainA = await brainWorker({ codePath: testPlatform().workflowBundlePath });
    // A version exists once one of its workers has polled.
    await waitFor(
      () =>
        setCurrentVersion(t.client, deployment, buildA).then(
          () => true,
          () => false,
        ),
      `build ${buildA} to become current`,
    );
    await stop(unversioned);
    model.setScript([{ text: 'done on A' }]);
    await decideToolCall(t.client.workflow, { operationId: op0.workflowId, toolCallId, approve: false, reason: 'no' });
    expect(await operationResult(op0)).toMatchObject({ state: 'completed', finalText: 'done on A' });
    // Its first tasks on the unversioned worker, the rest on A: the same code replayed its history.
    const builds = await taskBuilds(op0);
    const adopted = builds.completed.indexOf(buildA);
    expect(adopted).toBeGreaterThan(0);
    expect(builds).toEqual({
      completed: [
        ...only('unversioned', { completed: builds.completed.slice(0, adopted) }),
        ...only(buildA, { completed: builds.completed.slice(adopted) }),
      ],
      failed: 0,
    });
    expect((await describe(op0))?.versioningInfo).toMatchObject({
      behavior: PINNED,
      deploymentVersion: { deploymentName: deployment, buildId: buildA },
    });
  });

  it('keeps an operation started on A on A while B is ramped and made current, and starts new ones on B', async () => {
    expect(buildB).not.toBe(buildA);
    model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'echo a-$((6*7))' } }] }]);
    op1 = await start(`op-a-${id}`, { goal: 'a long task', approvals: { bash: 'ask' } });
    const waiting = await waitFor(
      async () => (await op1.query(statusQuery).catch(() => undefined))?.waitingApproval,
      'the operation on A to wait for its approval',
    );

    await brainWorker({ code: bundleB });
    await waitFor(async () => version(await status(), buildB), `build ${buildB} to poll`);
    expect(await agent('deploy', 'ramp', buildB, '100')).toContain(`${buildB} is ramping at 100%`);
    model.setScript([{ toolCalls: [{ name: 'bash', input: { command: 'echo b-$((6*7))' } }] }, { text: 'done on B' }]);
    const op2 = await start(`op-b-${id}`, { goal: 'a new task' });
    expect(await operationResult(op2)).toMatchObject({ state: 'completed', finalText: 'done on B' });
    expect(model.requests.filter((r) => r.status === 200).at(-1)?.rawBody).toContain('b-42');
    const ramped = await status();
    expect(ramped).toMatchObject({ current: buildA, ramping: { buildId: buildB, percent: 100 } });
    expect(version(ramped, buildA)).toMatchObject({ state: 'current', pinned: 1, pinnedIds: [op1.workflowId] });

    expect(await agent('deploy', 'set-current', buildB)).toContain(`${buildB} is current in ${deployment}`);
    const text = await agent('deploy', 'status');
    expect(text).toContain(`Worker Deployment ${deployment} · current ${buildB}`);
    expect(text).toContain(`${buildA}  draining · 1 pinned (${op1.workflowId})`);
    const after = await status();
    expect(after.ramping).toBeUndefined();
    expect(version(after, buildA)).toMatchObject({ state: 'draining', pinned: 1, queues: [{ name: brainQueue }] });

    const [a, b] = await Promise.all([taskBuilds(op1), taskBuilds(op2)]);
    expect({ a, b }).toEqual({
      a: { completed: only(buildA, a), failed: 0 },
      b: { completed: only(buildB, b), failed: 0 },
    });
    expect(waiting.summary).toContain('echo a-$((6*7))');
  });

  it("names the work pinned to A once A's workers are gone; a new worker of A finishes it there, and A drains", async () => {
    await stop(brainA);
    const settings = temporalSettings(env);
    const orphaned = await waitFor(async () => {
      const report = await diagnose({ settings, listSandboxes: async () => [], pollerGoneAfterMs: 5_000 });
      return report.findings.find((f) => f.kind === 'version-without-pollers');
    }, 'agent doctor to name the work pinned to A');
    expect(orphaned).toMatchObject({ subject: `${deployment}:${buildA}` });
    expect(orphaned.reason).toContain(`1 running workflow(s) pinned to build ${buildA} of ${deployment}`);
    expect(orphaned.reason).toContain(op1.workflowId);
    expect(orphaned.fix).toContain(
      `AGENT_WORKER_DEPLOYMENT=${deployment} AGENT_BRAIN_QUEUE=${brainQueue} agent worker brain`,
    );

    brainA = await brainWorker({ codePath: testPlatform().workflowBundlePath });
    await waitFor(async () => {
      const report = await diagnose({ settings, listSandboxes: async () => [], pollerGoneAfterMs: 5_000 });
      return !report.findings.some((f) => f.kind === 'version-without-pollers');
    }, 'the new worker of A to poll');

    model.setScript([{ text: 'done on A' }]);
    const toolCallId = (await op1.query(statusQuery)).waitingApproval!.toolCallId;
    await decideToolCall(t.client.workflow, { operationId: op1.workflowId, toolCallId, approve: true });
    const result = await operationResult(op1);
    expect(result).toMatchObject({ state: 'completed', finalText: 'done on A' });
    expect((await describe(op1))?.versioningInfo).toMatchObject({
      behavior: PINNED,
      deploymentVersion: { deploymentName: deployment, buildId: buildA },
    });
    const builds = await taskBuilds(op1);
    expect(builds).toEqual({ completed: only(buildA, builds), failed: 0 });
    expect(builds.completed.length).toBeGreaterThan(2);
    // The unversioned hands worker ran its tool: the output went to the model with the next request.
    expect(model.requests.filter((r) => r.status === 200).at(-1)?.rawBody).toContain('a-42');

    const drained = await waitFor(async () => {
      const v = version(await status(), buildA);
      return v?.state === 'drained' ? v : undefined;
    }, `build ${buildA} to drain`);
    expect(drained).toMatchObject({ pinned: 0 });
    expect(await agent('deploy', 'status')).toContain(`agent deploy delete ${buildA}`);
  });

  it("could not have run the operation on B: its history replays on A's code and fails on B's", async () => {
    const history = await op1.fetchHistory();
    const sinks = { ...crashPointSinks, ...traceSinks(undefined) };
    const onA = { workflowBundle: { codePath: testPlatform().workflowBundlePath }, sinks };
    await Worker.runReplayHistory(onA, history, op1.workflowId);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { code: bundleB }, sinks }, history, op1.workflowId),
    ).rejects.toThrow(/nondeterminism/i);
  });
});
