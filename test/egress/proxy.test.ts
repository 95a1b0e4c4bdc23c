/**
 * The egress proxy with the real engine, image and proxy process: the sandbox (still
 * `--network none`) reaches the npm registry under `registries` and nothing under `none`; local
 * servers stand in for an allowed host, a forbidden host and a private registry whose token the
 * proxy adds; the red team looks for that token everywhere in the sandbox; the proxy is killed in
 * the middle of a request and comes back.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { EgressHost } from '../../activities/egress/egress-host';
import { readHostRegistries } from '../../activities/egress/registries';
import { createHandsActivities } from '../../activities/hands/activities';
import { secretStore } from '../../activities/secrets/store';
import type { EgressPolicyInput } from '../../common/egress';
import { egressPolicySchema } from '../../common/egress';
import type { RunToolInput } from '../../common/hands';
import { handsFixture } from '../support/hands';
import { fetchCommand, hostAddress, NPM_PROJECT, startStandIn, type StandInServer } from '../support/egress';

const TOKEN = `reg-${randomUUID()}`;
const TOKEN_FORMS = [TOKEN, Buffer.from(TOKEN).toString('base64').replace(/=+$/, '')];

describe('egress proxy (real Docker, real proxy process)', () => {
  const ip = hostAddress();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-test-'));
  let egress: EgressHost;
  let fx: ReturnType<typeof handsFixture>;
  let hands: ReturnType<typeof createHandsActivities>;
  let allowed: StandInServer;
  let forbidden: StandInServer;
  let registry: StandInServer;
  let sessionId: string;

  const call = (command: string, policy: EgressPolicyInput, extra: Partial<RunToolInput> = {}) =>
    hands.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'bash',
      input: { command, timeout_ms: 120_000 },
      egress: egressPolicySchema.parse(policy),
      ...extra,
    });

  beforeAll(async () => {
    allowed = await startStandIn('allowed-host', ip);
    forbidden = await startStandIn('forbidden-host', ip);
    registry = await startStandIn('private-registry', ip, TOKEN);
    const host = await readHostRegistries(process.env);
    egress = new EgressHost({
      secrets: secretStore(new Map([['REG_TOKEN', TOKEN]])),
      env: { ...process.env, AGENT_EGRESS_DIR: root },
      warn: () => undefined,
      // The host's own registries, plus one on this host's loopback (a local registry mirror the
      // sandbox must not reach through the proxy).
      registries: { ...host, hosts: [...host.hosts, { host: 'localhost', port: allowed.port, from: 'test' }] },
    });
    fx = handsFixture({ egress });
    hands = createHandsActivities({ sandboxes: fx.sandboxes, egress, secrets: egress.secrets });
    sessionId = fx.sessionId('egress');
  });

  afterAll(async () => {
    await fx.cleanup();
    egress.shutdown();
    await Promise.all([allowed.close(), forbidden.close(), registry.close()]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('the registries policy lets `npm ci` install from the host-configured npm registry; none refuses it by name', async () => {
    const project = `mkdir -p /workspace/app && cd /workspace/app && rm -rf node_modules && cat > package.json <<'EOF'\n${NPM_PROJECT['package.json']}EOF\ncat > package-lock.json <<'EOF'\n${NPM_PROJECT['package-lock.json']}EOF\n`;
    const installed = await call(
      `${project}npm ci --no-audit --no-fund 2>&1 | tail -n 3; test -f node_modules/is-number/package.json`,
      'registries',
    );
    expect(installed.exitCode).toBe(0);
    expect(installed.content).toMatch(/added 1 package/);
    expect(installed.egress?.denied).toBe(0);
    expect(installed.egress?.hosts['registry.npmjs.org']?.allowed).toBeGreaterThan(0);
    expect(installed.egress?.bytesIn).toBeGreaterThan(1_000);

    const refused = await call(
      `${project}npm ci --no-audit --no-fund --fetch-retries=0 2>&1 | tail -n 3; test -d node_modules/is-number`,
      'none',
    );
    expect(refused.exitCode).not.toBe(0);
    expect(refused.content).toContain(
      "[egress refused: egress to registry.npmjs.org is not allowed by this task's policy (none): no host is allowed]",
    );
    expect(refused.egress).toMatchObject({ allowed: 0, hosts: { 'registry.npmjs.org': { allowed: 0 } } });
  });

  it('an allow-list reaches the allowed host only; loopback, link-local and the proxy itself are refused', async () => {
    const result = await call(
      [
        fetchCommand(`http://${ip}:${allowed.port}/ok`),
        fetchCommand(`http://${ip}:${forbidden.port}/secret`),
        fetchCommand('http://169.254.169.254/latest/meta-data/'),
      ].join('; '),
      { allow: [`${ip}:${allowed.port}`, '169.254.169.254'] },
    );
    const lines = result.content.split('\n');
    expect(lines[0]).toBe('200 allowed-host');
    expect(lines[1]).toBe(
      `403 egress to ${ip}:${forbidden.port} is not allowed by this task's policy (allow-list): allowed are ${ip}:${allowed.port}, 169.254.169.254`,
    );
    expect(lines[2]).toMatch(
      /^403 egress to 169\.254\.169\.254 is refused: it resolves to 169\.254\.169\.254, a loopback, link-local/,
    );
    expect(forbidden.seen).toEqual([]);
    expect(result.egress).toMatchObject({ requests: 3, allowed: 1, denied: 2 });

    // Under registries, a registry that resolves to this host's loopback is refused, and so is
    // everything addressed to the proxy (through the forwarder's port or its socket).
    const local = await call(
      [
        fetchCommand(`http://localhost:${allowed.port}/`, { forceProxy: true }),
        fetchCommand('http://127.0.0.1:3128/'),
        fetchCommand('http://127.0.0.1:3128/config'),
        `printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | timeout 5 python3 -c "import socket,sys;s=socket.socket(socket.AF_UNIX);s.connect('/run/agent-egress/proxy.sock');s.sendall(sys.stdin.buffer.read());print(s.recv(4096).decode().splitlines()[0])"`,
      ].join('; '),
      'registries',
    );
    const out = local.content.split('\n');
    expect(out[0]).toMatch(/^403 egress to localhost is refused: it resolves to (127\.0\.0\.1|::1), a loopback/);
    expect(out[1]).toBe('400 this is the sandbox egress proxy: it only forwards requests to allowed hosts');
    expect(out[2]).toBe('400 this is the sandbox egress proxy: it only forwards requests to allowed hosts');
    expect(out[3]).toBe('HTTP/1.1 400 Bad Request');
    expect(allowed.seen).toEqual(['GET /ok']);
    expect(local.egress).toMatchObject({ allowed: 0, denied: 4, hosts: { '(the egress proxy)': { denied: 3 } } });
  });

  it('the proxy adds a private registry token from the host store; the red team finds it nowhere in the sandbox', async () => {
    const entry = `${ip}:${registry.port}`;
    const policy = {
      allow: [entry],
      credentials: {
        [entry]: { header: 'Authorization', scheme: 'Bearer', secret: 'REG_TOKEN', upstream: 'http' as const },
      },
    };
    const fetched = await call(fetchCommand(`http://${entry}/pkg`), policy);
    expect(fetched.content.split('\n')[0]).toBe('200 private-registry');
    expect(registry.seen).toEqual(['GET /pkg authorized']);
    expect(fetched.egress).toMatchObject({ allowed: 1, denied: 0 });

    // A tunnel would bypass the header: refused with the way to do it.
    const tunnel = await call(fetchCommand(`https://${entry}/pkg`), policy);
    expect(tunnel.content).toContain(`egress to ${ip} goes through the proxy as plain http://${ip}/… requests`);

    const redTeam = await call(
      [
        'env',
        'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"',
        'cat /proc/*/cmdline 2>/dev/null | tr "\\0" " "',
        'ls -la /run/agent-egress /opt/agent-egress',
        'ls -la /opt/agent/bin',
        fetchCommand('http://127.0.0.1:3128/'),
        fetchCommand('http://127.0.0.1:3128/policy'),
      ].join('; echo; '),
      policy,
    );
    for (const form of TOKEN_FORMS) expect(redTeam.content).not.toContain(form);
    // Files the red team might have missed: everything the agent can read, and every process's memory it can see.
    // The pattern is split so that the command itself (its journal, its /proc cmdline) does not hold it.
    const half = (text: string) => [text.slice(0, 10), text.slice(10)];
    const [a1, a2] = half(TOKEN_FORMS[0]!);
    const [b1, b2] = half(TOKEN_FORMS[1]!);
    const sweep = await call(
      `printf '%s%s\n%s%s\n' '${a1}' '${a2}' '${b1}' '${b2}' > /tmp/patterns; ` +
        `grep -rlsa --exclude-dir=proc --exclude-dir=sys -f /tmp/patterns / | grep -v '^/tmp/patterns$' | head -5; ` +
        `grep -lsa -f /tmp/patterns /proc/*/environ /proc/*/cmdline | head -5; rm /tmp/patterns; echo swept`,
      'none',
    );
    expect(sweep.content).toBe('swept\n[exit code 0]');
    expect(JSON.stringify([fetched, tunnel, redTeam, sweep])).not.toContain(TOKEN);
  });

  it('a credential naming a secret the store does not hold fails the call, naming it, without running it', async () => {
    const entry = `${ip}:${registry.port}`;
    const failure = await call('touch /workspace/ran', {
      allow: [entry],
      credentials: { [entry]: { header: 'Authorization', secret: 'MISSING_TOKEN' } },
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'SecretNotFound', nonRetryable: true });
    expect((failure as Error).message).toContain(`the egress credential for ${entry} needs the secret "MISSING_TOKEN"`);
    expect((await call('test -e /workspace/ran; echo $?', 'none')).content).toBe('1\n[exit code 0]');
  });

  it('a token echoed by a tool is masked before the result is recorded', async () => {
    const other = await hands.runTool({
      sessionId,
      toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
      name: 'bash',
      input: { command: `echo "token=$(printf %s ${Buffer.from(TOKEN).toString('base64')} | base64 -d)"` },
    });
    expect(other.content).toBe('token=[secret REG_TOKEN]\n[exit code 0]');
  });

  it('a proxy that dies in the middle of a request fails the call retryably and is back for the next one', async () => {
    const policy = { allow: [`${ip}:${allowed.port}`] };
    const arrived = allowed.arrived('/hold');
    const running = call(fetchCommand(`http://${ip}:${allowed.port}/hold`), policy);
    await arrived;
    const pid = egress.proxyPid!;
    process.kill(pid, 'SIGKILL');
    const failure = await running.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('EgressProxyRestarted');
    expect((failure as ApplicationFailure).nonRetryable).toBe(false);
    allowed.release();

    const again = await call(fetchCommand(`http://${ip}:${allowed.port}/after`), policy);
    expect(again.content.split('\n')[0]).toBe('200 allowed-host');
    expect(egress.proxyPid).not.toBe(pid);
  });
});
