/**
 * Everything from outside that the pull-request work reads is validated with a message naming the
 * field: AGENT_FORGES, a coding task's forge repository, pull request and revision, a loop's and an
 * event's input, the agent pr / webhook / forge commands, and webhook deliveries (signature first).
 */
import { createHmac } from 'node:crypto';
import { parseForges } from '../../activities/forge/settings';
import { deliveryHeaders, readDelivery, signatureMatches } from '../../activities/forge/webhook';
import { parseAgentArgs, UsageError } from '../../cli/args';
import { loopIdOf } from '../../cli/pull-requests';
import { parseCodingTaskInput } from '../../common/coding-task';
import {
  addIdsToRanges,
  agentCommand,
  forgeEventInputSchema,
  forgeEventWorkflowId,
  inIdRanges,
  markerKeys,
  withMarker,
  withSection,
} from '../../common/forge';
import { parsePrReplies, pullRequestLoopInputSchema } from '../../common/pull-request';
import { describeZodError } from '../../common/validation';

const forgeRepo = { kind: 'forge', forge: 'local', repository: 'alice/textkit' };

describe('AGENT_FORGES', () => {
  it('reads a forge with its defaults', () => {
    const forges = parseForges('{"local": {"kind": "gitea", "url": "http://127.0.0.1:3000/", "token": "T"}}');
    expect(forges.get('local')).toMatchObject({
      kind: 'gitea',
      url: 'http://127.0.0.1:3000',
      apiUrl: 'http://127.0.0.1:3000/api/v1',
      tokenSecret: 'T',
      label: 'agent',
      commentsPerHour: 20,
      gitUser: 'agent',
    });
    expect(
      parseForges('{"gh": {"kind": "github", "url": "https://github.com", "token": "GH"}}').get('gh'),
    ).toMatchObject({
      apiUrl: 'https://api.github.com',
      gitUser: 'x-access-token',
    });
  });

  it.each([
    ['{"local": {"kind": "gitea", "url": "ftp://x", "token": "T"}}', 'local.url: must be an http(s) URL'],
    ['{"local": {"kind": "gitea", "url": "http://x", "token": "no spaces"}}', 'local.token: must name a secret'],
    ['{"local": {"kind": "gitea", "url": "http://x", "token": "T", "commentsPerHour": 0}}', 'local.commentsPerHour'],
    ['{"local": {"kind": "gitea", "url": "http://x", "token": "T", "tasks": {"verify": ""}}}', 'local.tasks.verify'],
    ['{"local": {"kind": "gitea", "url": "http://x", "token": "T", "colour": "red"}}', 'local.colour: unknown field'],
    ['{"local": ', 'is not JSON'],
    ['/nonexistent/forges.json', 'cannot read the file /nonexistent/forges.json'],
  ])('refuses %s naming the field', (raw, message) => {
    expect(() => parseForges(raw)).toThrow(message);
  });
});

describe("a coding task's forge fields", () => {
  it('accepts a forge repository, its pull request and a revision', () => {
    const parsed = parseCodingTaskInput({
      repo: forgeRepo,
      spec: 'x',
      pullRequest: { issue: 3 },
    });
    expect(parsed).toMatchObject({
      ok: true,
      value: { pullRequest: { draft: true, loop: true, maxFixRounds: 3, issue: 3 } },
    });
    expect(
      parseCodingTaskInput({
        repo: forgeRepo,
        branch: 'agent/issue-3',
        revision: {
          kind: 'review',
          instructions: 'fix it',
          comments: [{ id: 7, kind: 'review-comment', author: 'a', body: 'b' }],
        },
      }).ok,
    ).toBe(true);
  });

  it.each([
    [
      { repo: { kind: 'git', url: 'https://example.com/r.git' }, spec: 'x', pullRequest: {} },
      'pullRequest: a pull request needs a repository on a forge',
    ],
    [
      { repo: forgeRepo, revision: { kind: 'review', instructions: 'x' } },
      'revision: a revision works on an existing branch: give branch',
    ],
    [{ repo: { ...forgeRepo, repository: 'no-slash' }, spec: 'x' }, 'repo.repository: must be "owner/name"'],
    [{ repo: { ...forgeRepo, repository: '../etc' }, spec: 'x' }, 'repo.repository: must be "owner/name"'],
    [{ repo: { ...forgeRepo, forge: 'Local' }, spec: 'x' }, 'repo.forge: must be a forge named in AGENT_FORGES'],
    [{ repo: forgeRepo, branch: 'b', revision: { kind: 'praise', instructions: 'x' } }, 'revision.kind'],
    [{ repo: forgeRepo, spec: 'x', pullRequest: { maxFixRounds: -1 } }, 'pullRequest.maxFixRounds'],
  ])('refuses %j naming the field', (input, message) => {
    const parsed = parseCodingTaskInput(input);
    expect(parsed.ok).toBe(false);
    expect((parsed as { error: string }).error).toContain(message);
  });
});

describe("the loop's and an event's input", () => {
  it('names the field', () => {
    const loop = pullRequestLoopInputSchema.safeParse({ forge: 'local', repository: 'a/b', number: 0, branch: 'x' });
    expect(describeZodError(loop.error!)).toContain('number');
    const event = forgeEventInputSchema.safeParse({
      forge: 'local',
      repository: 'a/b',
      source: 'webhook',
      deliveryId: 'd',
      event: { kind: 'status', sha: 'not-a-sha', state: 'failure' },
    });
    expect(describeZodError(event.error!)).toContain('event.sha: must be a commit id');
  });

  it('gives a comment the same event id from a webhook and a poll, and anything else its delivery', () => {
    const comment = { kind: 'comment', issue: 1, isPull: false, commentId: 42, body: '/agent x', author: 'a' } as const;
    expect(
      forgeEventWorkflowId({ forge: 'local', repository: 'alice/textkit', deliveryId: 'uuid-1', event: comment }),
    ).toBe('forge-event-local-comment-alice-textkit-42');
    expect(
      forgeEventWorkflowId({
        forge: 'local',
        repository: 'alice/textkit',
        deliveryId: 'poll-comment-42',
        event: comment,
      }),
    ).toBe('forge-event-local-comment-alice-textkit-42');
    expect(
      forgeEventWorkflowId({
        forge: 'local',
        repository: 'alice/textkit',
        deliveryId: 'uuid-2',
        event: { kind: 'review', pullRequest: 2, sender: 'a' },
      }),
    ).toBe('forge-event-local-delivery-uuid-2');
  });
});

describe('commands, markers, ranges and replies', () => {
  it('reads /agent commands only at the start of a line', () => {
    expect(agentCommand('/agent add a test')).toBe('add a test');
    expect(agentCommand('Thanks!\n/agent   make it shout\nand louder')).toBe('make it shout\nand louder');
    expect(agentCommand('/agent')).toBe('');
    expect(agentCommand('see /agent docs')).toBeUndefined();
    expect(agentCommand('/agents are nice')).toBeUndefined();
  });

  it('marks bodies, finds markers and rewrites one section in place', () => {
    const body = withMarker('Done.', 'reply:review-comment-7');
    expect(markerKeys(body)).toEqual(['reply:review-comment-7']);
    expect(withMarker(body, 'reply:review-comment-7')).toBe(body);
    expect(() => withMarker('x', 'a key with spaces')).toThrow('a marker key must match');
    const once = withSection('report', 'rounds', 'round 1');
    const twice = withSection(once, 'rounds', 'round 1\nround 2');
    expect(twice.startsWith('report')).toBe(true);
    expect(twice.match(/round 1/g)).toHaveLength(1);
    expect(twice).toContain('round 2');
  });

  it('keeps handled ids as ranges', () => {
    const ranges = addIdsToRanges(addIdsToRanges([], [5, 3, 4, 9]), [10, 4]);
    expect(ranges).toEqual([
      [3, 5],
      [9, 10],
    ]);
    expect(inIdRanges(ranges, 4)).toBe(true);
    expect(inIdRanges(ranges, 6)).toBe(false);
  });

  it("takes the agent's replies for the round's comments only, once each", () => {
    const text = JSON.stringify([
      { ref: 'review-comment-7', addressed: true, reply: 'done' },
      { ref: 'review-comment-7', addressed: false, reply: 'again' },
      { ref: 'comment-99', addressed: true, reply: 'not asked' },
    ]);
    expect(parsePrReplies(text, ['review-comment-7'])).toEqual({
      replies: [{ ref: 'review-comment-7', addressed: true, reply: 'done' }],
    });
    expect(parsePrReplies(undefined, ['x']).problem).toContain('was not written');
    expect(parsePrReplies('[{"ref": 1}]', ['x']).problem).toContain('is malformed');
  });
});

describe('webhook deliveries', () => {
  const body = Buffer.from('{"action":"created"}');
  const signed = (secret: string) => createHmac('sha256', secret).update(body).digest('hex');

  it('checks the signature in constant time and never without one', () => {
    expect(signatureMatches('s3cret', body, signed('s3cret'))).toBe(true);
    expect(signatureMatches('s3cret', body, signed('other'))).toBe(false);
    expect(signatureMatches('s3cret', body, '')).toBe(false);
    expect(signatureMatches('s3cret', body, undefined)).toBe(false);
    expect(signatureMatches('s3cret', body, 'zz')).toBe(false);
    expect(
      deliveryHeaders('github', {
        'x-hub-signature-256': `sha256=${signed('s')}`,
        'x-github-event': 'ping',
        'x-github-delivery': 'd',
      }),
    ).toEqual({
      signature: signed('s'),
      event: 'ping',
      deliveryId: 'd',
    });
  });

  it('reads what the harness acts on and ignores the rest by name', () => {
    const repository = { full_name: 'alice/textkit' };
    expect(
      readDelivery('gitea', 'issues', {
        action: 'label_updated',
        repository,
        issue: { number: 3, labels: [{ name: 'agent' }] },
        sender: { login: 'alice' },
      }),
    ).toEqual({
      kind: 'event',
      repository: 'alice/textkit',
      event: { kind: 'issue-labelled', issue: 3, labels: ['agent'], sender: 'alice' },
    });
    expect(
      readDelivery('gitea', 'pull_request_rejected', {
        action: 'reviewed',
        repository,
        pull_request: { number: 4 },
        sender: { login: 'alice' },
      }),
    ).toMatchObject({
      event: { kind: 'review', pullRequest: 4 },
    });
    expect(
      readDelivery('gitea', 'pull_request', {
        action: 'closed',
        repository,
        pull_request: { number: 4, merged: true },
      }),
    ).toMatchObject({
      event: { kind: 'pull-request', action: 'merged' },
    });
    expect(
      readDelivery('github', 'check_run', {
        action: 'completed',
        repository,
        check_run: { status: 'completed', head_sha: 'abcdef1', conclusion: 'failure' },
      }),
    ).toMatchObject({
      event: { kind: 'status', sha: 'abcdef1', state: 'failure' },
    });
    expect(readDelivery('gitea', 'push', { repository })).toEqual({
      kind: 'ignored',
      repository: 'alice/textkit',
      reason: 'event push is not one the harness acts on',
    });
    expect(readDelivery('gitea', 'issue_comment', { action: 'edited', repository })).toMatchObject({ kind: 'ignored' });
    expect(readDelivery('gitea', 'issues', 'text')).toEqual({
      kind: 'ignored',
      reason: 'the body is not a JSON object',
    });
    expect(readDelivery('gitea', 'issues', {})).toEqual({
      kind: 'ignored',
      reason: 'the delivery names no repository',
    });
    expect(readDelivery('gitea', 'status', { repository, sha: 'nope', state: 'failure' })).toMatchObject({
      kind: 'ignored',
      reason: expect.stringContaining('malformed status delivery'),
    });
  });
});

describe('agent pr, webhook serve and forge poll arguments', () => {
  it('parses them', () => {
    expect(parseAgentArgs(['pr', 'ls'])).toEqual({ kind: 'pr-ls', json: false });
    expect(parseAgentArgs(['pr', 'status', 'local:alice/textkit#2', '--json'])).toEqual({
      kind: 'pr-status',
      id: 'local:alice/textkit#2',
      json: true,
    });
    expect(parseAgentArgs(['pr', 'end', 'pr-local-alice-textkit-2', '--reason', 'mine now'])).toEqual({
      kind: 'pr-control',
      id: 'pr-local-alice-textkit-2',
      action: 'end',
      reason: 'mine now',
    });
    expect(parseAgentArgs(['webhook', 'serve', '--port', '9000'])).toEqual({
      kind: 'webhook-serve',
      host: '127.0.0.1',
      port: 9000,
    });
    expect(parseAgentArgs(['forge', 'poll', 'local:alice/textkit', '--every', '30s'])).toEqual({
      kind: 'forge-poll',
      repository: 'local:alice/textkit',
      everyMs: 30_000,
      stop: false,
    });
    expect(loopIdOf('local:alice/textkit#2')).toBe('pr-local-alice-textkit-2');
    expect(loopIdOf('pr-local-alice-textkit-2')).toBe('pr-local-alice-textkit-2');
    expect(() => loopIdOf('Local:alice/textkit#2')).toThrow('is not <forge>:<owner>/<name>#<number>');
  });

  it.each([
    [['pr', 'pause'], 'pull request'],
    [['pr', 'status', 'x', 'y'], 'got 2 arguments'],
    [['webhook', 'serve', '--port', '70000'], '--port'],
    [['forge', 'poll', 'local:alice/textkit', '--every', 'soon'], '--every'],
  ])('rejects %j naming the problem', (argv, message) => {
    expect(() => parseAgentArgs(argv)).toThrow(UsageError);
    expect(() => parseAgentArgs(argv)).toThrow(message);
  });
});
