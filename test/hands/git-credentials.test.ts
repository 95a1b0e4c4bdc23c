/**
 * Credentials in a seeded repository's git configuration never reach the sandbox: each form is
 * written into a real repository with `git config`, scrubbed, and checked; then one repository with
 * every form (and a submodule's configuration) is seeded into a real sandbox, where the agent looks
 * for the secrets and finds none, while the remote keeps its clean URL.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHandsActivities } from '../../activities/hands/activities';
import { scrubGitConfig } from '../../activities/hands/git-credentials';
import { handsFixture } from '../support/hands';

const git = (dir: string, ...args: string[]): string =>
  execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    },
  }).trim();

describe('credentials in a seeded repository', () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-git-credentials-')));
  let counter = 0;
  const freshRepo = (): string => {
    const dir = path.join(tmp, `repo-${++counter}`);
    git(tmp, 'init', '-q', '-b', 'main', dir);
    git(dir, 'remote', 'add', 'origin', 'https://example.com/team/repo.git');
    return dir;
  };
  const scrubbed = async (dir: string): Promise<string> => {
    const file = path.join(dir, '.git', 'config');
    return (await scrubGitConfig(fs.readFileSync(file), file, dir)).toString('utf8');
  };
  /** What git itself reads from the scrubbed file. */
  const settingsOf = (text: string): string => {
    const file = path.join(tmp, `scrubbed-${++counter}`);
    fs.writeFileSync(file, text);
    return execFileSync('git', ['config', '--file', file, '--list'], { encoding: 'utf8' });
  };

  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it.each<[string, (dir: string) => void, string[]]>([
    [
      'URL userinfo in a remote',
      (dir) => git(dir, 'remote', 'set-url', 'origin', 'https://user:s3cret-token@example.com/team/repo.git'),
      ['s3cret-token', 'user:'],
    ],
    [
      'URL userinfo in a push URL and a submodule URL',
      (dir) => {
        git(dir, 'config', 'remote.origin.pushurl', 'https://ci:push-token@example.com/team/repo.git');
        git(dir, 'config', 'submodule.lib.url', 'https://x-access-token:sub-token@example.com/lib.git');
      },
      ['push-token', 'sub-token'],
    ],
    [
      'http.extraheader (what CI checkouts write)',
      (dir) => git(dir, 'config', 'http.https://example.com/.extraheader', 'AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW4='),
      ['AUTHORIZATION', 'eC1hY2Nlc3MtdG9rZW4='],
    ],
    [
      'a global http.extraHeader',
      (dir) => git(dir, 'config', 'http.extraHeader', 'Authorization: Bearer ghp_global'),
      ['ghp_global'],
    ],
    [
      'credential.* settings',
      (dir) => {
        git(dir, 'config', 'credential.helper', 'store --file=/root/.git-credentials');
        git(dir, 'config', 'credential.https://example.com.username', 'deploy-bot');
      },
      ['credential', 'deploy-bot', '.git-credentials'],
    ],
    [
      'url.<base>.insteadOf whose base carries userinfo',
      (dir) => git(dir, 'config', 'url.https://bot:insteadof-token@example.com/.insteadOf', 'https://example.com/'),
      ['insteadof-token'],
    ],
    [
      'url.<base>.pushInsteadOf whose value carries userinfo',
      (dir) => git(dir, 'config', 'url.https://mirror.example/.pushInsteadOf', 'https://bot:value-token@example.com/'),
      ['value-token'],
    ],
    [
      'include.path outside the repository',
      (dir) => {
        git(dir, 'config', 'include.path', '/root/.gitconfig-with-token');
        git(dir, 'config', '--add', 'include.path', '~/.gitconfig-other');
      },
      ['.gitconfig-with-token', '.gitconfig-other'],
    ],
    [
      'includeIf.<condition>.path outside the repository',
      (dir) => git(dir, 'config', 'includeIf.gitdir:/builds/.path', '../../ci-credentials.cfg'),
      ['ci-credentials.cfg'],
    ],
  ])('removes %s and keeps the remote clean URL', async (_form, write, secrets) => {
    const dir = freshRepo();
    write(dir);
    const text = await scrubbed(dir);
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(settingsOf(text)).toContain('remote.origin.url=https://example.com/team/repo.git\n');
    expect(settingsOf(text)).toContain('remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\n');
  });

  it('keeps an include inside the repository and leaves a clean file byte for byte', async () => {
    const dir = freshRepo();
    const clean = fs.readFileSync(path.join(dir, '.git', 'config'));
    expect(await scrubGitConfig(clean, path.join(dir, '.git', 'config'), dir)).toBe(clean);
    git(dir, 'config', 'include.path', '../team.gitconfig');
    expect(settingsOf(await scrubbed(dir))).toContain('include.path=../team.gitconfig\n');
  });

  it('seeds a repository with every form into a sandbox where the agent finds no secret', async () => {
    const fx = handsFixture();
    try {
      const dir = freshRepo();
      fs.writeFileSync(path.join(dir, 'README.md'), 'hello\n');
      git(dir, 'add', '-A');
      git(dir, 'commit', '-qm', 'first');
      git(dir, 'remote', 'set-url', 'origin', 'https://user:s3cret-token@example.com/team/repo.git');
      git(dir, 'config', 'http.https://example.com/.extraheader', 'AUTHORIZATION: basic c2VjcmV0LWhlYWRlcg==');
      git(dir, 'config', 'credential.helper', 'store');
      git(dir, 'config', 'url.https://bot:insteadof-token@example.com/.insteadOf', 'https://example.com/');
      git(dir, 'config', 'include.path', '/root/.gitconfig-with-token');
      // A submodule's configuration lives in .git/modules/<name>/config.
      const modules = path.join(dir, '.git', 'modules', 'lib');
      fs.mkdirSync(modules, { recursive: true });
      fs.writeFileSync(
        path.join(modules, 'config'),
        '[remote "origin"]\n\turl = https://x:module-token@example.com/lib.git\n[http]\n\textraheader = X-Token: module-header\n',
      );

      const hands = createHandsActivities({ sandboxes: fx.sandboxes, allowedRoots: [tmp] });
      const sessionId = fx.sessionId('credentials');
      await hands.seedWorkspace({ sessionId, source: { kind: 'local', path: dir } });
      const found = await fx.sh(
        sessionId,
        'grep -rIl -e s3cret -e c2VjcmV0LWhlYWRlcg -e insteadof-token -e gitconfig-with-token -e module-token ' +
          '-e module-header -e "helper = store" .git || true',
      );
      expect(found).toBe('');
      expect(await fx.sh(sessionId, 'git remote get-url origin')).toBe('https://example.com/team/repo.git\n');
      expect(await fx.sh(sessionId, 'git config --get-regexp "^(http|credential)\\." || true')).toBe('');
      expect(await fx.sh(sessionId, 'git config --file .git/modules/lib/config remote.origin.url')).toBe(
        'https://example.com/lib.git\n',
      );
      expect(await fx.sh(sessionId, 'git log --format=%s')).toBe('first\n');
    } finally {
      await fx.cleanup();
    }
  });
});
