/**
 * The egress proxy: a process the hands worker forks (`proxy-supervisor.ts`), one unix socket per
 * sandbox, each enforcing that sandbox's current policy (`proxy-rules.ts`).
 *
 * - `CONNECT host:port` opens a tunnel when the policy allows the host and its address; the TLS inside
 *   is the sandbox's own (the proxy never sees or changes it).
 * - A plain request in absolute form (`GET http://host/path`) is forwarded; for a host with a
 *   credential the proxy sets its header and reaches the host over TLS (unless told `http`), so the
 *   token is added on the host and never enters the sandbox. `CONNECT` to such a host is refused with
 *   a message saying to use `http://`.
 * - Anything addressed to the proxy itself (origin-form requests) is answered with a short refusal:
 *   the proxy has no endpoints, no status page and never echoes its policy beyond the allowed hosts.
 * - Every request becomes a record (host, port, method, allowed, bytes both ways) sent to the
 *   supervisor, which hands it to the tool call it happened in.
 *
 * Messages from the supervisor (IPC): `{type:'serve', key, socketPath, policy}` starts or updates a
 * socket; `{type:'close', key}` closes it. The policy carries the tokens it needs in memory only
 * (never in argv or the environment).
 */
import * as dns from 'node:dns/promises';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type { EgressRecord } from '../../common/egress';
import { decideAddress, decideHost, normalizeHost, type ResolvedEgress, type Verdict } from './proxy-rules';

export type SupervisorMessage =
  | { type: 'serve'; key: string; socketPath: string; policy: ResolvedEgress }
  | { type: 'close'; key: string }
  | { type: 'flush'; key: string };
export type ProxyMessage =
  | { type: 'ready'; key: string }
  /** The socket could not be served (the answer to a `serve`, like `ready`). */
  | { type: 'failed'; key: string; message: string }
  | { type: 'record'; key: string; record: EgressRecord }
  | { type: 'flushed'; key: string };

interface Served {
  server: http.Server;
  policy: ResolvedEgress;
}

const served = new Map<string, Served>();
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'upgrade'];

function send(message: ProxyMessage): void {
  process.send?.(message);
}

/** Connections of each socket not yet reported, and the flushes waiting for them. */
const open = new Map<string, number>();
const flushWaiters = new Map<string, Array<() => void>>();
/** How long a flush waits for connections still open (a process the call left running may hold one). */
const FLUSH_WAIT_MS = 500;

/**
 * Counts a connection of `key` as open until it closes. Its record is sent while it closes, so
 * "closed" is counted just after (`setImmediate`): a flush answered then has the record ahead of it.
 */
function track(key: string, socket: net.Socket | http.ServerResponse): void {
  open.set(key, (open.get(key) ?? 0) + 1);
  socket.once('close', () =>
    setImmediate(() => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) return void open.set(key, left);
      open.delete(key);
      for (const waiter of flushWaiters.get(key) ?? []) waiter();
      flushWaiters.delete(key);
    }),
  );
}

/**
 * Answers a flush of `key` once its connections have closed (or after `FLUSH_WAIT_MS`): the records
 * of everything that closed are then in the IPC channel ahead of the answer.
 */
function flush(key: string): void {
  let answered = false;
  const answer = (): void => {
    if (answered) return;
    answered = true;
    send({ type: 'flushed', key });
  };
  if (!open.get(key)) return answer();
  flushWaiters.set(key, [...(flushWaiters.get(key) ?? []), answer]);
  setTimeout(answer, FLUSH_WAIT_MS).unref();
}

/** Resolves `host` and checks the address; the connection then goes to that address (no second lookup). */
async function resolveAllowed(
  policy: ResolvedEgress,
  host: string,
  port: number,
): Promise<{ ok: true; address: string; family: number } | { ok: false; reason: string }> {
  const verdict: Verdict = decideHost(policy, host, port);
  if (!verdict.allowed) return { ok: false, reason: verdict.reason };
  let address = host;
  let family = net.isIP(host);
  if (!family) {
    try {
      const found = await dns.lookup(host);
      address = found.address;
      family = found.family;
    } catch (err) {
      return {
        ok: false,
        reason: `egress to ${host}: the name does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      };
    }
  }
  const check = decideAddress(host, address, verdict.explicit, policy.label);
  return check.allowed ? { ok: true, address, family } : { ok: false, reason: check.reason };
}

function refuse(socket: net.Socket, status: number, reason: string): void {
  const body = `${reason}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway'}\r\n` +
      `Content-Type: text/plain; charset=utf-8\r\nX-Agent-Egress: refused\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function splitAuthority(authority: string, defaultPort: number): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(authority);
  if (!match) return undefined;
  const port = match[2] ? Number(match[2]) : defaultPort;
  return port > 0 && port < 65536 ? { host: normalizeHost(match[1]!), port } : undefined;
}

function onConnect(key: string, req: http.IncomingMessage, client: net.Socket, head: Buffer): void {
  track(key, client);
  const entry = served.get(key);
  const target = splitAuthority(req.url ?? '', 443);
  const record: EgressRecord = {
    host: target?.host ?? String(req.url),
    port: target?.port ?? 0,
    method: 'CONNECT',
    allowed: false,
    bytesOut: 0,
    bytesIn: 0,
  };
  const deny = (status: number, reason: string): void => {
    record.reason = reason;
    send({ type: 'record', key, record });
    refuse(client, status, reason);
  };
  client.on('error', () => undefined);
  if (!entry || !target) return deny(400, `egress: ${JSON.stringify(req.url)} is not a host:port`);
  if (entry.policy.credentials[target.host])
    return deny(
      403,
      `egress to ${target.host} goes through the proxy as plain http://${target.host}/… requests: the proxy adds the credential and uses TLS to the host itself`,
    );
  void resolveAllowed(entry.policy, target.host, target.port).then((resolved) => {
    if (!resolved.ok) return deny(403, resolved.reason);
    record.allowed = true;
    const upstream = net.connect({ host: resolved.address, port: target.port });
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      send({ type: 'record', key, record });
      client.destroy();
      upstream.destroy();
    };
    upstream.on('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      record.bytesOut += head.length;
      client.on('data', (chunk: Buffer) => (record.bytesOut += chunk.length));
      upstream.on('data', (chunk: Buffer) => (record.bytesIn += chunk.length));
      client.pipe(upstream);
      upstream.pipe(client);
    });
    upstream.on('error', (err) => {
      if (record.bytesIn === 0 && !client.destroyed && client.bytesWritten === 0) {
        record.allowed = true;
        record.reason = `egress to ${target.host}:${target.port} failed: ${err.message}`;
        refuse(client, 502, record.reason);
      }
      finish();
    });
    upstream.on('close', finish);
    client.on('close', finish);
  });
}

function onRequest(key: string, req: http.IncomingMessage, res: http.ServerResponse): void {
  track(key, res);
  const entry = served.get(key);
  let url: URL | undefined;
  try {
    url = req.url && /^https?:\/\//i.test(req.url) ? new URL(req.url) : undefined;
  } catch {
    url = undefined;
  }
  if (!entry || !url) {
    // Addressed to the proxy itself: it has nothing to show (and the attempt is counted).
    if (entry)
      send({
        type: 'record',
        key,
        record: {
          host: '(the egress proxy)',
          port: 0,
          method: req.method ?? 'GET',
          allowed: false,
          reason: 'a request addressed to the egress proxy itself',
          bytesOut: 0,
          bytesIn: 0,
        },
      });
    res.writeHead(400, { 'Content-Type': 'text/plain', 'X-Agent-Egress': 'refused', Connection: 'close' });
    res.end('this is the sandbox egress proxy: it only forwards requests to allowed hosts\n');
    return;
  }
  const host = normalizeHost(url.hostname);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const record: EgressRecord = { host, port, method: req.method ?? 'GET', allowed: false, bytesOut: 0, bytesIn: 0 };
  const deny = (status: number, reason: string): void => {
    record.reason = reason;
    send({ type: 'record', key, record });
    res.writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Agent-Egress': 'refused',
      Connection: 'close',
    });
    res.end(`${reason}\n`);
  };
  void resolveAllowed(entry.policy, host, port).then((resolved) => {
    if (!resolved.ok) return deny(403, resolved.reason);
    record.allowed = true;
    const credential = entry.policy.credentials[host];
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.includes(name) && value !== undefined) headers[name] = value;
    }
    headers.host = url.port ? `${url.hostname}:${url.port}` : url.hostname;
    if (credential) {
      headers[credential.header.toLowerCase()] = credential.value;
      record.credential = credential.secret;
    }
    const secure = credential ? credential.upstream === 'https' : url.protocol === 'https:';
    const upstreamPort = credential && secure && !url.port ? 443 : port;
    const lookup: net.LookupFunction = (_name, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
          { address: resolved.address, family: resolved.family },
        ]);
      else callback(null, resolved.address, resolved.family);
    };
    const upstreamReq = (secure ? https : http).request({
      host: url.hostname,
      port: upstreamPort,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers,
      lookup,
      ...(secure ? { servername: url.hostname } : {}),
    });
    upstreamReq.on('response', (upstreamRes) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(upstreamRes.headers)) {
        if (!HOP_BY_HOP.includes(name) && value !== undefined) out[name] = value;
      }
      res.writeHead(upstreamRes.statusCode ?? 502, out);
      upstreamRes.on('data', (chunk: Buffer) => (record.bytesIn += chunk.length));
      upstreamRes.pipe(res);
      upstreamRes.on('end', () => send({ type: 'record', key, record }));
    });
    upstreamReq.on('error', (err) => {
      record.reason = `egress to ${host}:${upstreamPort} failed: ${err.message}`;
      send({ type: 'record', key, record });
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain', 'X-Agent-Egress': 'failed' });
      res.end(`${record.reason}\n`);
    });
    req.on('data', (chunk: Buffer) => (record.bytesOut += chunk.length));
    req.pipe(upstreamReq);
  });
}

function serve(key: string, socketPath: string, policy: ResolvedEgress): void {
  const existing = served.get(key);
  if (existing) {
    existing.policy = policy;
    send({ type: 'ready', key });
    return;
  }
  const server = http.createServer((req, res) => onRequest(key, req, res));
  server.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) =>
    onConnect(key, req, socket, head),
  );
  server.on('clientError', (_err, socket: net.Socket) => refuse(socket, 400, 'egress: malformed request'));
  served.set(key, { server, policy });
  // One socket that cannot be served fails its own calls, never the proxy of every other sandbox.
  server.once('error', (err) => {
    if (served.get(key)?.server === server) served.delete(key);
    send({ type: 'failed', key, message: `${socketPath}: ${err.message}` });
  });
  fs.rmSync(socketPath, { force: true });
  server.listen(socketPath, () => {
    fs.chmodSync(socketPath, 0o666);
    send({ type: 'ready', key });
  });
}

process.on('message', (message: SupervisorMessage) => {
  if (message.type === 'serve') serve(message.key, message.socketPath, message.policy);
  else if (message.type === 'close') {
    served.get(message.key)?.server.close();
    served.delete(message.key);
  } else if (message.type === 'flush') flush(message.key);
});
// The supervisor's death ends the proxy: nothing keeps serving a policy nobody updates.
process.on('disconnect', () => process.exit(0));
