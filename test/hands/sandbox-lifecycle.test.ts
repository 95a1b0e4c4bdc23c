/**
 * Containers come and go; the workspace stays (`sandbox-lifecycle.ts`): made lazily and labelled,
 * a dead, removed or outdated container (an older harness's, another build of the sandbox tools)
 * replaced and the reason given, a stopped-before-start or paused one resumed, one creation for
 * concurrent calls, removal with or without the volumes. Real engine, real image.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { ApplicationFailure } from '@temporalio/common';
import { dockerClient } from '../../platform/docker-engine';
import { createHandsActivities } from '../../activities/hands/activities';
import { SANDBOX_TOOLS } from '../../activities/hands/executor/sandbox-tools';
import { containerSpec } from '../../activities/hands/sandbox-spec';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { containerNameOf, journalVolumeNameOf, volumeNameOf } from '../../common/sandbox-names';
import { handsFixture } from '../support/hands';
import { testPlatform } from '../support/env';

describe('sandbox lifecycle (real Docker)', () => {
  const fx = handsFixture();
  const { lifecycle } = fx.sandboxes;
  const docker = dockerClient();
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  const bash = (sessionId: string, command: string) =>
    hands.runTool({ sessionId, toolCallId: `toolu_${randomUUID().slice(0, 12)}`, name: 'bash', input: { command } });

  afterAll(() => fx.cleanup());

  it('replaces a killed container on the same workspace and tells the model', async () => {
    const sessionId = fx.sessionId('kill');
    const first = await bash(sessionId, 'echo kept > state.txt && echo ok');
    expect(first.sandboxReplaced).toBeUndefined();
    await docker.getContainer(containerNameOf(sessionId)).kill();

    const second = await bash(sessionId, 'cat state.txt');
    expect(second.isError).toBeUndefined();
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

  it('does not bring back a container removed while a call ran (the operation ended, the server gave up on the call)', async () => {
    // A tool call the server timed out while the history service was down never heard of its
    // operation's abort; the operation went on and removed the container (destroySandbox). The call
    // must not replace the container it lost: nobody would remove that one again.
    const sessionId = fx.sessionId('removed-under');
    await bash(sessionId, 'echo here > f');
    const running = bash(sessionId, 'echo started > started.txt; sleep 60');
    const started = async () => (await fx.sh(sessionId, 'cat started.txt 2>/dev/null || true')).trim() === 'started';
    for (let i = 0; i < 400 && !(await started()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await started()).toBe(true);
    expect(await hands.destroySandbox({ sessionId, keepVolume: true })).toEqual({ container: true, volume: false });

    await expect(running).rejects.toThrow(/the sandbox was removed while this call ran/);
    const containers = await docker.listContainers({ all: true, filters: { label: [`agent.sandbox=${sessionId}`] } });
    expect(containers).toHaveLength(0);
    // A call that begins after the removal gets its container, on the workspace that was kept.
    const next = await bash(sessionId, 'cat f');
    expect(next.content).toContain('here\n[exit code 0]');
  });

  it("creates one container for concurrent ensure calls, also with another worker's sandboxes", async () => {
    const sessionId = fx.sessionId('race');
    const { sandboxImage: image, sandboxTools } = testPlatform();
    const other = createSandboxes({ docker, image, sandboxTools }).lifecycle;
    const results = await Promise.all([
      fx.sandboxes.lifecycle.ensure(sessionId),
      fx.sandboxes.lifecycle.ensure(sessionId),
      other.ensure(sessionId),
      other.ensure(sessionId),
    ]);
    expect(new Set(results.map((r) => r.containerId)).size).toBe(1);
    // Calls on one worker's sandboxes share one creation; of the two workers exactly one created it.
    expect(results[1]).toBe(results[0]);
    expect(results[3]).toBe(results[2]);
    expect([results[0].created, results[2].created].sort()).toEqual([false, true]);
    const containers = await docker.listContainers({ all: true, filters: { label: [`agent.sandbox=${sessionId}`] } });
    expect(containers).toHaveLength(1);
  });

  it('makes a container on first use, labelled with the session, the operation and its extra labels', async () => {
    const sessionId = fx.sessionId('labels');
    const made = await lifecycle.ensure(sessionId, { operationId: 'op-labels' });
    expect(made).toMatchObject({ sessionId, containerName: containerNameOf(sessionId), created: true });
    expect(made.replaced).toBeUndefined();
    const info = await docker.getContainer(containerNameOf(sessionId)).inspect();
    expect(info.Id).toBe(made.containerId);
    const labels = { 'agent.harness': '1', 'agent.sandbox': sessionId, 'agent.operation': 'op-labels' };
    expect(info.Config.Labels).toMatchObject({ ...labels, 'agent.test-run': expect.any(String) });
    expect((await docker.getVolume(volumeNameOf(sessionId)).inspect()).Labels).toMatchObject(labels);
    expect((await docker.getVolume(journalVolumeNameOf(sessionId)).inspect()).Labels).toMatchObject(labels);
    expect(await lifecycle.workspaceQuotaBytes(sessionId)).toBeUndefined(); // a plain volume
    expect(await lifecycle.ensure(sessionId)).toMatchObject({ containerId: made.containerId, created: false });
  });

  it('starts a container that was created but never started, and unpauses a paused one, keeping both', async () => {
    const sessionId = fx.sessionId('resume');
    await lifecycle.ensure(sessionId);
    await docker.getContainer(containerNameOf(sessionId)).remove({ force: true });
    const spec = containerSpec({
      sessionId,
      environment: { image: testPlatform().sandboxImage },
      namePrefix: lifecycle.namePrefix,
      limits: lifecycle.limits,
      labels: {},
      egress: undefined,
      sandboxTools: testPlatform().sandboxTools,
    });
    const unstarted = await docker.createContainer(spec);
    const started = await lifecycle.ensure(sessionId);
    expect(started).toEqual({
      sessionId,
      containerName: containerNameOf(sessionId),
      containerId: unstarted.id,
      created: false,
    });
    expect((await unstarted.inspect()).State.Running).toBe(true);

    await unstarted.pause();
    expect(await lifecycle.ensure(sessionId)).toEqual(started);
    expect((await unstarted.inspect()).State).toMatchObject({ Running: true, Paused: false });
  });

  it('replaces a container made without the journal volume, as an older version made them, and says so', async () => {
    const sessionId = fx.sessionId('outdated');
    await lifecycle.ensure(sessionId);
    await docker.getContainer(containerNameOf(sessionId)).remove({ force: true });
    const spec = containerSpec({
      sessionId,
      environment: { image: testPlatform().sandboxImage },
      namePrefix: lifecycle.namePrefix,
      limits: lifecycle.limits,
      labels: {},
      egress: undefined,
      sandboxTools: testPlatform().sandboxTools,
    });
    const mounts = spec.HostConfig!.Mounts!.filter((mount) => mount.Source === volumeNameOf(sessionId));
    const outdated = await docker.createContainer({ ...spec, HostConfig: { ...spec.HostConfig, Mounts: mounts } });
    await outdated.start();
    const replaced = await lifecycle.ensure(sessionId);
    expect(replaced).toMatchObject({
      created: true,
      replaced:
        'the previous container was made by an older version of the harness (without the tool-call journal volume)',
    });
    expect(replaced.containerId).not.toBe(outdated.id);
  });

  it('replaces a container made with another build of the sandbox tools, or without them, and says so', async () => {
    const sessionId = fx.sessionId('tools');
    await lifecycle.ensure(sessionId);
    const spec = containerSpec({
      sessionId,
      environment: { image: testPlatform().sandboxImage },
      namePrefix: lifecycle.namePrefix,
      limits: lifecycle.limits,
      labels: {},
      egress: undefined,
      sandboxTools: testPlatform().sandboxTools,
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-sandbox-tools-'));
    const otherBuild = path.join(dir, 'agent-sandbox-tools');
    fs.copyFileSync(testPlatform().sandboxTools, otherBuild);
    const mounts = spec.HostConfig!.Mounts!;
    const outdatedMounts = [
      {
        mounts: mounts.map((mount) => (mount.Target === SANDBOX_TOOLS ? { ...mount, Source: otherBuild } : mount)),
        why: 'with another build of the sandbox tools',
      },
      { mounts: mounts.filter((mount) => mount.Target !== SANDBOX_TOOLS), why: 'without the sandbox tools' },
    ];
    try {
      for (const { mounts: made, why } of outdatedMounts) {
        await docker.getContainer(containerNameOf(sessionId)).remove({ force: true });
        const outdated = await docker.createContainer({ ...spec, HostConfig: { ...spec.HostConfig, Mounts: made } });
        await outdated.start();
        const next = await bash(sessionId, 'echo ran');
        expect(next.sandboxReplaced).toBe(`the previous container was made by another version of the harness (${why})`);
        expect(next.content).toContain('ran\n[exit code 0]');
        const info = await docker.getContainer(containerNameOf(sessionId)).inspect();
        expect(info.Id).not.toBe(outdated.id);
        expect(info.Mounts.find((mount) => mount.Destination === SANDBOX_TOOLS)?.Source).toBe(
          testPlatform().sandboxTools,
        );
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a session id that names no sandbox, and removes what is not there as nothing', async () => {
    expect(() => lifecycle.ensure('../escape')).toThrow('invalid session id "../escape"');
    await expect(lifecycle.remove('a b', { keepVolume: false })).rejects.toMatchObject({ kind: 'invalid' });
    expect(await lifecycle.remove(fx.sessionId('absent'), { keepVolume: false })).toEqual({
      container: false,
      volume: false,
    });
  });

  it('classifies infrastructure failures as typed ApplicationFailures', async () => {
    const call = {
      sessionId: fx.sessionId('infra'),
      toolCallId: 'toolu_infra',
      name: 'bash',
      input: { command: 'true' },
    };
    const unreachable = createHandsActivities({
      sandboxes: createSandboxes({
        docker: new Docker({ socketPath: '/nonexistent/docker.sock' }),
        image: 'x',
        sandboxTools: testPlatform().sandboxTools,
      }),
    });
    const down = await unreachable.runTool(call).catch((err: unknown) => err);
    expect(down).toBeInstanceOf(ApplicationFailure);
    expect(down).toMatchObject({ type: 'SandboxUnavailable', nonRetryable: false });

    const noImage = createHandsActivities({
      sandboxes: createSandboxes({
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
