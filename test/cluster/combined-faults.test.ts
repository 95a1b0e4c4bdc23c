/**
 * Faults at cluster scale, all in one run, on the real Temporal cluster of `npm run cluster` (run by
 * `.ci/run`'s cluster stage): two brain workers (`agent worker brain`, one process each) and two
 * hands hosts on two Docker engines (`agent worker hands`: host-a on the default engine, host-b on a
 * second `dockerd` standing for a second machine), polling one shared hands queue. The work: 20
 * operations, a session with two lanes and a coding task (textkit's features). Mid-run, with every
 * piece of work parked inside a tool call: one brain worker and one hands host are SIGKILLed; the
 * operations on the lost host show it in their status (stuck on its queue); one of them is moved to
 * the other host with `replaceHandsHost`; ten more operations start on the other host; the history
 * service is SIGKILLed and started again; then the lost host comes back. Everything completes; every
 * command ran exactly once (the workspaces' effect logs); each host received work; the token ledger
 * (operations, lanes, task) equals what the model server reported; `agent doctor` is clean; the
 * `AgentStatus` filter answers.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandle } from '@temporalio/client';
import Docker from 'dockerode';
import { operationResult } from '../../client/operation-result';
import { submitPrompt } from '../../client/session';
import type { DoctorReport } from '../../cli/doctor';
import { hostQueueOf, replaceHandsHostUpdate } from '../../common/hands-route';
import { addUsage, ZERO_USAGE, type TokenUsage } from '../../common/model-types';
import { OPERATION_WORKFLOW_TYPE, statusQuery, type OperationResult } from '../../common/operation';
import { sessionWorkflowId } from '../../common/session';
import { containerNameOf, volumeNameOf } from '../../common/sandbox-names';
import { ensureExtraDockerEngine, type ExtraDockerEngine } from '../../platform/docker-engines';
import { PROJECT_ROOT } from '../../platform/paths';
import {
  clusterLayout,
  devServerVersion,
  ensureServerBinaries,
  startService,
  stopService,
  waitServing,
} from '../../platform/temporal-cluster';
import { codingTaskScenario } from '../../scripted-model/scenarios/coding-task';
import type { ScriptedRequest, ScriptedTurn } from '../../scripted-model/script';
import { startTaskHarness, taskResult, taskSessionId, type TaskHarness } from '../support/coding-task';
import { testPlatform } from '../support/env';
import { removeSandboxes } from '../support/hands';
import { spawnHandsHost, type HandsHostProcess } from '../support/hands-host-process';
import { waitFor } from '../support/operation-harness';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

jest.setTimeout(600_000);

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');
const RELEASE = '/workspace/.release';
const PREFIX = { 'host-a': 'hosta-', 'host-b': 'hostb-' } as const;
type Host = keyof typeof PREFIX;

/** The first user message's text: the goal, which names the piece of work. */
const goalOf = (request: ScriptedRequest): string => {
  const first = request.body.messages[0];
  return typeof first?.content === 'string' ? first.content : JSON.stringify(first?.content ?? '');
};

/**
 * A tagged piece of work: its first call logs its effect and (unless its tag says `quick`) waits for
 * the release, its second logs another, then it is done. The tag names each effect, so a duplicate
 * shows in the log.
 */
function taggedTurn(tag: string, request: ScriptedRequest): ScriptedTurn {
  const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) {
    const wait = tag.startsWith('quick') ? '' : `; until [ -f ${RELEASE} ]; do sleep 0.1; done`;
    const command = `echo ${tag}-1 >> /workspace/effects.log${wait}`;
    return { toolCalls: [{ name: 'bash', input: { command } }] };
  }
  if (turn === 1)
    return { toolCalls: [{ name: 'bash', input: { command: `echo ${tag}-2 >> /workspace/effects.log` } }] };
  return { text: `done ${tag}` };
}

const sum = (usages: TokenUsage[]): TokenUsage => usages.reduce((total, u) => addUsage(total, u), { ...ZERO_USAGE });

describe('faults at cluster scale: brain and hands workers, a hands host and the history service', () => {
  const layout = { address: '' };
  let h: TaskHarness;
  let engineB: ExtraDockerEngine;
  const defaultEngine = new Docker();
  const brains: WorkerProcess[] = [];
  const hosts: HandsHostProcess[] = [];
  const id = randomUUID().slice(0, 6);
  const sharedQueue = `hands-combined-${id}`;
  const sessionIds: string[] = [];

  const engineOf = (host: Host): Docker => (host === 'host-b' ? engineB.docker : defaultEngine);
  const dockerArgs = (host: Host): string[] => (host === 'host-b' ? ['-H', engineB.dockerHost] : []);
  /** A command in a sandbox, as the agent; undefined when it fails (no container yet). */
  const sh = (host: Host, sessionId: string, script: string): Promise<string | undefined> =>
    run(
      'docker',
      [...dockerArgs(host), 'exec', '-u', '1000', containerNameOf(sessionId, PREFIX[host]), 'bash', '-c', script],
      { encoding: 'utf8' },
    ).then(
      ({ stdout }) => stdout,
      () => undefined,
    );
  const effects = async (host: Host, sessionId: string) =>
    (await sh(host, sessionId, 'cat /workspace/effects.log 2>/dev/null')) ?? '';

  const startHost = async (host: Host): Promise<HandsHostProcess> => {
    const process = await spawnHandsHost({
      sharedQueue,
      host,
      prefix: PREFIX[host],
      temporalAddress: layout.address,
      env: { AGENT_TASKS_DIR: h.tasksDir },
      ...(host === 'host-b' ? { dockerHost: engineB.dockerHost } : {}),
    });
    hosts.push(process);
    return process;
  };
  const startBrain = (): WorkerProcess => {
    const brain = startWorkerProcess({
      role: 'brain',
      temporalAddress: layout.address,
      brainQueue: h.brainQueue,
      handsQueue: sharedQueue,
      modelUrl: h.model.url,
    });
    brains.push(brain);
    return brain;
  };
  const startOperation = (tag: string): Promise<WorkflowHandle> => {
    sessionIds.push(tag);
    return h.temporal.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
      taskQueue: h.brainQueue,
      workflowId: tag,
      args: [
        {
          goal: `combined ${tag}`,
          sessionId: tag,
          handsTaskQueue: sharedQueue,
          keepContainer: true,
          stuck: { notStartedMs: 1_000, recheckMs: 500 },
        },
      ],
    });
  };
  /** Waits until every tag's first call has logged its effect in its sandbox on `host`. */
  const parked = async (host: Host, tags: Array<{ sessionId: string; tag: string }>) => {
    for (const { sessionId, tag } of tags)
      await waitFor(async () => (await effects(host, sessionId)).includes(`${tag}-1`), `${tag} inside its first call`);
  };

  beforeAll(async () => {
    const cluster = clusterLayout(await devServerVersion());
    if (testPlatform().temporalAddress !== cluster.address)
      throw new Error(
        `these tests run on the cluster of \`npm run cluster\` (${cluster.address}), not ${testPlatform().temporalAddress}: use npm run test:cluster`,
      );
    layout.address = cluster.address;
    const tasks = codingTaskScenario({ holdBeforeCommit: 'words' });
    h = await startTaskHarness(
      {},
      {
        address: cluster.address,
        workers: 'none',
        script: (request) => {
          const task = tasks(request);
          if (task) return task;
          const tag = /combined ([a-z0-9-]+)/.exec(goalOf(request))?.[1];
          return tag ? taggedTurn(tag, request) : undefined;
        },
      },
    );
    engineB = await ensureExtraDockerEngine('hands-b', { images: [testPlatform().sandboxImage] });
  });

  /** Every sandbox the test may have made, on either host. */
  const sandboxesMade = (): string[] => [...sessionIds, taskSessionId(`combined-task-${id}`)];

  afterAll(async () => {
    // Whatever of this run still runs (a failed run) leaves the shared cluster.
    const query = `WorkflowId STARTS_WITH 'combined-' OR WorkflowId STARTS_WITH 'op-combined-' OR WorkflowId STARTS_WITH 'session-combined-'`;
    if (h)
      for await (const execution of h.temporal.client.workflow.list({
        query: `(${query}) AND ExecutionStatus = 'Running'`,
      }))
        if (execution.workflowId.includes(id))
          await h.temporal.client.workflow
            .getHandle(execution.workflowId)
            .terminate('test finished')
            .catch(() => undefined);
    for (const host of hosts) await host.stop();
    for (const brain of brains) await brain.stop();
    await removeSandboxes(sandboxesMade(), PREFIX['host-a'], defaultEngine);
    if (engineB) await removeSandboxes(sandboxesMade(), PREFIX['host-b'], engineB.docker);
    await h?.close();
  });

  it('ends with everything completed, every command run once, each host used and the ledger exact', async () => {
    const cluster = clusterLayout(await devServerVersion());
    const [brain1] = [startBrain(), startBrain()];
    const hostA = await startHost('host-a');

    // Phase 1, host-a alone polls the shared queue: it claims the first ten operations, the session
    // and the coding task.
    const first = Array.from({ length: 10 }, (_, i) => `combined-a${i}-${id}`);
    const firstHandles = await Promise.all(first.map(startOperation));
    const session = `combined-session-${id}`;
    sessionIds.push(session);
    const lanes: string[] = [];
    const submitLane = async (lane: 'parked' | 'quick') => {
      const accepted = await submitPrompt(h.temporal.client, {
        sessionId: session,
        prompt: { prompt: `combined ${lane}-${id}`, lane, stuck: { notStartedMs: 1_000, recheckMs: 500 } },
        session: { handsTaskQueue: sharedQueue, keepContainer: true },
        taskQueue: h.brainQueue,
      });
      expect(accepted.state).toBe('started');
      lanes.push(accepted.operationId);
    };
    await submitLane('parked');
    const taskId = `combined-task-${id}`;
    const task = await h.start(
      { branch: `agent/combined-${id}`, specPath: 'SPEC.md', verify: 'npm test', handsTaskQueue: sharedQueue },
      taskId,
    );
    const taskSession = taskSessionId(taskId);

    await parked('host-a', [
      ...first.map((tag) => ({ sessionId: tag, tag })),
      { sessionId: session, tag: `parked-${id}` },
    ]);
    // The lanes share the session's sandbox, one tool call at a time: `quick`, submitted once the parked
    // lane holds the lease inside its call, waits for it (were it first, it could finish before the kills).
    await submitLane('quick');
    await waitFor(async () => {
      const status = await h.temporal.client.workflow.getHandle(lanes[1]!).query(statusQuery);
      return status.phase === 'tools';
    }, 'the quick lane to wait for the sandbox, its reply recorded');
    await waitFor(
      async () => (await sh('host-a', taskSession, 'cat /workspace/.agent/commit-effects.log'))?.includes('words'),
      'the coding task to reach its second commit',
      300_000,
    );

    // Nothing is in a model call now: the kills cut no model response (the ledger stays exact).
    await brain1!.kill();
    await hostA.kill();
    hosts.splice(hosts.indexOf(hostA), 1);
    const lostQueue = hostQueueOf(sharedQueue, 'host-a');
    const stuck = await waitFor(
      async () => (await h.temporal.client.workflow.getHandle(first[1]!).query(statusQuery)).stuck,
      'an operation on the lost host to be stuck',
    );
    expect(stuck.reason).toContain(`stuck: no worker polls ${lostQueue}`);

    // Phase 2, host-b alone: ten more operations claim it; the first operation moves to it.
    await startHost('host-b');
    const second = Array.from({ length: 10 }, (_, i) => `combined-b${i}-${id}`);
    const secondHandles = await Promise.all(second.map(startOperation));
    await parked(
      'host-b',
      second.map((tag) => ({ sessionId: tag, tag })),
    );
    const moved = await h.temporal.client.workflow
      .getHandle(first[0]!)
      .executeUpdate(replaceHandsHostUpdate, { args: [{ reason: 'host-a is down for repairs' }] });
    expect(moved).toEqual({ accepted: true, lostHost: 'host-a' });
    const movedResult = await operationResult(firstHandles[0]!);
    expect(movedResult).toMatchObject({ state: 'completed', handsHost: 'host-b' });

    // The history service dies with twenty-two pieces of work parked in tool calls, and comes back.
    await stopService(cluster, 'history', 'SIGKILL');
    startService(cluster, await ensureServerBinaries(cluster.version), 'history');
    await waitServing(cluster);

    // Release everything, then the lost host comes back: its work resumes where it was.
    for (const tag of second) await sh('host-b', tag, `touch ${RELEASE}`);
    for (const tag of first.slice(1)) await sh('host-a', tag, `touch ${RELEASE}`);
    await sh('host-a', session, `touch ${RELEASE}`);
    await sh('host-a', taskSession, 'touch /tmp/release-words');
    await startHost('host-a');

    const results: OperationResult[] = await Promise.all(
      [...firstHandles.slice(1), ...secondHandles].map((handle) => operationResult(handle)),
    );
    const laneResults = await Promise.all(
      lanes.map((operationId) => operationResult(h.temporal.client.workflow.getHandle(operationId))),
    );
    const taskOutcome = await taskResult(task);

    // Everything completed, on the host that holds its workspace.
    expect([...results, ...laneResults].map((r) => [r.sessionId, r.state])).toEqual(
      [...first.slice(1), ...second, session, session].map((sessionId) => [sessionId, 'completed']),
    );
    expect(results.map((r) => r.handsHost)).toEqual([
      ...first.slice(1).map(() => 'host-a'),
      ...second.map(() => 'host-b'),
    ]);
    expect(laneResults.map((r) => r.handsHost)).toEqual(['host-a', 'host-a']);
    expect(taskOutcome).toMatchObject({ state: 'completed', reason: 'all features pass' });

    // Every command ran exactly once: each effect is in its workspace's log once.
    for (const tag of first.slice(1)) expect(await effects('host-a', tag)).toBe(`${tag}-1\n${tag}-2\n`);
    for (const tag of second) expect(await effects('host-b', tag)).toBe(`${tag}-1\n${tag}-2\n`);
    // The moved operation's first call ran on host-a; its second, in a new workspace on host-b.
    expect(await effects('host-a', first[0]!)).toBe(`${first[0]}-1\n`);
    expect(await effects('host-b', first[0]!)).toBe(`${first[0]}-2\n`);
    expect(movedResult.finalText).toBe(`done ${first[0]}`);
    const laneEffects = (await effects('host-a', session)).trim().split('\n').sort();
    expect(laneEffects).toEqual([`parked-${id}-1`, `parked-${id}-2`, `quick-${id}-1`, `quick-${id}-2`]);
    // The task's container is gone with the task; its workspace volume holds the agent's commit log.
    const { stdout: commits } = await run(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '-v',
        `${volumeNameOf(taskSession, PREFIX['host-a'])}:/w`,
        testPlatform().sandboxImage,
        'cat',
        '/w/.agent/commit-effects.log',
      ],
      { encoding: 'utf8' },
    );
    expect(commits.trim().split('\n')).toEqual(['slug', 'words', 'title']);

    // Each host received work, on its own engine: a sandbox per operation it ran (and host-a's
    // for the session), and none of another host's.
    for (const host of ['host-a', 'host-b'] as const) {
      const names = (await engineOf(host).listContainers({ all: true })).flatMap((c) => c.Names);
      const expected = host === 'host-a' ? [...first, session] : [...second, first[0]!];
      for (const sessionId of expected) expect(names).toContain(`/${containerNameOf(sessionId, PREFIX[host])}`);
      const other = PREFIX[host === 'host-a' ? 'host-b' : 'host-a'];
      expect(names.filter((name) => name.startsWith(`/${other}`) && name.includes(id))).toEqual([]);
    }

    // The ledger: what the operations, the lanes and the task say they used is what the server reported.
    const served = { ...ZERO_USAGE };
    for (const request of h.model.requests.filter((r) => r.path === '/v1/messages')) {
      const usage = request.reportedUsage;
      if (!usage) continue;
      served.input += usage.input_tokens;
      served.cacheWrite += usage.cache_creation_input_tokens;
      served.cacheRead += usage.cache_read_input_tokens;
      served.output += usage.output_tokens;
    }
    const ledger = sum([movedResult, ...results, ...laneResults].map((r) => r.usage).concat(taskOutcome.usage));
    expect({
      input: ledger.input,
      cacheWrite: ledger.cacheWrite,
      cacheRead: ledger.cacheRead,
      output: ledger.output,
    }).toEqual({
      input: served.input,
      cacheWrite: served.cacheWrite,
      cacheRead: served.cacheRead,
      output: served.output,
    });
    expect(h.model.scriptErrors).toEqual([]);

    // The operator's view afterwards (the session ended, the sandboxes removed): doctor finds
    // nothing wrong, and the AgentStatus filter lists the operations.
    await h.temporal.client.workflow.getHandle(sessionWorkflowId(session)).terminate('test finished');
    await removeSandboxes(sandboxesMade(), PREFIX['host-a'], defaultEngine);
    await removeSandboxes(sandboxesMade(), PREFIX['host-b'], engineB.docker);
    const doctor = await run(AGENT, ['doctor', '--json'], {
      env: { ...process.env, TEMPORAL_ADDRESS: cluster.address, TEMPORAL_NAMESPACE: 'default' },
      encoding: 'utf8',
    }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout || `${err.stderr}` }));
    const report = JSON.parse(doctor.stdout) as DoctorReport;
    // The cluster is shared with the stage's other tests (and what a failed earlier run left):
    // nothing doctor reports may concern this run's work.
    const ours = report.findings.filter((finding) => JSON.stringify(finding).includes(id));
    expect({ findings: ours, skipped: report.skipped }).toEqual({ findings: [], skipped: [] });
    const query = `AgentStatus = 'completed'`;
    const everyOperation = [...first, ...second];
    await waitFor(async () => {
      const found = new Set<string>();
      for await (const execution of h.temporal.client.workflow.list({ query })) found.add(execution.workflowId);
      return everyOperation.every((op) => found.has(op));
    }, 'the completed operations in the AgentStatus filter');
  });
});
