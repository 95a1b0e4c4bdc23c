/**
 * A repository's dependency cache (`agent-cache-*`, labelled `agent.cache` with the repository) is
 * meant to outlive its runs, so the leak check leaves it; but the tests' repositories are
 * temporary folders, removed after each file, and every run would leave their caches behind. The
 * global teardown removes the caches of test repositories that no longer exist; any other cache,
 * and one a container still uses, stays.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type Docker from 'dockerode';
import { SANDBOX_LABELS } from '../../common/sandbox-names';

/** The folder of a test repository a cache key names (`git:file://<dir>…` or `local:<dir>`), if it is one. */
export function testRepositoryOf(cacheKey: string): string | undefined {
  const location = cacheKey.startsWith('git:file://')
    ? cacheKey.slice('git:file://'.length)
    : cacheKey.startsWith('local:')
      ? cacheKey.slice('local:'.length)
      : undefined;
  if (!location) return undefined;
  // A folder the tests made: anything under the temporary directory, `.agent-test-repo-*` at home.
  for (const [root, made] of [
    [os.tmpdir(), /^./],
    [os.homedir(), /^\.agent-test-repo-/],
  ] as const) {
    if (!location.startsWith(`${root}${path.sep}`)) continue;
    const [top] = path.relative(root, location).split(path.sep);
    return top && made.test(top) ? path.join(root, top) : undefined;
  }
  return undefined;
}

/** Removes the caches of vanished test repositories; the number removed. */
export async function removeThrowawayCaches(docker: Docker): Promise<number> {
  const volumes = (await docker.listVolumes({ filters: { label: [SANDBOX_LABELS.cache] } })).Volumes ?? [];
  let removed = 0;
  for (const volume of volumes) {
    const repository = testRepositoryOf(volume.Labels?.[SANDBOX_LABELS.cache] ?? '');
    if (!repository || fs.existsSync(repository)) continue;
    await docker
      .getVolume(volume.Name)
      .remove()
      .then(() => (removed += 1))
      .catch(() => undefined); // in use by a container: its owner removes it
  }
  return removed;
}
