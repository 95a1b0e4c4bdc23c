/**
 * Helpers for the egress tests: local HTTP servers standing in for an allowed host, a forbidden
 * host and a private registry that wants a token (bound to this machine's non-loopback address, as
 * a host on the network would be), and a tiny npm project with one dependency from the registry.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';

/** This machine's first non-internal IPv4 address (the proxy reaches it like any other host). */
export function hostAddress(): string {
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  throw new Error('no non-loopback IPv4 address on this machine');
}

export interface StandInServer {
  port: number;
  /** Requests seen, as `METHOD path authorization?`. */
  seen: string[];
  /** Resolves when a request for `path` arrives. */
  arrived(path: string): Promise<void>;
  /** Ends every held request (`/hold`). */
  release(): void;
  close(): Promise<void>;
}

/**
 * A server answering `<name>` on every path; with `token`, only requests carrying
 * `Authorization: Bearer <token>` (others get 401); `/hold` answers only when released.
 */
export async function startStandIn(name: string, address: string, token?: string): Promise<StandInServer> {
  const seen: string[] = [];
  const waiters = new Map<string, () => void>();
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}${req.headers.authorization ? ' authorized' : ''}`);
    waiters.get(req.url ?? '')?.();
    if (req.url === '/hold') {
      held.push(res);
      return;
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end('unauthorized\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`${name}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    arrived: (path) => new Promise<void>((resolve) => waiters.set(path, resolve)),
    release: () => held.splice(0).forEach((res) => res.writeHead(200).end('released\n')),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A bash command fetching `url` through the proxy with python's urllib: prints `<status> <body>`. */
export function fetchCommand(url: string, options: { forceProxy?: boolean } = {}): string {
  const script = [
    'import sys, urllib.request, urllib.error',
    'try:',
    `    r = urllib.request.urlopen(${JSON.stringify(url)}, timeout=60)`,
    '    print(r.status, r.read().decode().strip())',
    'except urllib.error.HTTPError as e:',
    '    print(e.code, e.read().decode().strip())',
    'except Exception as e:',
    "    print('error', e)",
  ].join('\n');
  // forceProxy: through the proxy even where NO_PROXY says not to (a name like localhost).
  const env = options.forceProxy ? 'env -u no_proxy -u NO_PROXY ' : '';
  return `${env}python3 -c '${script.replace(/'/g, `'"'"'`)}'`;
}

/** A project whose `npm ci` installs one small package (is-number) from the npm registry. */
export const NPM_PROJECT = {
  'package.json': `${JSON.stringify({ name: 'egress-fixture', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0' } }, null, 2)}\n`,
  'package-lock.json': `${JSON.stringify(
    {
      name: 'egress-fixture',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'egress-fixture', version: '1.0.0', dependencies: { 'is-number': '7.0.0' } },
        'node_modules/is-number': {
          version: '7.0.0',
          integrity: 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
          license: 'MIT',
          engines: { node: '>=0.12.0' },
        },
      },
    },
    null,
    2,
  )}\n`,
};
