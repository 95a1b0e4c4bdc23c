/** Seeding a workspace from the host and diffing it at the end. */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHandsActivities } from '../../activities/hands/activities';
import { handsFixture } from '../support/hands';

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    },
  }).trim();
}

describe('workspace seeding and diff (real Docker)', () => {
  const fx = handsFixture();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-seed-test-'));
  const hands = createHandsActivities({ sandboxes: fx.sandboxes, allowedRoots: [tmp] });
  const repo = path.join(tmp, 'repo');

  beforeAll(() => {
    fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
    git(tmp, 'init', '-q', '-b', 'main', repo);
    fs.writeFileSync(path.join(repo, 'src/app.js'), 'console.log("v1");\n');
    fs.writeFileSync(path.join(repo, '.gitignore'), 'secret.env\nnode_modules/\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'first');
    fs.writeFileSync(path.join(repo, 'src/app.js'), 'console.log("v2");\n');
    fs.writeFileSync(path.join(repo, 'run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'second');
    git(repo, 'remote', 'add', 'origin', 'https://user:s3cret-token@example.invalid/repo.git');
    fs.writeFileSync(path.join(repo, 'secret.env'), 'TOKEN=hunter2\n');
    fs.mkdirSync(path.join(repo, 'node_modules/dep'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'node_modules/dep/index.js'), 'x\n');
    fs.writeFileSync(path.join(repo, 'notes.md'), 'untracked\n');
  });

  afterAll(async () => {
    await fx.cleanup();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('copies a local git repository with its history, respecting .gitignore and keeping credentials out', async () => {
    const sessionId = fx.sessionId('seed');
    const seeded = await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: repo } });
    expect(seeded.head).toBe(git(repo, 'rev-parse', 'HEAD'));
    expect(seeded.files).toBeGreaterThan(5);

    expect(await fx.sh(sessionId, 'git log --format=%s')).toBe('second\nfirst\n');
    expect(await fx.sh(sessionId, 'git status --short')).toBe('?? notes.md\n');
    // Only the repository: the record that it was seeded is kept out of the workspace.
    expect(await fx.sh(sessionId, 'ls -A | sort')).toBe('.git\n.gitignore\nnotes.md\nrun.sh\nsrc\n');
    expect(await fx.sh(sessionId, 'stat -c "%u %a" run.sh src src/app.js')).toBe('1000 755\n1000 755\n1000 644\n');
    expect(await fx.sh(sessionId, 'grep -rc s3cret-token .git/config || true')).toBe('0\n');
    expect(await fx.sh(sessionId, 'git remote get-url origin')).toBe('https://example.invalid/repo.git\n');

    // A retry finds the marker and does not copy again.
    await fx.sh(sessionId, 'echo local change > notes.md');
    expect(await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: repo } })).toEqual(seeded);
    expect(await fx.sh(sessionId, 'cat notes.md')).toBe('local change\n');

    // The marker is out of the agent's reach: cleaning the workspace does not make it seed again.
    await fx.sh(
      sessionId,
      'git clean -fdxq; rm -rf .agent; rm -f /var/lib/agent-journal/seeded.json 2>/dev/null; true',
    );
    expect(await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: repo } })).toEqual(seeded);
    expect(await fx.sh(sessionId, 'ls notes.md 2>&1 || true')).toContain('No such file');
  });

  it('recognises a workspace a version before the journal volume seeded, by its record in the workspace', async () => {
    const sessionId = fx.sessionId('seed-older');
    await fx.sandboxes.lifecycle.ensure(sessionId);
    // What such a version left: the agent's work, and its record of the seeding beside it.
    const recorded = { files: 4, bytes: 120, head: 'abc123' };
    await fx.sh(
      sessionId,
      `echo work > work.txt && mkdir -p .agent && printf '%s' '${JSON.stringify({ ...recorded, source: 'repo' })}' > .agent/seeded`,
    );
    expect(await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: repo } })).toEqual(recorded);
    expect(await fx.sh(sessionId, 'ls -A | sort')).toBe('.agent\nwork.txt\n');
  });

  it('clones a git URL on the host at a ref', async () => {
    const sessionId = fx.sessionId('clone');
    const bare = path.join(tmp, 'bare.git');
    execFileSync('git', ['clone', '-q', '--bare', repo, bare]);
    const firstCommit = git(repo, 'rev-parse', 'HEAD~1');
    const seeded = await hands.seedWorkspace({ sessionId, source: { kind: 'git', url: bare, ref: firstCommit } });
    expect(seeded.head).toBe(firstCommit);
    expect(await fx.sh(sessionId, 'cat src/app.js; git log --format=%s HEAD')).toBe('console.log("v1");\nfirst\n');
  });

  it('diffs the workspace against HEAD, new files included, without touching the index', async () => {
    const sessionId = fx.sessionId('diff');
    await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: repo } });
    const edit = await hands.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'edit_file',
      input: { path: 'src/app.js', old_text: '"v2"', new_text: '"v3"' },
    });
    expect(edit.isError).toBeUndefined();
    await hands.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'write_file',
      input: { path: 'src/new.js', content: 'export {};\n' },
    });

    const { diff, stat } = await hands.workspaceDiff({ sessionId });
    expect(stat).toMatch(/notes\.md\s+\| 1 \+/);
    expect(stat).toMatch(/src\/app\.js \| 2 \+-/);
    expect(stat).toMatch(/src\/new\.js \| 1 \+/);
    expect(stat).toContain('3 files changed, 3 insertions(+), 1 deletion(-)');
    expect(diff).toContain('-console.log("v2");\n+console.log("v3");');
    expect(diff).toContain('+++ b/src/new.js');
    expect(diff).not.toContain('.agent');
    expect(await fx.sh(sessionId, 'git status --short')).toBe(' M src/app.js\n?? notes.md\n?? src/new.js\n');
  });
});
