/**
 * What the egress proxy decides for one request: whether the policy allows the host, and whether the
 * address it resolves to may be reached. Pure functions over a resolved policy (`ResolvedEgress`),
 * shared by the proxy process and the tests.
 *
 * Addresses: loopback, link-local (cloud metadata lives there), unspecified and multicast addresses
 * are refused under every policy — nothing reaches the hands host's own services or the proxy itself
 * through the proxy. Private ranges (RFC 1918, CGNAT, unique-local IPv6) are refused for registries
 * and reachable only for a host named explicitly in an allow-list (a company's internal registry).
 */
import * as net from 'node:net';

export interface HostRule {
  host: string;
  /** Any port when absent. */
  port?: number;
}

/** A policy as the proxy enforces it: hosts resolved, credentials holding their tokens. */
export interface ResolvedEgress {
  /** How the policy is named in messages (`none`, `registries`, `allow-list`). */
  label: string;
  /** Hosts named explicitly (may resolve to a private address). */
  allow: HostRule[];
  /** The host's package registries (never a private address). */
  registries: HostRule[];
  /** Per host name: the header the proxy adds to plain HTTP requests, and how it reaches the host. */
  credentials: Record<string, { header: string; value: string; secret: string; upstream: 'https' | 'http' }>;
}

export type Verdict = { allowed: true; explicit: boolean } | { allowed: false; reason: string };

const matches = (rule: HostRule, host: string, port: number): boolean =>
  rule.host === host && (rule.port === undefined || rule.port === port);

const describe = (rules: HostRule[]): string =>
  rules.map((r) => (r.port === undefined ? r.host : `${r.host}:${r.port}`)).join(', ');

/** Normalises a request's host (lower case, IPv6 brackets removed). */
export function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** Whether the policy names `host:port` (before any address check). */
export function decideHost(policy: ResolvedEgress, host: string, port: number): Verdict {
  const bracketed = net.isIPv6(host) ? `[${host}]` : host;
  if (policy.allow.some((rule) => matches(rule, bracketed, port) || matches(rule, host, port)))
    return { allowed: true, explicit: true };
  if (policy.registries.some((rule) => matches(rule, host, port))) return { allowed: true, explicit: false };
  const allowed = [...policy.allow, ...policy.registries];
  return {
    allowed: false,
    reason:
      `egress to ${host}${port === 80 || port === 443 ? '' : `:${port}`} is not allowed by this task's policy (${policy.label}): ` +
      (allowed.length ? `allowed are ${describe(allowed)}` : 'no host is allowed'),
  };
}

export type AddressClass = 'public' | 'private' | 'local';

/** `local`: loopback, link-local, unspecified, multicast, broadcast; `private`: RFC 1918, CGNAT, ULA. */
export function classifyAddress(address: string): AddressClass {
  if (net.isIPv4(address)) return classifyV4(address.split('.').map(Number));
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return classifyV4(mapped[1]!.split('.').map(Number));
  if (lower === '::' || lower === '::1') return 'local';
  if (/^fe[89ab]/.test(lower) || /^ff/.test(lower)) return 'local';
  if (/^f[cd]/.test(lower)) return 'private';
  return 'public';
}

function classifyV4([a, b]: number[]): AddressClass {
  if (a === 127 || a === 0 || (a === 169 && b === 254) || a! >= 224) return 'local';
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 100 && b! >= 64 && b! <= 127) return 'private';
  return 'public';
}

/** Whether a resolved address may be reached for a host the policy allowed. */
export function decideAddress(host: string, address: string, explicit: boolean, label: string): Verdict {
  const kind = classifyAddress(address);
  if (kind === 'public' || (kind === 'private' && explicit)) return { allowed: true, explicit };
  return {
    allowed: false,
    reason:
      kind === 'local'
        ? `egress to ${host} is refused: it resolves to ${address}, a loopback, link-local or otherwise local address (the hands host's own services are never reachable from the sandbox)`
        : `egress to ${host} is refused: it resolves to the private address ${address}, which the ${label} policy does not reach (name the host explicitly in the allow-list to reach an internal service)`,
  };
}
