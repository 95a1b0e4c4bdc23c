/**
 * The egress contract: what network a sandbox may reach, per operation or coding task.
 *
 * The sandbox container has no network (`--network none`); its only way out is the hands worker's
 * egress proxy on the host, reached through a socket mounted into the container and exposed inside
 * as `HTTP(S)_PROXY=http://127.0.0.1:<port>`. The proxy enforces the policy the hands receive with
 * every tool call:
 *  - `none`: every request is refused (the default for operations);
 *  - `registries`: only the package registries the hands host itself is configured to use (npm,
 *    PyPI, the Go module proxy, Maven, Debian — read from the host's configuration), never a
 *    private, loopback or link-local address (the default for coding tasks);
 *  - `{ allow: [host, …], registries?, credentials? }`: the listed hosts (a host name or IP literal,
 *    optionally `:port`), plus the registries when `registries` is true. `credentials` names, per
 *    listed host, a secret of the hands host's secret store and the header the proxy adds to plain
 *    `http://` requests to that host (sent upstream over TLS unless `upstream` is `http`). Inputs name
 *    secrets; they never contain them.
 *
 * Deterministic (imported by workflow code): zod and types only.
 */
import { z } from 'zod';

/** Host names (RFC 1123 labels), IPv4 literals or bracketed IPv6 literals, optionally `:port`. */
const HOST_NAME =
  /^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV6_LITERAL = /^\[[0-9A-Fa-f:.]{2,45}\]$/;
const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
/** Headers the proxy must control itself: a credential may not name them. */
const RESERVED_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'proxy-authorization']);

/** `host` or `host:port` split, or undefined when `entry` is not a host the allow-list accepts. */
export function parseHostEntry(entry: string): { host: string; port?: number } | undefined {
  const match = /^(\[[^\]]*\]|[^:]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!match) return undefined;
  const host = match[1]!.toLowerCase();
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  if (!HOST_NAME.test(host) && !IPV6_LITERAL.test(host)) return undefined;
  return port === undefined ? { host } : { host, port };
}

const hostEntry = z.string().superRefine((entry, ctx) => {
  if (parseHostEntry(entry) === undefined)
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(entry)} is not a host name (use a name like registry.example.com or an IP address, optionally :port; no scheme, path or wildcard)`,
    });
});

export const egressCredentialSchema = z.strictObject({
  /** The request header the proxy sets, e.g. `Authorization`. */
  header: z
    .string()
    .regex(HEADER_NAME, 'must be an HTTP header name')
    .refine((h) => !RESERVED_HEADERS.has(h.toLowerCase()), 'is a header the proxy sets itself'),
  /** The name of the secret in the hands host's store (`AGENT_SECRET_<NAME>` or `AGENT_SECRETS_FILE`). */
  secret: z.string().regex(SECRET_NAME, 'must be a secret name (letters, digits, _; starting with a letter)'),
  /** Put before the token with a space, e.g. `Bearer`. */
  scheme: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,32}$/, 'must be a word such as Bearer')
    .optional(),
  /** How the proxy reaches the host: `https` (default; the sandbox still speaks plain HTTP to the proxy) or `http`. */
  upstream: z.enum(['https', 'http']).default('https'),
});

export const egressAllowSchema = z
  .strictObject({
    allow: z.array(hostEntry).max(100, 'at most 100 hosts'),
    /** Also allow the host's package registries. */
    registries: z.boolean().default(false),
    /** Per allowed host (as written in `allow`): the credential the proxy adds. */
    credentials: z.record(z.string(), egressCredentialSchema).optional(),
  })
  .superRefine((policy, ctx) => {
    for (const host of Object.keys(policy.credentials ?? {})) {
      if (!policy.allow.includes(host))
        ctx.addIssue({
          code: 'custom',
          path: ['credentials', host],
          message: `names a host that is not in allow (${policy.allow.join(', ') || 'empty'})`,
        });
    }
  });

export const egressPolicySchema = z.union([z.enum(['none', 'registries']), egressAllowSchema], {
  error: 'must be "none", "registries" or {"allow": ["host", …]}',
});

export type EgressPolicyInput = z.input<typeof egressPolicySchema>;
export type EgressPolicy = z.output<typeof egressPolicySchema>;
export type EgressCredential = z.output<typeof egressCredentialSchema>;

/** Parses a `--egress` flag or input value: `none`, `registries`, or a JSON allow-list object. */
export function parseEgressFlag(text: string): { ok: true; value: EgressPolicy } | { ok: false; error: string } {
  const trimmed = text.trim();
  let raw: unknown = trimmed;
  if (trimmed.startsWith('{')) {
    try {
      raw = JSON.parse(trimmed);
    } catch (err) {
      return { ok: false, error: `--egress: not JSON (${(err as Error).message})` };
    }
  } else if (trimmed !== 'none' && trimmed !== 'registries') {
    // A comma-separated host list is the short form of {"allow": [...]}.
    raw = { allow: trimmed.split(',').map((h) => h.trim()) };
  }
  const parsed = egressPolicySchema.safeParse(raw);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0]!;
  const at = issue.path.length ? `.${issue.path.join('.')}` : '';
  return { ok: false, error: `--egress${at}: ${issue.message}` };
}

/** One request the proxy saw. */
export interface EgressRecord {
  host: string;
  port: number;
  /** `CONNECT` for a tunnel, else the HTTP method of a plain request. */
  method: string;
  allowed: boolean;
  /** Why it was refused (the text the sandbox got). */
  reason?: string;
  /** Bytes from the sandbox to the host, and back. */
  bytesOut: number;
  bytesIn: number;
  /** The secret whose credential the proxy added (its name only). */
  credential?: string;
}

/** What one tool call's requests came to (in `ToolOutcome.egress`). */
export interface EgressSummary {
  requests: number;
  allowed: number;
  denied: number;
  bytesOut: number;
  bytesIn: number;
  /** Per host: requests allowed and refused, bytes both ways. */
  hosts: Record<string, { allowed: number; denied: number; bytes: number }>;
  /** The distinct refusal messages (at most 5), for the tool result. */
  refusals?: string[];
  /** True when the proxy stopped during the call (it was restarted). */
  proxyRestarted?: boolean;
}

export const EMPTY_EGRESS: EgressSummary = { requests: 0, allowed: 0, denied: 0, bytesOut: 0, bytesIn: 0, hosts: {} };

/** Sums records into a summary. */
export function summarizeEgress(records: readonly EgressRecord[]): EgressSummary {
  const summary: EgressSummary = { ...EMPTY_EGRESS, hosts: {} };
  const refusals = new Set<string>();
  for (const r of records) {
    summary.requests += 1;
    summary.allowed += r.allowed ? 1 : 0;
    summary.denied += r.allowed ? 0 : 1;
    summary.bytesOut += r.bytesOut;
    summary.bytesIn += r.bytesIn;
    const host = (summary.hosts[r.host] ??= { allowed: 0, denied: 0, bytes: 0 });
    host[r.allowed ? 'allowed' : 'denied'] += 1;
    host.bytes += r.bytesOut + r.bytesIn;
    if (!r.allowed && r.reason && refusals.size < 5) refusals.add(r.reason);
  }
  if (refusals.size) summary.refusals = [...refusals];
  return summary;
}

/** Adds two summaries (the operation's running total); refusals are not carried. */
export function addEgress(a: EgressSummary, b: EgressSummary): EgressSummary {
  const hosts: EgressSummary['hosts'] = {};
  for (const side of [a.hosts, b.hosts]) {
    for (const [name, h] of Object.entries(side)) {
      const into = (hosts[name] ??= { allowed: 0, denied: 0, bytes: 0 });
      into.allowed += h.allowed;
      into.denied += h.denied;
      into.bytes += h.bytes;
    }
  }
  return {
    requests: a.requests + b.requests,
    allowed: a.allowed + b.allowed,
    denied: a.denied + b.denied,
    bytesOut: a.bytesOut + b.bytesOut,
    bytesIn: a.bytesIn + b.bytesIn,
    hosts,
  };
}

/** The failure type of a tool call during which the proxy stopped (retryable; the proxy is restarted). */
export const EGRESS_PROXY_RESTARTED = 'EgressProxyRestarted';
