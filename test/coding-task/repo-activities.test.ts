/**
 * The repo activities called directly, as a retried attempt would call them again (real Docker,
 * real git, a local bare remote): seeding, the one commit of accepted work and the push converge
 * instead of repeating; a lost host clone is rebuilt from the remote; a workspace whose `.git` the
 * agent deleted is restored from the host's copy; a given-up attempt is shelved under a ref.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRepoActivities } from '../../activities/repo/activities';
import { featureListText, type Feature } from '../../common/feature-list';
import type { RepoActivities } from '../../common/repo';
import { handsFixture, type HandsFixture } from '../support/hands';
import { git, makeTextkitRemote, type TestRemote } from '../support/coding-task';

const FEATURES: Feature[] = [
  { id: 'slug', category: 'command', description: 'slug', steps: [], verify: 'true', passes: false },
];

describe('repo activities', () => {
  let fixture: HandsFixture;
  let repo: RepoActivities;
  let remote: TestRemote;
  let dir: string;
  let tasksDir: string;
  let sessionId: string;
  const branch = 'agent/direct';

  beforeAll(() => {
    fixture = handsFixture();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'repo-activities-'));
    tasksDir = path.join(dir, 'tasks');
    remote = makeTextkitRemote(dir);
    repo = createRepoActivities({ sandboxes: fixture.sandboxes, tasksDir, env: { ...process.env } });
    sessionId = fixture.sessionId('repo');
  });
  afterAll(async () => {
    await fixture.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const repoInput = () => ({ kind: 'git' as const, url: remote.url });

  it('prepares a new branch and seeds the workspace once, with no remote or credentials in it', async () => {
    const prepared = await repo.prepareRepository({
      taskId: 't',
      sessionId,
      repo: repoInput(),
      branch,
      specPath: 'SPEC.md',
    });
    expect(prepared).toMatchObject({ branch, branchExisted: false, startCommit: remote.root });
    expect(prepared.featureListText).toBeUndefined();
    expect(prepared.spec?.text).toContain('textkit: three more commands');
    expect(await repo.seedBranch({ sessionId, branch, commit: remote.root })).toEqual({ head: remote.root });
    await fixture.sh(sessionId, 'echo scratch > scratch.txt');
    expect(await repo.seedBranch({ sessionId, branch, commit: remote.root })).toEqual({ head: remote.root });
    expect(await fixture.sh(sessionId, 'cat scratch.txt; git symbolic-ref HEAD; git remote -v | wc -l')).toBe(
      `scratch\nrefs/heads/${branch}\n0\n`,
    );
    await fixture.sh(sessionId, 'rm scratch.txt');
  });

  it('commits accepted work once, and pushes it once, even when called again', async () => {
    await fixture.sh(
      sessionId,
      'mkdir -p src/commands && echo "module.exports = (t) => t;" > src/commands/slug.js && git add -A && git commit -qm "agent: slug" && echo wip > notes.txt',
    );
    const input = {
      sessionId,
      branch,
      parent: remote.root,
      features: FEATURES,
      subject: 'Feature slug: slug',
      trailers: { 'Agent-Task': 't', 'Agent-Feature': 'slug', 'Agent-Operation': 't.slug.1' },
    };
    const first = await repo.commitAccepted(input);
    const again = await repo.commitAccepted(input);
    expect(again).toEqual(first);
    expect(
      await fixture.sh(sessionId, `git rev-list --count ${remote.root}..HEAD; git status --porcelain | wc -l`),
    ).toBe('1\n0\n');
    const message = await fixture.sh(sessionId, 'git log -1 --format=%B');
    expect(message).toContain("The agent's commits:\n- agent: slug");
    expect(message).toContain('Agent-Operation: t.slug.1');
    expect(await fixture.sh(sessionId, 'git show HEAD:feature_list.json')).toBe(featureListText(FEATURES));
    expect(first.changes.map((c) => c.path).sort()).toEqual(['feature_list.json', 'notes.txt', 'src/commands/slug.js']);

    const push = { sessionId, repo: repoInput(), branch, expected: null, base: remote.root, commit: first.commit };
    expect(await repo.pushBranch(push)).toEqual({ pushed: true, alreadyThere: false });
    expect(await repo.pushBranch(push)).toEqual({ pushed: true, alreadyThere: true });
    // The host's clone is gone (a new hands host): the remote still answers for it.
    fs.rmSync(path.join(tasksDir, sessionId), { recursive: true, force: true });
    expect(await repo.pushBranch(push)).toEqual({ pushed: true, alreadyThere: true });
    expect(git(remote.bare, 'rev-parse', `refs/heads/${branch}`)).toBe(first.commit);

    await fixture.sh(sessionId, 'echo more >> notes.txt && git commit -qam "agent: more"');
    const second = await repo.commitAccepted({
      ...input,
      parent: first.commit,
      trailers: { ...input.trailers, 'Agent-Operation': 't.slug.2' },
    });
    fs.rmSync(path.join(tasksDir, sessionId), { recursive: true, force: true });
    expect(
      await repo.pushBranch({ ...push, expected: first.commit, base: first.commit, commit: second.commit }),
    ).toEqual({
      pushed: true,
      alreadyThere: false,
    });
    expect(git(remote.bare, 'rev-list', '--count', `${remote.root}..refs/heads/${branch}`)).toBe('2');
  });

  it("restores a workspace whose .git the agent deleted from the host's copy", async () => {
    const accepted = git(remote.bare, 'rev-parse', `refs/heads/${branch}`);
    await fixture.sh(sessionId, 'rm -rf .git feature_list.json && echo junk > junk.txt');
    const checked = await repo.checkWorkspace({ sessionId, branch, acceptedCommit: accepted, features: FEATURES });
    expect(checked.historyRewritten).toContain("restored the branch from the host's copy");
    expect(
      await fixture.sh(
        sessionId,
        'git rev-parse HEAD; ls junk.txt 2>/dev/null | wc -l; git status --porcelain | wc -l',
      ),
    ).toBe(`${accepted}\n0\n0\n`);
    expect(await fixture.sh(sessionId, 'cat feature_list.json')).toBe(featureListText(FEATURES));
  });

  it('shelves a given-up attempt under a ref and goes back to the accepted commit', async () => {
    const accepted = git(remote.bare, 'rev-parse', `refs/heads/${branch}`);
    await fixture.sh(
      sessionId,
      'echo broken > src/commands/slug.js && git commit -qam "agent: broken" && echo untracked > u.txt',
    );
    const { shelved } = await repo.shelveAttempt({
      sessionId,
      branch,
      acceptedCommit: accepted,
      ref: 'refs/agent/skipped/slug',
      message: 'skipped slug',
    });
    expect(shelved).toMatch(/^[0-9a-f]{40}$/);
    expect(
      await fixture.sh(sessionId, 'git rev-parse HEAD refs/agent/skipped/slug; git status --porcelain | wc -l'),
    ).toBe(`${accepted}\n${shelved}\n0\n`);
    expect(await fixture.sh(sessionId, 'git show refs/agent/skipped/slug:u.txt')).toBe('untracked\n');
  });
});
