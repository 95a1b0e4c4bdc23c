/**
 * What a workflow input may name as a seed source, checked on the hands host: absolute paths of
 * existing directories inside the allowed roots (symbolic links resolved), and git URLs of the forms
 * the hands clone. Real file system; the operation-level cases are in test/bad-input/.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { defaultAllowedRoots, EXAMPLES_DIR } from '../../activities/hands/deps';
import { checkSeedSource, type CheckedSeedSource } from '../../activities/hands/seed-source';
import type { SeedSource } from '../../common/hands';

describe('seed sources', () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-seed-source-')));
  const root = path.join(tmp, 'allowed');
  const repo = path.join(root, 'repo');
  const roots = [root];

  beforeAll(() => {
    fs.mkdirSync(repo, { recursive: true });
    fs.writeFileSync(path.join(root, 'file.txt'), 'not a directory\n');
    fs.mkdirSync(path.join(tmp, 'outside'));
    fs.symlinkSync('/etc', path.join(root, 'to-etc'));
    fs.symlinkSync(repo, path.join(root, 'to-repo'));
  });
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  const refusal = (source: SeedSource): ApplicationFailure => {
    let thrown: unknown;
    try {
      checkSeedSource(source, roots);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    const failure = thrown as ApplicationFailure;
    expect(failure).toMatchObject({ type: 'InvalidSeedSource', nonRetryable: true });
    expect(failure.message).toContain(`(allowed roots: ${root})`);
    return failure;
  };

  it('accepts a directory inside an allowed root, by its real path', () => {
    expect(checkSeedSource({ kind: 'local', path: repo }, roots)).toEqual<CheckedSeedSource>({
      kind: 'local',
      path: repo,
    });
    expect(checkSeedSource({ kind: 'local', path: path.join(root, 'to-repo') }, roots)).toEqual({
      kind: 'local',
      path: repo,
    });
  });

  it.each<[string, () => SeedSource, RegExp]>([
    ['a host directory outside the roots', () => ({ kind: 'local', path: '/etc' }), /^seed source \/etc is outside/],
    [
      'a symbolic link inside a root that leads out of it',
      () => ({ kind: 'local', path: path.join(root, 'to-etc') }),
      /to-etc \(it resolves to \/etc\) is outside the allowed roots/,
    ],
    [
      'a path that climbs out with ..',
      () => ({ kind: 'local', path: `${root}/../outside` }),
      /\.\.\/outside \(it resolves to .*\/outside\) is outside/,
    ],
    ['a relative path', () => ({ kind: 'local', path: 'repo' }), /^seed source repo is not an absolute path/],
    ['a path that does not exist', () => ({ kind: 'local', path: `${root}/nope` }), /nope does not exist/],
    ['a file', () => ({ kind: 'local', path: `${root}/file.txt` }), /file\.txt is not a directory/],
    ['a git URL that is a host path outside the roots', () => ({ kind: 'git', url: '/etc' }), /\/etc is outside/],
    ['a file:// URL outside the roots', () => ({ kind: 'git', url: 'file:///etc' }), /\/etc is outside/],
    [
      'a remote helper (ext::)',
      () => ({ kind: 'git', url: 'ext::sh -c touch% /tmp/pwned' }),
      /uses a form the hands do not clone/,
    ],
    [
      'a URL that is an option',
      () => ({ kind: 'git', url: '--upload-pack=touch /tmp/x' }),
      /is not a URL git may be given/,
    ],
    ['a ref that is an option', () => ({ kind: 'git', url: 'https://example.com/r.git', ref: '--orphan' }), /git ref/],
  ])('refuses %s, naming the path and the allowed roots', (_what, source, message) => {
    expect(refusal(source()).message).toMatch(message);
  });

  it('says how to allow a directory outside the roots', () => {
    expect(refusal({ kind: 'local', path: '/etc' }).message).toContain(
      'to allow another directory, add it to AGENT_ALLOWED_ROOTS on the hands worker',
    );
  });

  it('accepts the network URL forms git clones', () => {
    for (const url of ['https://example.com/r.git', 'ssh://git@example.com/r.git', 'git@example.com:team/r.git']) {
      expect(checkSeedSource({ kind: 'git', url, ref: 'main' }, roots)).toEqual({ kind: 'git', url, ref: 'main' });
    }
    expect(checkSeedSource({ kind: 'git', url: repo }, roots)).toEqual({ kind: 'git', url: repo, localPath: repo });
  });

  it('allows the worker user home and the examples by default, or AGENT_ALLOWED_ROOTS', () => {
    expect(defaultAllowedRoots({})).toEqual([os.homedir(), EXAMPLES_DIR]);
    expect(defaultAllowedRoots({ AGENT_ALLOWED_ROOTS: `${root}:/srv/repos` })).toEqual([root, '/srv/repos']);
    expect(() => defaultAllowedRoots({ AGENT_ALLOWED_ROOTS: 'relative/dir' })).toThrow(
      'AGENT_ALLOWED_ROOTS: "relative/dir" is not an absolute path',
    );
  });
});
