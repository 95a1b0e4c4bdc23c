/**
 * The sandboxes on the engine and their garbage collection (`sandbox-inventory.ts`): found by label
 * and name prefix, scoped by extra labels, with their container, volumes, operation and the reason
 * one is kept; `gc` removes old containers and, when asked, the volumes of old sandboxes without
 * one. Real Docker, real image.
 */
import { SandboxInventory, type SandboxInfo } from '../../activities/hands/sandbox-inventory';
import { sandboxCommand } from '../../cli/sandbox-command';
import { containerNameOf, journalVolumeNameOf, volumeNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture } from '../support/hands';

describe('sandbox inventory (real Docker)', () => {
  const fx = handsFixture();
  const kept = handsFixture({ labels: { 'agent.keep': 'kept by the inventory test' } });
  const docker = dockerClient();
  const removeContainer = (sessionId: string) =>
    docker.getContainer(containerNameOf(sessionId)).remove({ force: true });

  afterAll(async () => {
    await fx.cleanup();
    await kept.cleanup();
  });

  it('labels the operation, lists and removes sandboxes (CLI too)', async () => {
    const sessionId = fx.sessionId('list');
    await fx.sandboxes.lifecycle.ensure(sessionId, { operationId: 'op-123' });
    const listed = (await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId);
    expect(listed).toMatchObject({
      sessionId,
      operationId: 'op-123',
      container: { name: containerNameOf(sessionId), state: 'running' },
      volume: { name: volumeNameOf(sessionId) },
    });

    const lines: string[] = [];
    expect(await sandboxCommand(['ls'], { sandboxes: fx.sandboxes, out: (l) => lines.push(l) })).toBe(0);
    expect(lines.join('\n')).toMatch(
      new RegExp(`${sessionId}\\s+${containerNameOf(sessionId)}\\s+Up .*${volumeNameOf(sessionId)}\\s+op-123`),
    );

    lines.length = 0;
    expect(
      await sandboxCommand(['rm', sessionId, '--keep-volume'], { sandboxes: fx.sandboxes, out: (l) => lines.push(l) }),
    ).toBe(0);
    expect(lines[0]).toBe(`removed sandbox ${sessionId}: container removed, volume kept`);
    expect((await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId)).toEqual({
      sessionId,
      operationId: 'op-123',
      volume: expect.objectContaining({ name: volumeNameOf(sessionId) }),
      journalVolume: { name: journalVolumeNameOf(sessionId) },
    });
    expect(await sandboxCommand(['rm', sessionId], { sandboxes: fx.sandboxes, out: () => undefined })).toBe(0);
    expect((await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId)).toBeUndefined();
    expect(
      await sandboxCommand(['rm', sessionId], { sandboxes: fx.sandboxes, out: () => undefined, err: () => undefined }),
    ).toBe(1);
  });

  it('garbage-collects old sandboxes by label', async () => {
    const sessionId = fx.sessionId('gc');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    const future = Date.now() + 10 * 60_000;
    // Nothing is older than ten minutes yet.
    // Scoped to this test's sandbox: other sandboxes on the engine (a concurrent run's) are not ours to remove.
    const only = (sandbox: SandboxInfo) => sandbox.sessionId === sessionId;
    const none = await fx.sandboxes.inventory.gc({ olderThanMs: 60 * 60_000, volumes: true, only });
    expect(none.removedContainers).not.toContain(containerNameOf(sessionId));
    // Seen from ten minutes on, it is: the container goes, the volume only with `volumes`.
    const containersOnly = await fx.sandboxes.inventory.gc({ olderThanMs: 60_000, now: future, only });
    expect(containersOnly.removedContainers).toContain(containerNameOf(sessionId));
    expect(containersOnly.removedVolumes).toEqual([]);
    const withVolumes = await fx.sandboxes.inventory.gc({ olderThanMs: 60_000, volumes: true, now: future, only });
    expect(withVolumes.removedVolumes).toContain(volumeNameOf(sessionId));
    expect((await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId)).toBeUndefined();
  });

  it('sees only the sandboxes of its labels and name prefix, and why one is kept', async () => {
    const ours = fx.sessionId('scope');
    const theirs = kept.sessionId('scope');
    await fx.sandboxes.lifecycle.ensure(ours);
    await kept.sandboxes.lifecycle.ensure(theirs);
    const ids = async (inventory: SandboxInventory) => (await inventory.list()).map((s) => s.sessionId);
    expect(await ids(fx.sandboxes.inventory)).toContain(ours);
    expect(await ids(fx.sandboxes.inventory)).not.toContain(theirs);
    expect((await kept.sandboxes.inventory.list()).find((s) => s.sessionId === theirs)).toMatchObject({
      keep: 'kept by the inventory test',
    });
    // Every sandbox of the harness on the engine, whatever its extra labels; none under another prefix.
    expect(await ids(new SandboxInventory({ docker }))).toEqual(expect.arrayContaining([ours, theirs]));
    expect(await ids(new SandboxInventory({ docker, namePrefix: 'other-' }))).not.toContain(ours);
  });

  it('lists a sandbox whose container is gone by its volumes, and gc removes them only with volumes', async () => {
    const sessionId = fx.sessionId('volumes');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    await removeContainer(sessionId);
    const listed = (await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId);
    expect(listed).toEqual({
      sessionId,
      volume: expect.objectContaining({ name: volumeNameOf(sessionId), createdAt: expect.any(Date) }),
      journalVolume: { name: journalVolumeNameOf(sessionId) },
    });

    const only = (sandbox: SandboxInfo) => sandbox.sessionId === sessionId;
    const future = Date.now() + 10 * 60_000;
    expect(await fx.sandboxes.inventory.gc({ olderThanMs: 60_000, now: future, only })).toEqual({
      removedContainers: [],
      removedVolumes: [],
    });
    const withVolumes = await fx.sandboxes.inventory.gc({ olderThanMs: 60_000, volumes: true, now: future, only });
    expect([...withVolumes.removedVolumes].sort()).toEqual(
      [journalVolumeNameOf(sessionId), volumeNameOf(sessionId)].sort(),
    );
    expect(withVolumes.releasedImages).toEqual([]);
    expect((await fx.sandboxes.inventory.list()).find(only)).toBeUndefined();
  });
});
