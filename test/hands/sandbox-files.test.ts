/**
 * Files copied into a workspace (`sandbox-files.ts`): owned by the agent, parents created, modes
 * kept, never outside /workspace. Real Docker, real image.
 */
import * as tar from 'tar-stream';
import { SandboxFiles } from '../../activities/hands/sandbox-files';
import { dockerClient } from '../../platform/docker-engine';
import { handsFixture } from '../support/hands';

describe('sandbox files (real Docker)', () => {
  const fx = handsFixture();
  const files = fx.sandboxes.files;
  const sessionId = fx.sessionId('files');

  beforeAll(() => fx.sandboxes.lifecycle.ensure(sessionId));
  afterAll(() => fx.cleanup());

  it('writes files owned by the agent, with their modes, creating missing directories', async () => {
    await files.put(sessionId, [
      { path: 'deep/er/note.txt', content: 'hello\n' },
      { path: '/workspace/run.sh', content: Buffer.from('#!/bin/sh\necho ran\n'), mode: 0o755 },
      { path: 'deep/other.txt', content: '' },
    ]);
    expect(await fx.sh(sessionId, 'stat -c "%u:%g %a %n" deep deep/er deep/er/note.txt deep/other.txt run.sh')).toBe(
      [
        '1000:1000 755 deep',
        '1000:1000 755 deep/er',
        '1000:1000 644 deep/er/note.txt',
        '1000:1000 644 deep/other.txt',
        '1000:1000 755 run.sh',
        '',
      ].join('\n'),
    );
    expect(await fx.sh(sessionId, 'cat deep/er/note.txt; ./run.sh')).toBe('hello\nran\n');
  });

  it('refuses a path outside /workspace before anything is copied', async () => {
    for (const path of ['../escape', '/etc/escape', 'a/../../escape', 'a//b', '', '/workspace/']) {
      await expect(files.put(sessionId, [{ path, content: 'x' }])).rejects.toMatchObject({
        kind: 'invalid',
        message: `not a path inside /workspace: ${path}`,
      });
    }
    expect(await fx.sh(sessionId, 'ls -A / | grep -c escape || true')).toBe('0\n');
  });

  it('extracts a tar stream at /workspace', async () => {
    const pack = tar.pack();
    pack.entry({ name: 'from-archive.txt', uid: 1000, gid: 1000, mode: 0o600 }, 'archived\n');
    pack.finalize();
    await files.putArchive(sessionId, pack);
    expect(await fx.sh(sessionId, 'stat -c "%u %a" from-archive.txt; cat from-archive.txt')).toBe(
      '1000 600\narchived\n',
    );
  });

  it('fails with what it was doing when the sandbox has no container', async () => {
    const alone = new SandboxFiles({ docker: dockerClient() });
    await expect(alone.put(fx.sessionId('files-none'), [{ path: 'x', content: 'x' }])).rejects.toMatchObject({
      kind: 'failed',
      message: expect.stringContaining('could not copy files into the sandbox'),
    });
  });
});
