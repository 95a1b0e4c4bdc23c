/**
 * Two hands hosts on two Docker engines (host-a on the default engine, host-b on a second `dockerd`
 * with its own socket, data root and exec root: a second machine), polling one shared hands queue:
 * each host receives work, every hands call of a session reaches the host that holds its workspace
 * (the workspace exists on that engine only); a lost host makes the operation stuck on that host's
 * queue until someone decides to give it up (`replaceHandsHost`), after which the next call starts a
 * new workspace on the other host.
 */
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { operationResult } from '../../client/operation-result';
import { hostQueueOf, replaceHandsHostUpdate } from '../../common/hands-route';
import { statusQuery } from '../../common/operation';
import { containerNameOf, volumeNameOf } from '../../common/sandbox-names';
import { removeSandboxes } from '../support/hands';
import type { ScriptedRequest } from '../../scripted-model/script';
import { defaultPayloadConverter } from '@temporalio/common';
import Docker from 'dockerode';
import { ensureExtraDockerEngine, type ExtraDockerEngine } from '../../platform/docker-engines';
import { testPlatform } from '../support/env';
import { spawnHandsHost, type HandsHostProcess } from '../support/hands-host-process';
import { OperationHarness, startOperationHarness, waitFor } from '../support/operation-harness';

describe('hands routing across two hosts (real Temporal, Docker and scripted model)', () => {
  let h: OperationHarness;
  let sharedQueue: string;
  let engineB: ExtraDockerEngine;
  const hosts: HandsHostProcess[] = [];
  const sessions: string[] = [];
  const defaultEngine = new Docker();
  /** host-a runs on the default engine, host-b on the second one. */
  const engineOf = (host: string): Docker => (host === 'host-b' ? engineB.docker : defaultEngine);

  async function startHost(name: 'host-a' | 'host-b', prefix: string): Promise<HandsHostProcess> {
    const host = await spawnHandsHost({
      sharedQueue,
      host: name,
      prefix,
      ...(name === 'host-b' ? { dockerHost: engineB.dockerHost } : {}),
    });
    hosts.push(host);
    return host;
  }

  async function stopHost(name: string): Promise<void> {
    const index = hosts.findIndex((host) => host.host === name);
    if (index >= 0) await hosts.splice(index, 1)[0]!.stop();
  }

  const start = (goal: string) => {
    const id = `op-hosts-${randomUUID().slice(0, 8)}`;
    sessions.push(id);
    return h.start({ goal, handsTaskQueue: sharedQueue }, id);
  };

  beforeAll(async () => {
    h = await startOperationHarness();
    sharedQueue = `hands-shared-${randomUUID().slice(0, 8)}`;
    engineB = await ensureExtraDockerEngine('hands-b', { images: [testPlatform().sandboxImage] });
  });
  afterAll(async () => {
    for (const host of hosts) await host.stop();
    await removeSandboxes(sessions, 'hosta-', defaultEngine);
    if (engineB) await removeSandboxes(sessions, 'hostb-', engineB.docker);
    await h.close();
  });

  /** Queues of every hands activity the operation scheduled, by activity type. */
  async function handsQueues(handle: WorkflowHandle): Promise<Array<{ type: string; queue: string }>> {
    const history = await handle.fetchHistory();
    return (history.events ?? []).flatMap((event) => {
      const scheduled = event.activityTaskScheduledEventAttributes;
      const type = scheduled?.activityType?.name ?? '';
      return ['runTool', 'claimSandboxHost', 'destroySandbox', 'seedWorkspace'].includes(type)
        ? [{ type, queue: scheduled?.taskQueue?.name ?? '' }]
        : [];
    });
  }

  const volumeExists = (docker: Docker, name: string) =>
    docker
      .getVolume(name)
      .inspect()
      .then(() => true)
      .catch(() => false);

  /** Runs operations at once; each writes its tag and reads it back three times. Their hosts, in order. */
  async function runTagged(count: number): Promise<string[]> {
    const tags = Array.from({ length: count }, () => `tag-${randomUUID().slice(0, 8)}`);
    const handles = await Promise.all(tags.map((tag) => start(`remember ${tag}`)));
    const results = await Promise.all(handles.map((handle) => operationResult(handle)));
    const used: string[] = [];
    for (const [i, result] of results.entries()) {
      expect(result.state).toBe('completed');
      // A call that reached the other host would have found an empty workspace.
      expect(result.finalText).toContain(`read: ${tags[i]}`);
      const host = hosts.find((candidate) => candidate.host === result.handsHost)!;
      expect(host).toBeDefined();
      used.push(host.host);
      const queues = await handsQueues(handles[i]);
      expect(queues[0]).toEqual({ type: 'claimSandboxHost', queue: sharedQueue });
      const rest = queues.slice(1);
      expect(rest.filter((q) => q.type === 'runTool')).toHaveLength(4);
      for (const q of rest) expect(q.queue).toBe(hostQueueOf(sharedQueue, host.host));
      // The workspace is on that host's engine, under its prefix, and on no other.
      const prefixes = { 'host-a': 'hosta-', 'host-b': 'hostb-' } as const;
      const mine = prefixes[host.host as keyof typeof prefixes];
      const other = host.host === 'host-a' ? 'host-b' : 'host-a';
      expect(result.workspaceVolume).toBe(volumeNameOf(result.sessionId, mine));
      expect(await volumeExists(engineOf(host.host), volumeNameOf(result.sessionId, mine))).toBe(true);
      expect(await volumeExists(engineOf(other), volumeNameOf(result.sessionId, prefixes[other]))).toBe(false);
      expect(await volumeExists(engineOf(other), volumeNameOf(result.sessionId, mine))).toBe(false);
    }
    return used;
  }

  it('each host receives work, and every call of a session reaches the host that holds its workspace', async () => {
    h.model.setScript((request: ScriptedRequest) => {
      const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
      const first = request.body.messages[0];
      const goal = typeof first.content === 'string' ? first.content : JSON.stringify(first.content);
      const tag = /tag-[0-9a-f]+/.exec(goal)?.[0] ?? 'none';
      if (turn === 0) return { toolCalls: [{ name: 'write_file', input: { path: 'tag.txt', content: tag } }] };
      if (turn <= 3) return { toolCalls: [{ name: 'bash', input: { command: 'cat tag.txt' } }] };
      return { text: `read: ${request.toolResults[0]?.content.trim()}` };
    });
    // host-a alone polls the shared queue: it claims every session.
    await startHost('host-a', 'hosta-');
    expect(await runTagged(2)).toEqual(['host-a', 'host-a']);
    // Both poll it: which claims a session is up to the server; its calls follow the claim either way.
    await startHost('host-b', 'hostb-');
    await runTagged(4);
    // host-b alone: it claims every session, on its own engine.
    await stopHost('host-a');
    expect(await runTagged(2)).toEqual(['host-b', 'host-b']);
  });

  it('a lost host leaves the operation stuck on its queue until a recorded decision replaces it', async () => {
    for (const host of hosts.splice(0)) await host.stop();
    const hostA = await startHost('host-a', 'hosta-');
    h.model.setScript([
      {
        toolCalls: [
          {
            name: 'bash',
            input: { command: 'echo A > marker.txt; while [ ! -f release ]; do sleep 0.05; done; echo released' },
          },
        ],
      },
      { toolCalls: [{ name: 'bash', input: { command: 'cat marker.txt' } }] },
      {
        expect: (request) => expect(request.toolResults[0]?.content).toContain('not run: the hands host'),
        toolCalls: [{ name: 'bash', input: { command: 'cat marker.txt 2>&1; echo fresh > fresh.txt' } }],
      },
      { respond: (request) => ({ text: `after: ${request.toolResults[0]?.content.trim()}` }) },
    ]);
    const id = `op-lost-${randomUUID().slice(0, 8)}`;
    sessions.push(id);
    const handle = await h.start(
      {
        goal: 'survive a lost host',
        handsTaskQueue: sharedQueue,
        stuck: { notStartedMs: 1_000, recheckMs: 500 },
        // The tool call is what waits for the lost host here, not the checkpoint after the first turn.
        checkpoints: { enabled: false },
      },
      id,
    );
    const container = containerNameOf(id, 'hosta-');
    await waitFor(async () => {
      try {
        return execFileSync('docker', ['exec', container, 'cat', '/workspace/marker.txt'], { encoding: 'utf8' }).trim();
      } catch {
        return undefined;
      }
    }, 'the first call to run on host-a');
    // Host A goes away (its workers stop polling) once the running call is released.
    const stopping = hostA.stop();
    execFileSync('docker', ['exec', '-u', AGENT_USER, container, 'touch', '/workspace/release']);
    await stopping;

    const stuck = await waitFor(async () => (await handle.query(statusQuery)).stuck, 'the operation to be stuck');
    expect(stuck.reason).toContain(`stuck: no worker polls ${hostQueueOf(sharedQueue, 'host-a')}`);
    expect(stuck.waitingOn).toBe('tool bash: cat marker.txt');

    await startHost('host-b', 'hostb-');
    // Host B alone does not unstick it: the workspace is on host A.
    expect((await handle.query(statusQuery)).handsHost).toBe('host-a');
    const refused = await handle.executeUpdate(replaceHandsHostUpdate, { args: [{ reason: ' ' }] }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect((refused?.cause as Error | undefined)?.message).toMatch(/reason: must be a non-empty string/);
    const decision = await handle.executeUpdate(replaceHandsHostUpdate, {
      args: [{ reason: 'host-a was decommissioned' }],
    });
    expect(decision).toEqual({ accepted: true, lostHost: 'host-a' });

    const result = await operationResult(handle);
    expect(result.state).toBe('completed');
    expect(result.handsHost).toBe('host-b');
    expect(result.finalText).toContain('No such file');
    h.model.assertScriptFinished();
    expect(result.details).toContain('hands host: host-b');
    const history = await handle.fetchHistory();
    const accepted = (history.events ?? []).find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'replaceHandsHost',
    );
    const payload =
      accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
    expect(payload && defaultPayloadConverter.fromPayload(payload)).toEqual({ reason: 'host-a was decommissioned' });
    const queues = await handsQueues(handle);
    expect(queues.filter((q) => q.type === 'claimSandboxHost')).toHaveLength(2);
  });
});
