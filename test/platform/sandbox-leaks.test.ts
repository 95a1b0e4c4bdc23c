/**
 * The leak check `.ci/run` runs after the tests: a sandbox left behind (container, both volumes, the
 * loop device and image of its quota workspace) is reported; one labelled `agent.keep` is listed as
 * kept on purpose; once removed, neither is. Real Docker and loop devices.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { imagePathOf } from '../../activities/hands/workspace-quota';
import { containerNameOf, journalVolumeNameOf, volumeNameOf } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { findSandboxLeaks, formatLeaks, withoutBaseline } from '../../platform/sandbox-leaks';
import { handsFixture } from '../support/hands';

describe('leak check', () => {
  const imageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-leak-check-'));
  const quota = { sizeBytes: 64 * 1024 ** 2, imageDir };
  const left = handsFixture({ quota });
  const kept = handsFixture({ quota, labels: { 'agent.keep': 'kept by the leak check test' } });

  afterAll(async () => {
    await left.cleanup();
    await kept.cleanup();
    fs.rmSync(imageDir, { recursive: true, force: true });
  });

  it('reports what a test left, lists what it kept on purpose, and forgets both once removed', async () => {
    const before = await findSandboxLeaks(dockerClient(), [imageDir]);
    const leftId = left.sessionId('leaked');
    const keptId = kept.sessionId('kept');
    await left.sandboxes.lifecycle.ensure(leftId);
    await kept.sandboxes.lifecycle.ensure(keptId);

    const leaks = withoutBaseline(await findSandboxLeaks(dockerClient(), [imageDir]), before);
    expect(leaks.containers).toEqual([containerNameOf(leftId)]);
    expect([...leaks.volumes].sort()).toEqual([journalVolumeNameOf(leftId), volumeNameOf(leftId)].sort());
    expect(leaks.loopDevices).toEqual([
      expect.stringMatching(new RegExp(`^/dev/loop\\d+ -> ${imagePathOf(quota, volumeNameOf(leftId))}$`)),
    ]);
    expect(leaks.imageFiles).toEqual([imagePathOf(quota, volumeNameOf(leftId))]);
    expect(leaks.kept).toEqual(
      expect.arrayContaining([
        `${containerNameOf(keptId)} (kept by the leak check test)`,
        `${volumeNameOf(keptId)} (kept by the leak check test)`,
      ]),
    );
    expect(formatLeaks(leaks)).toContain(`leaked container: ${containerNameOf(leftId)}`);

    await left.cleanup();
    await kept.cleanup();
    const after = withoutBaseline(await findSandboxLeaks(dockerClient(), [imageDir]), before);
    expect(after).toEqual({ containers: [], volumes: [], loopDevices: [], imageFiles: [], kept: before.kept });
  });
});
