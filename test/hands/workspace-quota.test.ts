/**
 * A disk quota per workspace: an ext4 image on a loop device per workspace volume. A tool that writes
 * past it gets ENOSPC inside the sandbox and the host's disk keeps the rest; the loop device is
 * detached when the volume goes (`agent sandbox rm|gc`) and attached again after a reboot; where the
 * host cannot make quotas the hands say so loudly. Real Docker, real loop devices (root).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createHandsActivities } from '../../activities/hands/activities';
import { createSandboxes } from '../../activities/hands/sandboxes';
import { readHandsSettings } from '../../activities/hands/settings';
import { backingFileOf, deviceOf, imagePathOf, type WorkspaceQuota } from '../../activities/hands/workspace-quota';
import { containerNameOf, volumeNameOf } from '../../common/sandbox-names';
import { sandboxCommand } from '../../cli/sandbox-command';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture } from '../support/hands';
import { testPlatform } from '../support/env';

const MiB = 1024 ** 2;

describe('workspace disk quota (real Docker, loop devices)', () => {
  const imageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-quota-test-'));
  const quota: WorkspaceQuota = { sizeBytes: 96 * MiB, imageDir };
  const fx = handsFixture({ quota });
  const hands = createHandsActivities({ sandboxes: fx.sandboxes });
  const bash = (sessionId: string, command: string) =>
    hands.runTool({ sessionId, toolCallId: `toolu_${randomUUID().slice(0, 12)}`, name: 'bash', input: { command } });

  afterAll(async () => {
    await fx.cleanup();
    fs.rmSync(imageDir, { recursive: true, force: true });
  });

  it('stops a write at the quota with ENOSPC inside the sandbox; the host keeps the rest', async () => {
    const sessionId = fx.sessionId('quota');
    const df = await bash(sessionId, 'df -B1 --output=size /workspace | tail -1; ls -A /workspace | wc -l');
    const [size, entries] = df.content.split('\n');
    expect(Number(size)).toBeGreaterThan(80 * MiB);
    expect(Number(size)).toBeLessThanOrEqual(96 * MiB);
    expect(entries).toBe('0'); // the workspace root is the project: no lost+found

    const hostFreeBefore = fs.statfsSync(imageDir).bavail * fs.statfsSync(imageDir).bsize;
    const fill = await bash(sessionId, 'dd if=/dev/zero of=fill bs=1M count=200 status=none; echo "dd exit $?"');
    expect(fill.content).toContain('No space left on device');
    expect(fill.content).toMatch(/dd exit 1/);
    expect(fill.content).toContain('[disk quota reached: /workspace holds at most 96 MiB');

    // On the host the workspace is one image file that cannot grow past the quota.
    const image = imagePathOf(quota, volumeNameOf(sessionId));
    expect(fs.statSync(image).size).toBe(96 * MiB);
    expect(fs.statSync(image).blocks * 512).toBeLessThanOrEqual(96 * MiB);
    const hostFreeAfter = fs.statfsSync(imageDir).bavail * fs.statfsSync(imageDir).bsize;
    expect(hostFreeBefore - hostFreeAfter).toBeLessThan(200 * MiB);

    // The agent can free space and go on.
    expect((await bash(sessionId, 'rm fill && echo freed > note && cat note')).content).toBe('freed\n[exit code 0]');
  });

  it('detaches the loop device and deletes the image when the sandbox is removed (agent sandbox rm)', async () => {
    const sessionId = fx.sessionId('quota-rm');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    const image = imagePathOf(quota, volumeNameOf(sessionId));
    const device = await deviceOf(image);
    expect(device).toMatch(/^\/dev\/loop\d+$/);
    const listed = (await fx.sandboxes.inventory.list()).find((s) => s.sessionId === sessionId);
    expect(listed?.volume?.quotaImage).toBe(image);

    expect(await sandboxCommand(['rm', sessionId], { sandboxes: fx.sandboxes, out: () => undefined })).toBe(0);
    expect(await deviceOf(image)).toBeUndefined();
    expect(backingFileOf(device!)).not.toBe(image);
    expect(fs.existsSync(image)).toBe(false);
  });

  it('detaches it when gc removes old volumes', async () => {
    const sessionId = fx.sessionId('quota-gc');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    const image = imagePathOf(quota, volumeNameOf(sessionId));
    const result = await fx.sandboxes.inventory.gc({
      olderThanMs: 60_000,
      volumes: true,
      now: Date.now() + 10 * 60_000,
    });
    expect(result.removedVolumes).toContain(volumeNameOf(sessionId));
    expect(await deviceOf(image)).toBeUndefined();
    expect(fs.existsSync(image)).toBe(false);
  });

  it('gc releases an image whose volume was removed behind the harness (docker volume rm)', async () => {
    const sessionId = fx.sessionId('quota-orphan');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    const image = imagePathOf(quota, volumeNameOf(sessionId));
    await dockerClient().getContainer(containerNameOf(sessionId)).remove({ force: true });
    await dockerClient().getVolume(volumeNameOf(sessionId)).remove();
    expect(await deviceOf(image)).toMatch(/^\/dev\/loop\d+$/); // left attached
    const result = await fx.sandboxes.inventory.gc({
      olderThanMs: 60_000,
      volumes: true,
      now: Date.now() + 10 * 60_000,
    });
    expect(result.releasedImages).toEqual([image]);
    expect(await deviceOf(image)).toBeUndefined();
    expect(fs.existsSync(image)).toBe(false);
  });

  it('attaches the image again after a reboot (its loop device gone); the files and the quota are intact', async () => {
    const sessionId = fx.sessionId('quota-reboot');
    expect((await bash(sessionId, 'echo survives > kept.txt && echo ok')).isError).toBeUndefined();
    const image = imagePathOf(quota, volumeNameOf(sessionId));
    // A reboot: the container stops, no loop device survives, and the device the volume names now
    // belongs to another image (attached first after the boot).
    await dockerClient().getContainer(containerNameOf(sessionId)).remove({ force: true });
    const oldDevice = (await deviceOf(image))!;
    execFileSync('losetup', ['--detach', oldDevice]);
    const other = path.join(imageDir, 'other.img');
    fs.writeFileSync(other, '');
    fs.truncateSync(other, 8 * MiB);
    // Another workspace on this machine (a test running alongside) may take the freed device first:
    // the same situation, with its image instead of ours on the device.
    let ours = true;
    try {
      execFileSync('losetup', [oldDevice, other], { stdio: 'pipe' });
    } catch (err) {
      if (!/busy/i.test(String((err as { stderr?: Buffer }).stderr ?? err))) throw err;
      ours = false;
    }
    try {
      const after = await bash(sessionId, 'cat kept.txt; df -B1 --output=size /workspace | tail -1');
      expect(after.sandboxReplaced).toBe('the previous container was gone (removed)');
      const [, kept, size] = after.content.split('\n');
      expect(kept).toBe('survives');
      expect(Number(size)).toBeGreaterThan(80 * MiB);
      expect(Number(size)).toBeLessThanOrEqual(96 * MiB);
      const device = await deviceOf(image);
      expect(device).toMatch(/^\/dev\/loop\d+$/);
      expect(device).not.toBe(oldDevice);
      const volume = await dockerClient().getVolume(volumeNameOf(sessionId)).inspect();
      expect(volume.Options?.device).toBe(device);
    } finally {
      if (ours) execFileSync('losetup', ['--detach', oldDevice]);
      fs.rmSync(other, { force: true });
    }
  });

  it('falls back loudly to plain volumes where the host cannot make quotas', () => {
    const warnings: string[] = [];
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'tcp://docker.example:2376';
    try {
      const { lifecycle } = createSandboxes({
        docker: dockerClient(),
        image: testPlatform().sandboxImage,
        sandboxTools: testPlatform().sandboxTools,
        quota,
        warn: (line) => warnings.push(line),
      });
      expect(lifecycle.quota).toBeNull();
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
    expect(warnings).toEqual([
      expect.stringContaining('WARNING: workspaces get NO disk quota: the Docker engine is remote'),
    ]);
    expect(warnings[0]).toContain('set AGENT_WORKSPACE_QUOTA=off to accept this');
  });

  it('reads the quota from AGENT_WORKSPACE_QUOTA (default 10G, off for none)', () => {
    const defaults = { imageDir: '/var/lib/agent-workspaces' };
    expect(readHandsSettings({}, defaults).quota).toEqual({ sizeBytes: 10 * 1024 ** 3, imageDir: defaults.imageDir });
    expect(readHandsSettings({ AGENT_WORKSPACE_QUOTA: '512M' }, defaults).quota?.sizeBytes).toBe(512 * MiB);
    expect(readHandsSettings({ AGENT_WORKSPACE_QUOTA: 'off' }, defaults).quota).toBeNull();
    expect(() => readHandsSettings({ AGENT_WORKSPACE_QUOTA: 'lots' }, defaults)).toThrow(
      'AGENT_WORKSPACE_QUOTA: not a size: "lots" (use e.g. 10G, 512M, or off)',
    );
  });
});
