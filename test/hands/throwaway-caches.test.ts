/**
 * The global teardown's tidying (`test/support/throwaway-caches.ts`): the dependency caches of test
 * repositories that no longer exist are removed; a cache of a repository that exists, of one
 * outside the test folders, or in use by a container stays. Real Docker.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SANDBOX_LABELS } from '../../common/sandbox-names';
import { dockerClient } from '../../platform/docker-engine';
import { testPlatform } from '../support/env';
import { removeThrowawayCaches, testRepositoryOf } from '../support/throwaway-caches';

describe('caches of throwaway test repositories', () => {
  const docker = dockerClient();
  const id = randomUUID().slice(0, 8);
  const made: string[] = [];
  const cacheOf = async (name: string, key: string) => {
    made.push(`cachetest-${id}-${name}`);
    await docker.createVolume({ Name: `cachetest-${id}-${name}`, Labels: { [SANDBOX_LABELS.cache]: key } });
  };
  const exists = (name: string) =>
    docker
      .getVolume(`cachetest-${id}-${name}`)
      .inspect()
      .then(
        () => true,
        () => false,
      );

  afterAll(async () => {
    for (const name of made)
      await docker
        .getVolume(name)
        .remove({ force: true })
        .catch(() => undefined);
  });

  it('names the test folder a cache key points into', () => {
    const tmp = os.tmpdir();
    expect(testRepositoryOf(`git:file://${tmp}/coding-task-AbC/textkit.git`)).toBe(`${tmp}/coding-task-AbC`);
    expect(testRepositoryOf(`local:${os.homedir()}/.agent-test-repo-x1/sub`)).toBe(
      `${os.homedir()}/.agent-test-repo-x1`,
    );
    expect(testRepositoryOf(`local:${os.homedir()}/projects/app`)).toBeUndefined();
    expect(testRepositoryOf('git:https://github.com/o/r.git')).toBeUndefined();
    expect(testRepositoryOf(`local:${tmp}`)).toBeUndefined();
  });

  it('removes the caches of vanished test repositories and keeps the others', async () => {
    const alive = fs.mkdtempSync(path.join(os.tmpdir(), 'coding-task-'));
    const gone = path.join(os.tmpdir(), `coding-task-gone-${id}`);
    await cacheOf('gone', `git:file://${gone}/textkit.git`);
    await cacheOf('alive', `git:file://${alive}/textkit.git`);
    await cacheOf('elsewhere', 'git:https://example.com/o/r.git');
    await cacheOf('used', `local:${gone}-used`);
    const user = await docker.createContainer({
      Image: testPlatform().sandboxImage,
      name: `cachetest-${id}`,
      Cmd: ['true'],
      HostConfig: { Binds: [`cachetest-${id}-used:/cache`] },
    });
    try {
      expect(await removeThrowawayCaches(docker)).toBeGreaterThanOrEqual(1);
      expect(await exists('gone')).toBe(false);
      expect(await exists('alive')).toBe(true);
      expect(await exists('elsewhere')).toBe(true);
      expect(await exists('used')).toBe(true);
    } finally {
      await user.remove({ force: true });
      fs.rmSync(alive, { recursive: true, force: true });
    }
  });
});
