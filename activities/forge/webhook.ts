/**
 * A webhook delivery, checked and read: the signature (HMAC-SHA256 of the raw body with the forge's
 * webhook secret; compared in constant time, and never when the forge sent none) and then the few
 * fields the harness acts on, as a `ForgeEvent`. Everything else a forge sends is ignored, by name.
 *
 * Gitea: `X-Gitea-Signature: <hex>`, `X-Gitea-Delivery`, `X-Gitea-Event`. GitHub:
 * `X-Hub-Signature-256: sha256=<hex>`, `X-GitHub-Delivery`, `X-GitHub-Event`. Gitea sends its own
 * event names even in `X-GitHub-Event`, so the forge's kind decides how a delivery is read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { forgeEventSchema, type ForgeEvent, type ForgeKind } from '../../common/forge';

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface DeliveryHeaders {
  deliveryId?: string;
  event?: string;
  signature?: string;
}

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

export function deliveryHeaders(kind: ForgeKind, headers: Headers): DeliveryHeaders {
  if (kind === 'gitea') {
    return {
      deliveryId: header(headers, 'x-gitea-delivery'),
      event: header(headers, 'x-gitea-event'),
      signature: header(headers, 'x-gitea-signature'),
    };
  }
  const signature = header(headers, 'x-hub-signature-256');
  return {
    deliveryId: header(headers, 'x-github-delivery'),
    event: header(headers, 'x-github-event'),
    signature: signature?.startsWith('sha256=') ? signature.slice('sha256='.length) : signature,
  };
}

/** True only for a non-empty signature that is the body's HMAC with `secret`. */
export function signatureMatches(secret: string, body: Buffer, signature: string | undefined): boolean {
  if (!signature || !/^[0-9a-f]{64}$/i.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

export type ReadDelivery =
  { kind: 'event'; repository: string; event: ForgeEvent } | { kind: 'ignored'; repository?: string; reason: string };

interface Payload {
  action?: string;
  repository?: { full_name?: string };
  sender?: { login?: string };
  issue?: { number?: number; labels?: Array<{ name?: string }>; pull_request?: unknown };
  comment?: { id?: number; body?: string; user?: { login?: string } };
  pull_request?: { number?: number; merged?: boolean; head?: { sha?: string } };
  number?: number;
  is_pull?: boolean;
  label?: { name?: string };
  sha?: string;
  state?: string;
  check_run?: { head_sha?: string; conclusion?: string | null; status?: string };
  check_suite?: { head_sha?: string; conclusion?: string | null; status?: string };
  review?: { user?: { login?: string } };
}

/** The event of a delivery whose signature has been checked, or why it is ignored. */
export function readDelivery(kind: ForgeKind, eventName: string, payload: unknown): ReadDelivery {
  if (typeof payload !== 'object' || payload === null)
    return { kind: 'ignored', reason: 'the body is not a JSON object' };
  const p = payload as Payload;
  const repository = p.repository?.full_name;
  if (!repository) return { kind: 'ignored', reason: 'the delivery names no repository' };
  const event = kind === 'gitea' ? giteaEvent(eventName, p) : githubEvent(eventName, p);
  if (typeof event === 'string') return { kind: 'ignored', repository, reason: event };
  const checked = forgeEventSchema.safeParse(event);
  if (!checked.success)
    return {
      kind: 'ignored',
      repository,
      reason: `malformed ${eventName} delivery: ${checked.error.issues[0]?.message}`,
    };
  return { kind: 'event', repository, event: checked.data };
}

const sender = (p: Payload): string => p.sender?.login ?? '';

function commentEvent(p: Payload, isPull: boolean): ForgeEvent | string {
  if (p.action !== 'created') return `a comment ${p.action ?? 'changed'} (only new comments are read)`;
  return {
    kind: 'comment',
    issue: p.issue?.number ?? 0,
    isPull,
    commentId: p.comment?.id ?? 0,
    body: (p.comment?.body ?? '').slice(0, 65_536),
    author: p.comment?.user?.login ?? sender(p),
  };
}

function giteaEvent(name: string, p: Payload): ForgeEvent | string {
  switch (name) {
    case 'issues': {
      if (p.action !== 'label_updated' && p.action !== 'labeled' && p.action !== 'opened' && p.action !== 'reopened')
        return `issues: ${p.action ?? 'no action'}`;
      return {
        kind: 'issue-labelled',
        issue: p.issue?.number ?? 0,
        labels: (p.issue?.labels ?? []).map((label) => label.name ?? '').filter(Boolean),
        sender: sender(p),
      };
    }
    case 'issue_comment':
      return commentEvent(p, p.is_pull === true || Boolean(p.issue?.pull_request));
    case 'pull_request_comment':
    case 'pull_request_review_comment':
    case 'pull_request_approved':
    case 'pull_request_rejected':
    case 'pull_request_review_approved':
    case 'pull_request_review_rejected':
      return { kind: 'review', pullRequest: p.pull_request?.number ?? p.number ?? 0, sender: sender(p) };
    case 'pull_request':
      return {
        kind: 'pull-request',
        pullRequest: p.pull_request?.number ?? p.number ?? 0,
        action: p.action === 'closed' && p.pull_request?.merged ? 'merged' : (p.action ?? 'changed'),
      };
    case 'status':
      return { kind: 'status', sha: p.sha ?? '', state: p.state ?? '' };
    default:
      return `event ${name || '(none)'} is not one the harness acts on`;
  }
}

function githubEvent(name: string, p: Payload): ForgeEvent | string {
  switch (name) {
    case 'issues': {
      if (p.action !== 'labeled' && p.action !== 'opened' && p.action !== 'reopened')
        return `issues: ${p.action ?? 'no action'}`;
      if (p.issue?.pull_request) return 'a pull request labelled';
      return {
        kind: 'issue-labelled',
        issue: p.issue?.number ?? 0,
        labels: (p.issue?.labels ?? []).map((label) => label.name ?? '').filter(Boolean),
        sender: sender(p),
      };
    }
    case 'issue_comment':
      return commentEvent(p, Boolean(p.issue?.pull_request));
    case 'pull_request_review':
    case 'pull_request_review_comment':
    case 'pull_request_review_thread':
      return { kind: 'review', pullRequest: p.pull_request?.number ?? 0, sender: sender(p) };
    case 'pull_request':
      return {
        kind: 'pull-request',
        pullRequest: p.pull_request?.number ?? p.number ?? 0,
        action: p.action === 'closed' && p.pull_request?.merged ? 'merged' : (p.action ?? 'changed'),
      };
    case 'status':
      return { kind: 'status', sha: p.sha ?? '', state: p.state ?? '' };
    case 'check_run':
    case 'check_suite': {
      const run = p.check_run ?? p.check_suite;
      if (run?.status !== 'completed') return `${name}: not completed`;
      return { kind: 'status', sha: run.head_sha ?? '', state: run.conclusion ?? 'failure' };
    }
    case 'ping':
      return 'ping';
    default:
      return `event ${name || '(none)'} is not one the harness acts on`;
  }
}
