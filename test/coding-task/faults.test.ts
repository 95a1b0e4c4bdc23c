/**
 * Bad input and faults of a coding task, each a named error with nothing lost: invalid input, a
 * clone that fails (bad URL, bad ref, refused credentials — no token in any message or history), a
 * spec path that does not exist, a malformed feature list from the initializer, a push the remote
 * rejects (commits kept, nothing forced), and a feature skipped after K failed attempts.
 * Real Temporal, Docker, local bare remotes, a local HTTP remote that refuses credentials.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sendUntilAdmitted } from '../../client/update-admission';
import { abortUpdate } from '../../common/operation';
import { inSandbox } from '../support/hands';
import { waitFor } from '../support/operation-harness';
import {
  git,
  remoteCommits,
  startTaskHarness,
  taskResult,
  taskSessionId,
  type TaskHarness,
} from '../support/coding-task';

jest.setTimeout(600_000);

const execFileAsync = promisify(execFile);

describe('coding task input and repository faults', () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('fails invalid input with a message naming every field', async () => {
    const handle = await h.start({ repo: { kind: 'git' }, budget: { featuresPerRun: 'two' } } as never);
    const error = await handle.result().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const cause = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('InvalidCodingTaskInput');
    expect(cause.message).toContain('repo.url: ');
    expect(cause.message).toContain('budget.featuresPerRun: ');
  });

  it('refuses a URL with credentials without repeating them', async () => {
    const handle = await h.start({ repo: { kind: 'git', url: 'https://x-access-token:SECRET123@127.0.0.1:9/r.git' } });
    const error = (await handle.result().catch((err: unknown) => err)) as WorkflowFailedError;
    expect(error.cause?.message).toContain('repo.url: must not carry credentials');
    expect(error.cause?.message).not.toContain('SECRET123');
  });

  it.each([
    [
      { repo: { kind: 'git' as const, url: 'file:///no/such/repo.git' } },
      'InvalidSeedSource: seed source /no/such/repo.git does not exist',
    ],
    [
      { repo: { kind: 'local' as const, path: '/no/such/dir' } },
      'InvalidSeedSource: seed source /no/such/dir does not exist',
    ],
    [
      { specPath: 'SPEC.md', ref: 'no-such-ref' },
      'RepositoryRefNotFound: repo.ref no-such-ref: no such branch, tag or commit',
    ],
    [{ specPath: 'NOPE.md' }, 'SpecNotFound: specPath NOPE.md: no such file'],
    [{}, 'has no feature_list.json yet, so the initializer needs a specification: give spec or specPath'],
  ])('fails %j with a named reason and its report', async (input, reason) => {
    const { ref, ...rest } = input as { ref?: string };
    const repo = ref ? { repo: { kind: 'git' as const, url: h.remote.url, ref } } : {};
    const result = await taskResult(await h.start({ ...rest, ...repo }));
    expect(result.state).toBe('failed');
    expect(result.reason).toContain(reason);
    expect(result.report).toContain('FAILED');
    expect(result.ledger).toEqual([]);
  });

  it('reports refused credentials as such, with the token in no message and no history', async () => {
    let authorization = '';
    const server = http.createServer((req, res) => {
      authorization ||= req.headers.authorization ?? '';
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end('no');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/textkit.git`;
    process.env.AGENT_GIT_TOKEN = 'TOKEN-abc123-secret';
    try {
      const handle = await h.start({ repo: { kind: 'git', url }, specPath: 'SPEC.md' });
      const result = await taskResult(handle);
      expect(result.state).toBe('failed');
      expect(result.reason).toMatch(/^RepositoryAuthFailed: reading http:\/\/127\.0\.0\.1:\d+\/textkit\.git failed: /);
      expect(result.reason).toContain('AGENT_GIT_TOKEN');
      // The host offered the token (from its environment) and nothing else carried it.
      expect(Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString()).toBe(
        'x-access-token:TOKEN-abc123-secret',
      );
      const history = JSON.stringify(await handle.fetchHistory());
      expect(history).not.toContain('TOKEN-abc123-secret');
      expect(history).not.toContain(Buffer.from('x-access-token:TOKEN-abc123-secret').toString('base64'));
    } finally {
      delete process.env.AGENT_GIT_TOKEN;
      server.close();
    }
  });
});

describe('coding task run faults', () => {
  it('fails the run when the initializer writes a malformed feature list', async () => {
    const h = await startTaskHarness({ malformedFeatureList: true });
    try {
      const result = await taskResult(await h.start({ specPath: 'SPEC.md', verify: 'npm test' }));
      expect(result.state).toBe('failed');
      expect(result.reason).toContain("the initializer's feature list is malformed: feature_list.json[0].category: ");
      expect(result.ledger.map((e) => e.kind)).toEqual(['initializer']);
      expect(result.commits).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it('keeps the commits and forces nothing when the remote branch moved', async () => {
    const h = await startTaskHarness({ holdBeforeCommit: 'slug' });
    const branch = 'agent/moved';
    const taskId = `moved-${process.pid}`;
    try {
      const handle = await h.start({ branch, specPath: 'SPEC.md', verify: 'npm test' }, taskId);
      const session = taskSessionId(taskId);
      await waitFor(
        async () => (await inSandbox(session, 'cat /workspace/.agent/commit-effects.log'))?.includes('slug'),
        'the slug feature to reach its commit',
        300_000,
      );
      // Someone else pushes to the branch while the agent works (git runs without blocking the workers).
      const other = path.join(h.dir, 'other');
      const gitAsync = (cwd: string, ...args: string[]) =>
        execFileAsync('git', args, { cwd, encoding: 'utf8' }).then(({ stdout }) => stdout.trim());
      await gitAsync(h.dir, 'clone', '-q', '--branch', branch, h.remote.bare, other);
      fs.writeFileSync(path.join(other, 'NOTES.md'), 'a human was here\n');
      await gitAsync(other, 'add', '-A');
      await gitAsync(
        other,
        '-c',
        'user.name=human',
        '-c',
        'user.email=h@example.invalid',
        'commit',
        '-q',
        '-m',
        'human change',
      );
      await gitAsync(other, 'push', '-q', 'origin', branch);
      const theirs = await gitAsync(other, 'rev-parse', 'HEAD');
      await inSandbox(session, 'touch /tmp/release-slug');

      const result = await taskResult(handle);
      expect(result.state).toBe('failed');
      expect(result.reason).toContain(`push of ${branch} rejected`);
      expect(result.reason).toContain('nothing was forced');
      expect(result.commits.map((c) => c.subject)).toEqual([
        'Initialize the coding task: 3 features, init.sh, HANDOFF.md',
      ]);
      expect(result.unpushed.map((c) => c.featureId)).toEqual(['slug']);
      expect(git(h.remote.bare, 'rev-parse', `refs/heads/${branch}`)).toBe(theirs);
      expect(result.hostRepository).toBeDefined();
      expect(git(result.hostRepository!, 'rev-parse', `refs/heads/${branch}`)).toBe(result.unpushed[0]!.sha);
      expect(result.report).toContain('Not pushed (kept in the workspace and the host clone)');
    } finally {
      await h.close();
    }
  });

  it('stops the running operation when the task is aborted, and ends aborted with its report', async () => {
    const h = await startTaskHarness({ holdBeforeCommit: 'slug' });
    const taskId = `aborted-${process.pid}`;
    try {
      const handle = await h.start({ branch: 'agent/aborted', specPath: 'SPEC.md', verify: 'npm test' }, taskId);
      await waitFor(
        async () =>
          (await inSandbox(taskSessionId(taskId), 'cat /workspace/.agent/commit-effects.log'))?.includes('slug'),
        'the slug feature to reach its commit',
        300_000,
      );
      await sendUntilAdmitted((updateId) =>
        handle.executeUpdate(abortUpdate, { args: [{ reason: 'going home' }], updateId }),
      );
      const result = await taskResult(handle);
      expect(result.state).toBe('aborted');
      expect(result.reason).toBe('aborted: going home');
      expect(result.commits.map((c) => c.featureId ?? 'init')).toEqual(['init']);
      // The aborted operation is in the ledger with the tokens it used.
      expect(result.ledger.map((e) => [e.operationId.slice(taskId.length + 1), e.state])).toEqual([
        ['init', 'completed'],
        ['slug.1', 'aborted'],
      ]);
      expect(result.ledger[1]!.usage.output).toBeGreaterThan(0);
      expect(result.report).toContain('**ABORTED** — aborted: going home');
      const operation = await h.temporal.client.workflow.getHandle(`${taskId}.slug.1`).describe();
      expect(operation.status.name).not.toBe('RUNNING');
    } finally {
      await h.close();
    }
  });

  it('skips a feature after K failed attempts and finishes the others', async () => {
    const h = await startTaskHarness({ cheats: { slug: { 1: ['broken'], 2: ['broken'] } } });
    const branch = 'agent/skip';
    try {
      const result = await taskResult(
        await h.start({ branch, specPath: 'SPEC.md', verify: 'npm test', budget: { maxAttemptsPerFeature: 2 } }),
      );
      expect(result.state).toBe('completed');
      expect(result.reason).toBe('nothing left but skipped features');
      expect(result.features.map((f) => [f.id, f.passes, f.skipped, f.attempts])).toEqual([
        ['slug', false, true, 2],
        ['words', true, false, 1],
        ['title', true, false, 1],
      ]);
      expect(result.features[0]!.lastError).toContain("The harness's feature check");
      expect(result.report).toMatch(/- `slug`: failed 2 attempts; last error: The harness's feature check/);
      expect(result.report).toContain('with 1 feature left: `slug`');
      expect(remoteCommits(h.remote, branch).map((line) => line.slice(41, 55))).toEqual([
        'Initialize the',
        'Feature words:',
        'Feature title:',
      ]);
    } finally {
      await h.close();
    }
  });
});
