/**
 * The webhook receiver (`agent webhook serve`): a plain HTTP server that takes a forge's deliveries
 * at `POST /webhooks/<forge>`, checks each one's signature against the forge's webhook secret, reads
 * the few fields the harness acts on, and hands the event to Temporal as a `forgeEvent` workflow
 * whose id is the delivery's (a comment's for a comment) — so it answers within milliseconds, a
 * redelivery starts nothing, and an event that arrives while no worker runs waits in Temporal.
 *
 * Refused, with one log line each and nothing started: an unknown forge (404), a forge without a
 * webhook secret (403), a delivery without a signature or with a wrong one (401), a body that is
 * not JSON or too big (400, 413). `GET /healthz` answers 200.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { deliveryHeaders, readDelivery, signatureMatches } from '../activities/forge/webhook';
import type { Forges } from '../activities/forge/settings';
import type { SecretStore } from '../activities/secrets/store';
import {
  FORGE_EVENT_WORKFLOW_TYPE,
  forgeEventInputSchema,
  forgeEventWorkflowId,
  type ForgeEventInput,
} from '../common/forge';

const MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface WebhookReceiverOptions {
  client: Client;
  /** The brain's task queue (where `forgeEvent` runs). */
  taskQueue: string;
  forges: Forges;
  secrets: SecretStore;
  host?: string;
  port: number;
  log?: (line: string) => void;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  /** The log line (every delivery gets one). */
  line: string;
}

export async function startWebhookReceiver(options: WebhookReceiverOptions): Promise<WebhookReceiver> {
  const log = options.log ?? ((line: string) => console.log(line));
  const server = http.createServer((request, response) => {
    void answer(options, request).then(
      (result) => {
        log(result.line);
        response.writeHead(result.status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(result.body));
      },
      (err: Error) => {
        log(`webhook: error: ${err.message}`);
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'internal error' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function answer(options: WebhookReceiverOptions, request: http.IncomingMessage): Promise<Answer> {
  const url = new URL(request.url ?? '/', 'http://receiver');
  if (request.method === 'GET' && url.pathname === '/healthz')
    return { status: 200, body: { ok: true }, line: 'webhook: health check' };
  const match = /^\/webhooks\/([^/]+)$/.exec(url.pathname);
  if (request.method !== 'POST' || !match)
    return refuse(404, `${request.method} ${url.pathname}`, 'not a webhook address (POST /webhooks/<forge>)');
  const name = decodeURIComponent(match[1]!);
  const forge = options.forges.get(name);
  if (!forge) return refuse(404, name, `no forge named "${name}" in AGENT_FORGES`);
  const headers = deliveryHeaders(forge.kind, request.headers);
  const delivery = `${name} delivery ${headers.deliveryId ?? '(no id)'} (${headers.event ?? 'no event'}) from ${request.socket.remoteAddress ?? '?'}`;
  const body = await readBody(request);
  if (body === 'too big') return refuse(413, delivery, `the body is over ${MAX_BODY_BYTES} bytes`);
  if (!forge.webhookSecret)
    return refuse(
      403,
      delivery,
      `the forge names no webhookSecret, so its webhooks are refused (use polling, or set one)`,
    );
  const secret = options.secrets.get(forge.webhookSecret);
  if (!secret)
    return refuse(403, delivery, `the secret store does not hold ${forge.webhookSecret}, the forge's webhook secret`);
  if (!headers.signature) return refuse(401, delivery, 'no signature (a webhook without the secret)');
  if (!signatureMatches(secret, body, headers.signature))
    return refuse(401, delivery, 'the signature does not match: forged, or signed with another secret');
  if (!headers.deliveryId || !headers.event) return refuse(400, delivery, 'no delivery id or event name');
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return refuse(400, delivery, 'the body is not JSON');
  }
  const read = readDelivery(forge.kind, headers.event, payload);
  if (read.kind === 'ignored')
    return {
      status: 200,
      body: { outcome: `ignored: ${read.reason}` },
      line: `webhook: ignored ${delivery}: ${read.reason}`,
    };
  const checked = forgeEventInputSchema.safeParse({
    forge: name,
    repository: read.repository,
    source: 'webhook',
    deliveryId: headers.deliveryId,
    event: read.event,
  });
  if (!checked.success) return refuse(400, delivery, `unusable delivery: ${checked.error.issues[0]?.message}`);
  return handOver(options, checked.data, delivery);
}

/** Starts the event's workflow; a delivery handled before (same id) is acknowledged and starts nothing. */
async function handOver(options: WebhookReceiverOptions, input: ForgeEventInput, delivery: string): Promise<Answer> {
  const workflowId = forgeEventWorkflowId(input);
  try {
    await options.client.workflow.start(FORGE_EVENT_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: options.taskQueue,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `${input.event.kind} on ${input.repository} (${input.source})`.slice(0, 190),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      return {
        status: 200,
        body: { outcome: 'duplicate', workflowId },
        line: `webhook: duplicate ${delivery}: ${workflowId} handled it`,
      };
    // Temporal is out of reach: the forge sees a failure (Gitea does not retry; the poller is the safety net).
    return {
      status: 503,
      body: { error: 'cannot reach Temporal' },
      line: `webhook: NOT handed over ${delivery}: ${(err as Error).message}`,
    };
  }
  return {
    status: 202,
    body: { workflowId },
    line: `webhook: accepted ${delivery}: ${input.event.kind} → ${workflowId}`,
  };
}

function refuse(status: number, what: string, reason: string): Answer {
  return { status, body: { error: reason }, line: `webhook: refused ${what}: ${reason}` };
}

function readBody(request: http.IncomingMessage): Promise<Buffer | 'too big'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooBig = true;
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(tooBig ? 'too big' : Buffer.concat(chunks)));
    request.on('error', reject);
  });
}
