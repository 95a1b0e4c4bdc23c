/**
 * Checks that a conversation only ever grows: each request's messages extend the previous
 * request's messages as an exact prefix (string content counted as one text block, breakpoint
 * marks ignored, since the harness moves its tail breakpoint every turn). This is what keeps the
 * prompt cache hitting, and what `assertRequestsExtendPrefix` asserts over a server's request log.
 */
import { canonicalJson, normalizedMessages } from './prompt';
import type { RecordedRequest } from './server';

/** Why `next` does not extend `previous` (messages arrays), or null when it does. */
export function prefixViolation(previous: readonly unknown[], next: readonly unknown[]): string | null {
  const before = normalizedMessages(previous);
  const after = normalizedMessages(next);
  if (after.length < before.length) return `it has ${after.length} messages, fewer than the ${before.length} before`;
  for (let i = 0; i < before.length; i++) {
    const was = canonicalJson(before[i]);
    const is = canonicalJson(after[i]);
    if (was !== is) return `message ${i} changed:\n    before: ${was.slice(0, 400)}\n    after:  ${is.slice(0, 400)}`;
  }
  return null;
}

function messagesOf(request: RecordedRequest): unknown[] | null {
  const body = request.body as { messages?: unknown } | null;
  return body && Array.isArray(body.messages) ? body.messages : null;
}

/**
 * Throws unless every `POST /v1/messages` request (in arrival order) extends the one before it as
 * an exact prefix of its messages. A retried request (identical) counts as an extension.
 */
export function assertRequestsExtendPrefix(requests: readonly RecordedRequest[]): void {
  const conversation = requests.filter(
    (request) => request.method === 'POST' && request.path === '/v1/messages' && messagesOf(request),
  );
  for (let n = 1; n < conversation.length; n++) {
    const problem = prefixViolation(messagesOf(conversation[n - 1]!)!, messagesOf(conversation[n]!)!);
    if (problem) {
      throw new Error(
        `request ${conversation[n]!.index} does not extend request ${conversation[n - 1]!.index} as an exact prefix: ${problem}`,
      );
    }
  }
}
