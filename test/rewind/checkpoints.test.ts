/**
 * Checkpoints and restores on the real Docker engine and sandbox image, activity by activity: a
 * checkpoint records every file the agent made — with an edit tool or a shell command, private to the
 * agent or ignored by the repository — without the excluded folders, the workspace repository's own
 * `.git` included, byte for byte (no line-ending conversion); the next one records only what changed;
 * the repository stays out of the agent's reach; a restore makes a new workspace with exactly those
 * files, owned by the agent, and is idempotent; a sandbox image without git is skipped with the reason,
 * and one whose bash has no `mapfile` lists the same changed files (the script's fallback);
 * a workspace unchanged since the last checkpoint is answered with its commit without reading it,
 * and every kind of change (a time set back, a deletion, a mode, a rename, `.git`) is seen.
 */
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import type Docker from 'dockerode';
import { createHandsActivities } from '../../activities/hands/activities';
import { SandboxCheckpoints } from '../../activities/hands/checkpoints/sandbox-checkpoints';
import { JOURNAL_WRITER } from '../../activities/hands/journal-store';
import { AGENT_USER } from '../../activities/hands/sandbox-spec';
import {
  CHECKPOINT_FAILURE_TYPES,
  DEFAULT_CHECKPOINT_EXCLUDE,
  checkpointOutcome,
  isSkipped,
  type CheckpointOutcome,
  type CheckpointResult,
  type RecordedCheckpoint,
} from '../../common/checkpoints';
import { dockerClient } from '../../platform/docker-engine';
import { testPlatform } from '../support/env';
import { handsFixture, type HandsFixture } from '../support/hands';

/** Every file and symbolic link of the workspace but node_modules: path, then a digest of its bytes or its target. */
const MANIFEST = `cd /workspace && find . -path ./node_modules -prune -o \\( -type f -o -type l \\) -print0 | sort -z |
  while IFS= read -r -d '' f; do
    if [ -L "$f" ]; then printf '%s -> %s\\n' "$f" "$(readlink "$f")"; else printf '%s %s\\n' "$f" "$(sha256sum < "$f" | cut -c1-16)"; fi
  done`;

/** A checkpoint's result as the history's readers read it (`checkpointOutcome`: a short result in full). */
const recorded = (outcome: CheckpointOutcome | CheckpointResult): RecordedCheckpoint => {
  if (isSkipped(outcome)) throw new Error(`checkpoint skipped: ${outcome.skipped}`);
  return checkpointOutcome(outcome, new Date().toISOString());
};

describe('checkpoints of a workspace, and restoring one', () => {
  let fixture: HandsFixture;
  let hands: ReturnType<typeof createHandsActivities>;
  beforeAll(() => {
    fixture = handsFixture();
    // Called outside a worker: the host and its queue are given, as a hands host's worker gives them.
    hands = createHandsActivities({
      sandboxes: fixture.sandboxes,
      host: { host: 'ckpt-host', taskQueue: 'ckpt-queue' },
    });
  });
  afterAll(async () => {
    await fixture.cleanup();
  });

  const checkpoint = (sessionId: string, turn: number, exclude: readonly string[] = DEFAULT_CHECKPOINT_EXCLUDE) =>
    hands.checkpointWorkspace({ sessionId, operationId: 'op-1', turn, kind: 'turn', exclude: [...exclude] });

  it('records every file the agent can read, then only what changed, and restores exactly that', async () => {
    const sessionId = fixture.sessionId('ckpt');
    await fixture.sandboxes.lifecycle.ensure(sessionId);
    await fixture.sh(
      sessionId,
      [
        'git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m base',
        'printf "one\\n" > a.txt',
        'printf "x\\r\\n" > crlf.txt && echo "*.txt text eol=lf" > .gitattributes',
        'echo "ignored/" > .gitignore && mkdir ignored && echo kept > ignored/by-the-repo',
        'echo secret > private.txt && chmod 600 private.txt',
        'ln -s a.txt link && mkfifo pipe',
        'mkdir -p node_modules/dep && echo dep > node_modules/dep/index.js',
      ].join(' && '),
    );
    const first = recorded(await checkpoint(sessionId, 1));
    expect(first.parent).toBeUndefined();
    expect(first.filesChanged).toBe(7);
    expect([...first.changed].sort()).toEqual([
      '.gitattributes',
      '.gitignore',
      'a.txt',
      'crlf.txt',
      'ignored/by-the-repo',
      'link',
      'private.txt',
    ]);
    const atFirst = await fixture.sh(sessionId, MANIFEST);

    // A shell command's changes, a commit in the workspace repository, a deletion.
    await fixture.sh(
      sessionId,
      'echo two >> a.txt && rm ignored/by-the-repo && git add a.txt && git -c user.email=a@b -c user.name=a commit -qm two',
    );
    const second = recorded(await checkpoint(sessionId, 2));
    expect(second.parent).toBe(first.commit);
    expect([...second.changed].sort()).toEqual(['a.txt', 'ignored/by-the-repo']);
    const atSecond = await fixture.sh(sessionId, MANIFEST);
    const unchanged = recorded(await checkpoint(sessionId, 3));
    expect(unchanged).toMatchObject({ parent: second.commit, filesChanged: 0, changed: [] });

    // The repository is the harness's: the agent can read it, not write it.
    const write = await fixture.sandboxes.commands.script(
      sessionId,
      'touch /var/lib/agent-journal/checkpoints.git/refs/checkpoints/head 2>&1; echo $?',
    );
    expect(write.stdout.toString('utf8')).toMatch(/Permission denied|Read-only/);

    // Restored into a new session: the files of each checkpoint, byte for byte, owned by the agent.
    for (const [commit, expected] of [
      [first.commit, atFirst],
      [second.commit, atSecond],
    ] as const) {
      const copy = fixture.sessionId('ckpt-copy');
      const restored = await hands.restoreCheckpoint({
        fromSessionId: sessionId,
        commit,
        sessionId: copy,
        operationId: `rw-${copy}`,
      });
      expect(restored).toMatchObject({
        sessionId: copy,
        commit,
        handsHost: { host: 'ckpt-host', taskQueue: 'ckpt-queue' },
      });
      await fixture.sandboxes.lifecycle.ensure(copy);
      expect(await fixture.sh(copy, MANIFEST)).toBe(expected);
      expect(await fixture.sh(copy, 'stat -c "%U" a.txt private.txt .git/HEAD | sort -u')).toBe('agent\n');
      expect(await fixture.sh(copy, 'ls node_modules 2>&1 || true')).toMatch(/No such file/);
      expect(await fixture.sh(copy, 'git log --format=%s')).toBe(commit === first.commit ? 'base\n' : 'two\nbase\n');
      // Again: the same result, nothing rewritten under a session that uses the workspace.
      await fixture.sh(copy, 'echo mine > mine.txt');
      const again = await hands.restoreCheckpoint({
        fromSessionId: sessionId,
        commit,
        sessionId: copy,
        operationId: `rw-${copy}`,
      });
      expect(again.files).toBe(restored.files);
      expect(await fixture.sh(copy, 'cat mine.txt')).toBe('mine\n');
      // Another restore into it is refused: its workspace is not that restore's.
      const refused = await hands
        .restoreCheckpoint({ fromSessionId: sessionId, commit, sessionId: copy, operationId: 'someone-else' })
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ApplicationFailure);
      expect((refused as ApplicationFailure).type).toBe(CHECKPOINT_FAILURE_TYPES.workspaceExists);
    }

    const unknown = await hands
      .restoreCheckpoint({
        fromSessionId: sessionId,
        commit: 'f'.repeat(40),
        sessionId: fixture.sessionId('ckpt-none'),
        operationId: 'rw-none',
      })
      .catch((err: unknown) => err);
    expect((unknown as ApplicationFailure).type).toBe(CHECKPOINT_FAILURE_TYPES.unknownCheckpoint);
  });

  it('answers an unchanged workspace with its last commit without reading it, and sees every kind of change', async () => {
    // Margin 0: each change below is made after the previous checkpoint returned, so its file time is
    // later than that checkpoint's start, and the setup's are earlier.
    const probing = new SandboxCheckpoints({
      docker: dockerClient(),
      lifecycle: fixture.sandboxes.lifecycle,
      commands: fixture.sandboxes.commands,
      probeMarginMs: 0,
    });
    const sessionId = fixture.sessionId('ckpt-probe');
    await fixture.sandboxes.lifecycle.ensure(sessionId);
    await fixture.sh(
      sessionId,
      'git init -q . && mkdir -p src node_modules/x .agent/out && echo a > src/a.txt && echo b > b.txt && echo c > c.txt && echo i > node_modules/x/i.js',
    );
    let turn = 0;
    const take = async (mode?: 'probe' | 'full') =>
      recorded(
        await probing.record(
          { sessionId, operationId: 'op-probe', turn: ++turn, kind: 'turn', exclude: [...DEFAULT_CHECKPOINT_EXCLUDE] },
          mode,
        ),
      );
    const commits = async () =>
      Number(
        await fixture.sh(
          sessionId,
          'git --git-dir=/var/lib/agent-journal/checkpoints.git rev-list --count refs/checkpoints/head',
        ),
      );
    const first = await take();
    expect([...first.changed].sort()).toEqual(['b.txt', 'c.txt', 'src/a.txt']);

    // Nothing changed: the same commit, and none made.
    expect(await take()).toMatchObject({ commit: first.commit, parent: first.commit, filesChanged: 0, changed: [] });
    // The harness's copies of outputs and an excluded folder are not the workspace's changes.
    await fixture.sh(sessionId, 'echo out > .agent/out/t1.txt && echo j > node_modules/x/j.js');
    expect((await take()).commit).toBe(first.commit);
    expect(await commits()).toBe(1);

    // Each kind of change makes a new checkpoint, then the next unchanged one shares it.
    let last = first;
    for (const [change, changed] of [
      ['printf x >> b.txt && touch -d 2001-01-01 b.txt', ['b.txt']], // content, its time set back
      ['rm c.txt', ['c.txt']],
      ['chmod +x src/a.txt', ['src/a.txt']],
      ['mv src/a.txt a.txt', ['a.txt', 'src/a.txt']],
      ['git add -A', []], // only the workspace repository's .git
    ] as const) {
      await fixture.sh(sessionId, change);
      const next = await take();
      // The output copy written before joins the next full checkpoint.
      const files = next.changed.filter((file) => !file.startsWith('.agent/out/')).sort();
      expect({ change, parent: next.parent, changed: files }).toEqual({
        change,
        parent: last.commit,
        changed,
      });
      expect(next.commit).not.toBe(last.commit);
      expect((await take()).commit).toBe(next.commit);
      last = next;
    }

    // `full` reads the workspace whatever the probe would say.
    const full = await take('full');
    expect(full.commit).not.toBe(last.commit);
    expect(full).toMatchObject({ parent: last.commit, filesChanged: 0 });
    // A wall clock that moved apart from the boot clock since the last full checkpoint: no probe.
    await fixture.sandboxes.commands.script(
      sessionId,
      'f=/var/lib/agent-journal/checkpoints.git/last-full; { read -r w b rest; IFS= read -r p; } < $f; printf "%s %s %s\n%s\n" $((w - 5000000)) "$b" "$rest" "$p" > $f',
      [],
      { user: JOURNAL_WRITER },
    );
    expect((await take()).parent).toBe(full.commit);
  });

  it('leaves out what the operation excludes, and keeps the default folders when told to', async () => {
    const sessionId = fixture.sessionId('ckpt-excl');
    await fixture.sandboxes.lifecycle.ensure(sessionId);
    await fixture.sh(
      sessionId,
      'mkdir -p node_modules/x build && echo a > node_modules/x/i.js && echo b > build/out.log && echo c > keep.txt',
    );
    const outcome = recorded(await checkpoint(sessionId, 1, ['*.log']));
    expect([...outcome.changed].sort()).toEqual(['keep.txt', 'node_modules/x/i.js']);
    // Other patterns in the same session take files in and out; the same ones again change nothing.
    expect(recorded(await checkpoint(sessionId, 2, ['node_modules/'])).changed.sort()).toEqual([
      'build/out.log',
      'node_modules/x/i.js',
    ]);
    expect(recorded(await checkpoint(sessionId, 3, ['*.log'])).changed.sort()).toEqual([
      'build/out.log',
      'node_modules/x/i.js',
    ]);
    await fixture.sh(sessionId, 'echo d >> keep.txt && echo e > build/new.log');
    expect(recorded(await checkpoint(sessionId, 4, ['*.log'])).changed).toEqual(['keep.txt']);
  });

  it('skips a sandbox whose image has no git, saying why', async () => {
    const docker = dockerClient();
    const image = await imageWithoutGit(docker, testPlatform().sandboxImage);
    try {
      const sessionId = fixture.sessionId('ckpt-nogit');
      await fixture.sandboxes.lifecycle.assignEnvironment(sessionId, { image });
      await fixture.sandboxes.lifecycle.ensure(sessionId);
      await fixture.sh(sessionId, 'echo a > a.txt');
      const outcome = await checkpoint(sessionId, 1);
      expect(outcome).toMatchObject({ skipped: 'git is not installed in the sandbox image' });
    } finally {
      await fixture.cleanup();
      await docker.getImage(image).remove({ force: true });
    }
  });

  it('lists the same changed files with a bash that has no mapfile (an older bash in an environment image)', async () => {
    const docker = dockerClient();
    const image = await imageWithoutMapfile(docker, testPlatform().sandboxImage);
    // Names that a line-by-line read would split or mangle: a space, a newline, a leading dash, a backslash, UTF-8.
    const files = `printf 1 > 'a b.txt' && printf 2 > "$(printf 'new\\nline.txt')" && printf 3 > ./-dash.txt && printf 4 > 'back\\slash.txt' && printf 5 > 'ü.txt' && mkdir -p d && printf 6 > d/x.txt`;
    try {
      const current = fixture.sessionId('ckpt-mapfile');
      const older = fixture.sessionId('ckpt-nomapfile');
      await fixture.sandboxes.lifecycle.assignEnvironment(older, { image });
      for (const sessionId of [current, older]) {
        await fixture.sandboxes.lifecycle.ensure(sessionId);
        await fixture.sh(sessionId, files);
      }
      // The builtin really is gone there for the journal's writer, who records checkpoints.
      const probe = async (sessionId: string) =>
        (
          await fixture.sandboxes.commands.script(
            sessionId,
            'type mapfile > /dev/null 2>&1 && echo builtin || echo missing',
            [],
            { user: JOURNAL_WRITER },
          )
        ).stdout
          .toString('utf8')
          .trim();
      expect(await probe(older)).toBe('missing');
      expect(await probe(current)).toBe('builtin');
      const first = recorded(await checkpoint(current, 1));
      const second = recorded(await checkpoint(older, 1));
      expect(second.filesChanged).toBe(first.filesChanged);
      expect([...second.changed].sort()).toEqual([...first.changed].sort());
      expect(second.changed).toEqual(
        expect.arrayContaining(['a b.txt', 'new\nline.txt', '-dash.txt', 'back\\slash.txt', 'ü.txt', 'd/x.txt']),
      );
    } finally {
      await fixture.cleanup();
      await docker.getImage(image).remove({ force: true });
    }
  });
});

/** The sandbox image without git (a layer of deletions, committed from a container). */
function imageWithoutGit(docker: Docker, base: string): Promise<string> {
  return derivedImage(docker, base, 'agent-sandbox-nogit', 'rm -f /usr/bin/git && ! command -v git');
}

/**
 * The sandbox image with a bash that has no `mapfile` (as before bash 4.4 for `mapfile -d`): every
 * non-interactive bash sources `BASH_ENV` first, which disables the builtin.
 */
function imageWithoutMapfile(docker: Docker, base: string): Promise<string> {
  return derivedImage(
    docker,
    base,
    'agent-sandbox-nomapfile',
    "printf 'enable -n mapfile\\n' > /etc/no-mapfile.sh && chmod 644 /etc/no-mapfile.sh",
    ['ENV BASH_ENV=/etc/no-mapfile.sh'],
  );
}

/** `base` after `command` ran in it as root, committed as `<name>:<tag>` with the sandbox's user and command. */
async function derivedImage(
  docker: Docker,
  base: string,
  name: string,
  command: string,
  changes: string[] = [],
): Promise<string> {
  const tag = `${name}:${createHash('sha256').update(String(process.pid)).digest('hex').slice(0, 8)}`;
  const container = await docker.createContainer({
    Image: base,
    User: '0:0',
    Cmd: ['bash', '-c', command],
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    docker.modem.demuxStream(stream, new PassThrough(), new PassThrough());
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    if (StatusCode !== 0) throw new Error(`${name}: \`${command}\` failed (${StatusCode})`);
    const [repo, version] = tag.split(':');
    await container.commit({
      repo,
      tag: version,
      changes: [...changes, `USER ${AGENT_USER}`, 'CMD ["sleep", "infinity"]'],
    });
  } finally {
    await container.remove({ force: true });
  }
  return tag;
}
