/**
 * The harness's own machinery in a sandbox needs nothing from the image beyond bash and the basics:
 * in an image without python3 and node, every tool call goes through the executor (the sandbox tools
 * mounted from the host) and the file tools work as in the default image. Real Docker.
 */
import { randomUUID } from 'node:crypto';
import { createHandsActivities } from '../../activities/hands/activities';
import { dockerClient } from '../../platform/docker-engine';
import { imageWithoutPythonAndNode, type BareImage } from '../support/bare-image';
import { testPlatform } from '../support/env';
import { handsFixture, type HandsFixture, readOutcome } from '../support/hands';

describe('a sandbox image without python3 and node (real Docker)', () => {
  let image: BareImage;
  let fx: HandsFixture;
  let hands: ReturnType<typeof createHandsActivities>;
  let sessionId: string;
  const call = async (name: string, input: unknown) => {
    const outcome = await hands.runTool({ sessionId, toolCallId: `toolu_${randomUUID().slice(0, 12)}`, name, input });
    // Through the executor, never the docker exec fallback.
    expect(outcome.executorFallback).toBeUndefined();
    return outcome;
  };

  beforeAll(async () => {
    image = await imageWithoutPythonAndNode(dockerClient(), testPlatform().sandboxImage);
    fx = handsFixture({ image: image.tag });
    hands = createHandsActivities({ sandboxes: fx.sandboxes });
    sessionId = fx.sessionId('bare');
  });
  afterAll(async () => {
    await fx?.cleanup();
    fx?.sandboxes.commands.close();
    await image?.remove();
  });

  it('has neither, and runs bash through the executor', async () => {
    const probe = await call('bash', { command: 'command -v python3 node nodejs; id -u; echo done' });
    expect(readOutcome(probe)).toMatchObject({ content: '1000\ndone\n[exit code 0]', isError: false });
    const pid = await fx.sandboxes.commands.executorPid(sessionId);
    expect(pid).toBeGreaterThan(1);
    const cmdline = await call('bash', { command: `tr '\\0' ' ' < /proc/${pid}/cmdline` });
    expect(cmdline.content).toBe('/opt/agent/bin/agent-sandbox-tools executor \n[exit code 0]');
  });

  it('writes, reads and edits files', async () => {
    const content = Array.from({ length: 12 }, (_, i) => `row ${i + 1}`).join('\n') + '\n';
    expect((await call('write_file', { path: 'notes/rows.txt', content })).content).toBe(
      'Created notes/rows.txt: 75 bytes, 12 lines.',
    );
    expect((await call('read_file', { path: 'notes/rows.txt', offset: 11 })).content).toBe(
      '    11\trow 11\n    12\trow 12',
    );
    expect((await call('read_file', { path: 'notes/rows.txt', limit: 2 })).content).toBe(
      '     1\trow 1\n     2\trow 2\n[Showing lines 1-2 of 12 (limit=2). Call read_file with offset=3 to continue.]',
    );
    const edited = await call('edit_file', { path: 'notes/rows.txt', old_text: 'row 5\n', new_text: 'five\nFIVE\n' });
    expect(readOutcome(edited)).toMatchObject({
      content: 'Edited notes/rows.txt: replaced 2 line(s) at line 5 with 3 line(s).',
      isError: false,
    });
    const twice = await call('edit_file', { path: 'notes/rows.txt', old_text: 'row 1', new_text: 'x' });
    expect(twice).toMatchObject({
      content:
        'old_text matches 4 times in notes/rows.txt (at lines 1, 11, 12, 13); nothing changed. Include more surrounding lines in old_text so that it matches exactly once.',
      isError: true,
    });
    const missing = await call('read_file', { path: 'notes/none.txt' });
    expect(missing).toMatchObject({
      content: 'File not found: notes/none.txt. Check the path with list_files (relative paths start at /workspace).',
      isError: true,
    });
    expect(await fx.sh(sessionId, 'sed -n 4,7p notes/rows.txt')).toBe('row 4\nfive\nFIVE\nrow 6\n');
  });

  it('writes large content through a staged request, and removes it', async () => {
    const content = 'abcdefghij'.repeat(20_000) + '\n';
    expect((await call('write_file', { path: 'big.txt', content })).content).toBe(
      'Created big.txt: 200001 bytes, 1 lines.',
    );
    expect(await fx.sh(sessionId, 'stat -c %s big.txt; ls .agent/in | wc -l')).toBe('200001\n0\n');
  });
});
