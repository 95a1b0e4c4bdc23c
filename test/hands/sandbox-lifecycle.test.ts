/** Containers come and go; the workspace stays. Real engine, real image. */
import { randomUUID } from 'node:crypto';
import Docker from 'dockerode';
import { ApplicationFailure } from '@temporalio/common';
import { dockerClient } from '../../platform/docker-engine';
import { createHandsActivities } from '../../activities/hands/activities';
import { SandboxManager, type SandboxInfo } from '../../activities/hands/sandbox-manager';
import { containerNameOf, journalVolumeNameOf, volumeNameOf } from '../../common/sandbox-names';
import { sandboxCommand } from '../../cli/sandbox';
import { handsFixture } from '../support/hands';
import { testPlatform } from '../support/env';

describe('sandbox lifecycle (real Docker)', () => {
  const fx = handsFixture();
  const docker = dockerClient();
  const hands = createHandsActivities({ manager: fx.manager });
  const bash = (sessionId: string, command: string) =>
    hands.runTool({ sessionId, toolCallId: `toolu_${randomUUID().slice(0, 12)}`, name: 'bash', input: { command } });

  afterAll(() => fx.cleanup());

  it('replaces a killed container on the same workspace and tells the model', async () => {
    const sessionId = fx.sessionId('kill');
    const first = await bash(sessionId, 'echo kept > state.txt && echo ok');
    expect(first.sandboxReplaced).toBeUndefined();
    await docker.getContainer(containerNameOf(sessionId)).kill();

    const second = await bash(sessionId, 'cat state.txt');
    expect(second.isError).toBe(false);
    expect(second.sandboxReplaced).toBe('the previous container was gone (exited 137)');
    expect(second.content).toBe(
      '[sandbox restarted: the previous container was gone (exited 137); /workspace is preserved]\nkept\n[exit code 0]',
    );

    const third = await bash(sessionId, 'cat state.txt');
    expect(third.sandboxReplaced).toBeUndefined();
  });

  it('replaces a removed container and says so', async () => {
    const sessionId = fx.sessionId('rm');
    await bash(sessionId, 'echo here > f');
    await docker.getContainer(containerNameOf(sessionId)).remove({ force: true });
    const next = await bash(sessionId, 'cat f');
    expect(next.sandboxReplaced).toBe('the previous container was gone (removed)');
    expect(next.content).toContain('here\n[exit code 0]');
  });

  it('creates one container for concurrent ensure calls, also across managers', async () => {
    const sessionId = fx.sessionId('race');
    const { sandboxImage: image, sandboxTools } = testPlatform();
    const other = new SandboxManager({ docker, image, sandboxTools });
    const results = await Promise.all([
      fx.manager.ensure(sessionId),
      fx.manager.ensure(sessionId),
      other.ensure(sessionId),
      other.ensure(sessionId),
    ]);
    expect(new Set(results.map((r) => r.containerId)).size).toBe(1);
    // Calls on one manager share one creation; of the two managers exactly one created it.
    expect(results[1]).toBe(results[0]);
    expect(results[3]).toBe(results[2]);
    expect([results[0].created, results[2].created].sort()).toEqual([false, true]);
    const containers = await docker.listContainers({ all: true, filters: { label: [`agent.sandbox=${sessionId}`] } });
    expect(containers).toHaveLength(1);
  });

  it('labels the operation, lists and removes sandboxes (CLI too)', async () => {
    const sessionId = fx.sessionId('list');
    await fx.manager.ensure(sessionId, { operationId: 'op-123' });
    const listed = (await fx.manager.list()).find((s) => s.sessionId === sessionId);
    expect(listed).toMatchObject({
      sessionId,
      operationId: 'op-123',
      container: { name: containerNameOf(sessionId), state: 'running' },
      volume: { name: volumeNameOf(sessionId) },
    });

    const lines: string[] = [];
    expect(await sandboxCommand(['ls'], { manager: fx.manager, out: (l) => lines.push(l) })).toBe(0);
    expect(lines.join('\n')).toMatch(
      new RegExp(`${sessionId}\\s+${containerNameOf(sessionId)}\\s+Up .*${volumeNameOf(sessionId)}\\s+op-123`),
    );

    lines.length = 0;
    expect(
      await sandboxCommand(['rm', sessionId, '--keep-volume'], { manager: fx.manager, out: (l) => lines.push(l) }),
    ).toBe(0);
    expect(lines[0]).toBe(`removed sandbox ${sessionId}: container removed, volume kept`);
    expect((await fx.manager.list()).find((s) => s.sessionId === sessionId)).toEqual({
      sessionId,
      operationId: 'op-123',
      volume: expect.objectContaining({ name: volumeNameOf(sessionId) }),
      journalVolume: { name: journalVolumeNameOf(sessionId) },
    });
    expect(await sandboxCommand(['rm', sessionId], { manager: fx.manager, out: () => undefined })).toBe(0);
    expect((await fx.manager.list()).find((s) => s.sessionId === sessionId)).toBeUndefined();
    expect(
      await sandboxCommand(['rm', sessionId], { manager: fx.manager, out: () => undefined, err: () => undefined }),
    ).toBe(1);
  });

  it('garbage-collects old sandboxes by label', async () => {
    const sessionId = fx.sessionId('gc');
    await fx.manager.ensure(sessionId);
    const future = Date.now() + 10 * 60_000;
    // Nothing is older than ten minutes yet.
    // Scoped to this test's sandbox: other sandboxes on the engine (a concurrent run's) are not ours to remove.
    const only = (sandbox: SandboxInfo) => sandbox.sessionId === sessionId;
    const none = await fx.manager.gc({ olderThanMs: 60 * 60_000, volumes: true, only });
    expect(none.removedContainers).not.toContain(containerNameOf(sessionId));
    // Seen from ten minutes on, it is: the container goes, the volume only with `volumes`.
    const containersOnly = await fx.manager.gc({ olderThanMs: 60_000, now: future, only });
    expect(containersOnly.removedContainers).toContain(containerNameOf(sessionId));
    expect(containersOnly.removedVolumes).toEqual([]);
    const withVolumes = await fx.manager.gc({ olderThanMs: 60_000, volumes: true, now: future, only });
    expect(withVolumes.removedVolumes).toContain(volumeNameOf(sessionId));
    expect((await fx.manager.list()).find((s) => s.sessionId === sessionId)).toBeUndefined();
  });

  it('classifies infrastructure failures as typed ApplicationFailures', async () => {
    const call = {
      sessionId: fx.sessionId('infra'),
      toolCallId: 'toolu_infra',
      name: 'bash',
      input: { command: 'true' },
    };
    const unreachable = createHandsActivities({
      manager: new SandboxManager({
        docker: new Docker({ socketPath: '/nonexistent/docker.sock' }),
        image: 'x',
        sandboxTools: testPlatform().sandboxTools,
      }),
    });
    const down = await unreachable.runTool(call).catch((err: unknown) => err);
    expect(down).toBeInstanceOf(ApplicationFailure);
    expect(down).toMatchObject({ type: 'SandboxUnavailable', nonRetryable: false });

    const noImage = createHandsActivities({
      manager: new SandboxManager({
        docker,
        image: 'agent-sandbox:does-not-exist',
        sandboxTools: testPlatform().sandboxTools,
      }),
    });
    const missing = await noImage.runTool(call).catch((err: unknown) => err);
    expect(missing).toMatchObject({ type: 'SandboxImageMissing', nonRetryable: true });
    expect((missing as Error).message).toContain('npm run sandbox:build');

    const badId = await hands.runTool({ ...call, toolCallId: '../escape' }).catch((err: unknown) => err);
    expect(badId).toMatchObject({ type: 'InvalidToolInput', nonRetryable: true });
  });

  it('destroys a sandbox through the activity', async () => {
    const sessionId = fx.sessionId('destroy');
    await bash(sessionId, 'true');
    await hands.destroySandbox({ sessionId, keepVolume: true });
    await expect(docker.getContainer(containerNameOf(sessionId)).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getVolume(volumeNameOf(sessionId)).inspect()).resolves.toBeDefined();
    await hands.destroySandbox({ sessionId, keepVolume: false });
    await expect(docker.getVolume(volumeNameOf(sessionId)).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
