/**
 * Egress policies as input (every bad field named), the proxy's host and address rules, and the
 * registries read from this host's own configuration.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { classifyAddress, decideAddress, decideHost, type ResolvedEgress } from '../../activities/egress/proxy-rules';
import { readHostRegistries } from '../../activities/egress/registries';
import { parseAgentArgs } from '../../cli/args';
import { parseCodingTaskInput } from '../../common/coding-task';
import { parseEgressFlag } from '../../common/egress';
import { parseOperationInput } from '../../common/operation';

describe('egress policy input', () => {
  it('defaults to none for operations and registries for coding tasks', () => {
    const op = parseOperationInput({ goal: 'x' });
    expect(op.ok && op.value.egress).toBe('none');
    const task = parseCodingTaskInput({ repo: { kind: 'git', url: 'file:///tmp/r.git' }, spec: 'x' });
    expect(task.ok && task.value.egress).toBe('registries');
  });

  it('refuses allow-list entries that are not host names, naming the entry', () => {
    for (const bad of [
      'https://registry.example.com',
      'registry.example.com/path',
      '*.example.com',
      'a b',
      'host:99999',
      '',
    ]) {
      const parsed = parseOperationInput({ goal: 'x', egress: { allow: ['ok.example.com', bad] } });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toContain(`egress.allow.1: ${JSON.stringify(bad)} is not a host name`);
    }
    for (const good of ['registry.example.com', 'registry.example.com:8443', '10.1.2.3', '[::1]:80']) {
      expect(parseOperationInput({ goal: 'x', egress: { allow: [good] } }).ok).toBe(true);
    }
    const other = parseOperationInput({ goal: 'x', egress: 'everything' });
    expect(!other.ok && other.error).toMatch(/^egress: must be "none", "registries" or \{"allow"/);
  });

  it('credentials name a secret and an allowed host, never a token', () => {
    const parsed = parseCodingTaskInput({
      repo: { kind: 'git', url: 'file:///tmp/r.git' },
      spec: 'x',
      egress: {
        allow: ['npm.internal'],
        credentials: {
          'other.internal': { header: 'Authorization', secret: 'REG' },
          'npm.internal': { header: 'Host', secret: 'not a name' },
        },
      },
    });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error).toContain(
      'egress.credentials.other.internal: names a host that is not in allow (npm.internal)',
    );
    expect(parsed.error).toContain('egress.credentials.npm.internal.header: is a header the proxy sets itself');
    expect(parsed.error).toContain('egress.credentials.npm.internal.secret: must be a secret name');
  });

  it('--egress takes none, registries, a host list or JSON, and names what is wrong', () => {
    expect(parseEgressFlag('registries')).toEqual({ ok: true, value: 'registries' });
    expect(parseEgressFlag('a.example.com, b.example.com:8080')).toEqual({
      ok: true,
      value: { allow: ['a.example.com', 'b.example.com:8080'], registries: false },
    });
    expect(parseEgressFlag('{"allow":["x.example.com"],"registries":true}')).toMatchObject({ ok: true });
    expect(parseEgressFlag('http://x.example.com')).toEqual({
      ok: false,
      error:
        '--egress.allow.0: "http://x.example.com" is not a host name (use a name like registry.example.com or an IP address, optionally :port; no scheme, path or wildcard)',
    });
    expect(parseEgressFlag('{"allow":')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^--egress: not JSON/),
    });
    const run = parseAgentArgs(['run', '--egress', 'registries', 'do it']);
    expect(run.kind === 'run' && run.egress).toBe('registries');
    expect(() => parseAgentArgs(['run', '--egress', 'ftp://x', 'do it'])).toThrow(
      /^--egress\.allow\.0: "ftp:\/\/x" is not a host name/,
    );
    expect(() => parseAgentArgs(['task', 'start', '--repo', '/tmp', '--egress', 'a/b'])).toThrow(
      /^agent task start: --egress\.allow\.0: "a\/b" is not a host name/,
    );
  });
});

describe('egress rules', () => {
  const policy: ResolvedEgress = {
    label: 'allow-list and registries',
    allow: [{ host: 'npm.internal' }, { host: 'api.example.com', port: 8443 }],
    registries: [{ host: 'registry.npmjs.org' }],
    credentials: {},
  };

  it('allows listed hosts (and ports) only, and says which are allowed', () => {
    expect(decideHost(policy, 'npm.internal', 443)).toEqual({ allowed: true, explicit: true });
    expect(decideHost(policy, 'registry.npmjs.org', 443)).toEqual({ allowed: true, explicit: false });
    expect(decideHost(policy, 'api.example.com', 443)).toEqual({
      allowed: false,
      reason:
        "egress to api.example.com is not allowed by this task's policy (allow-list and registries): allowed are npm.internal, api.example.com:8443, registry.npmjs.org",
    });
  });

  it('never reaches local addresses; private ones only for hosts named explicitly', () => {
    for (const local of [
      '127.0.0.1',
      '127.1.2.3',
      '0.0.0.0',
      '169.254.169.254',
      '::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ])
      expect(classifyAddress(local)).toBe('local');
    for (const priv of ['10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', 'fd00::1'])
      expect(classifyAddress(priv)).toBe('private');
    for (const pub of ['104.16.0.1', '203.0.113.80', '2606:4700::1', '172.32.0.1'])
      expect(classifyAddress(pub)).toBe('public');
    expect(decideAddress('npm.internal', '10.0.0.5', true, 'allow-list').allowed).toBe(true);
    expect(decideAddress('registry.npmjs.org', '10.0.0.5', false, 'registries')).toEqual({
      allowed: false,
      reason:
        'egress to registry.npmjs.org is refused: it resolves to the private address 10.0.0.5, which the registries policy does not reach (name the host explicitly in the allow-list to reach an internal service)',
    });
    expect(decideAddress('npm.internal', '127.0.0.1', true, 'allow-list').allowed).toBe(false);
  });
});

describe("the host's registries", () => {
  it("come from the host's own npm and apt configuration, and the sandbox's npm is pointed at the same", async () => {
    const npmRegistry = execFileSync('npm', ['config', 'get', 'registry'], {
      encoding: 'utf8',
      cwd: os.tmpdir(),
    }).trim();
    const registries = await readHostRegistries(process.env);
    expect(registries.hosts).toContainEqual(
      expect.objectContaining({ host: new URL(npmRegistry).hostname, from: 'npm registry' }),
    );
    expect(registries.env).toContain(`NPM_CONFIG_REGISTRY=${npmRegistry}`);
    expect(registries.hosts.some((h) => h.from === 'apt')).toBe(true);
    // yarn defaults to a registry host of its own: the sandbox's is npm's.
    expect(registries.env).toEqual(
      expect.arrayContaining([`YARN_REGISTRY=${npmRegistry}`, `YARN_NPM_REGISTRY_SERVER=${npmRegistry}`]),
    );
  }, 60_000);

  it('are never taken for none when a tool does not answer: the read fails, naming the tool', async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'registries-bin-'));
    const savedPath = process.env.PATH;
    try {
      // A host whose only tool is an npm that never answers, then one that ends with an error.
      fs.writeFileSync(path.join(bin, 'npm'), '#!/bin/sh\nexec /bin/sleep 600\n', { mode: 0o755 });
      process.env.PATH = bin;
      await expect(readHostRegistries(process.env, { readLimitMs: 500 })).rejects.toThrow(
        /npm config list --json did not finish within 0\.5 s/,
      );
      fs.writeFileSync(path.join(bin, 'npm'), '#!/bin/sh\nexit 3\n', { mode: 0o755 });
      const registries = await readHostRegistries(process.env);
      expect(registries.hosts.filter((h) => h.from.startsWith('npm'))).toEqual([]);
      expect(registries.hosts.some((h) => h.from === 'apt')).toBe(true);
    } finally {
      process.env.PATH = savedPath;
      fs.rmSync(bin, { recursive: true, force: true });
    }
  }, 60_000);

  it("cargo's, when the host has cargo: crates.io's sparse index and the hosts its config.json names", async () => {
    let cargo = true;
    try {
      execFileSync('cargo', ['--version'], { stdio: 'ignore' });
    } catch {
      cargo = false;
    }
    const registries = await readHostRegistries(process.env);
    const fromCargo = registries.hosts.filter((h) => h.from === 'cargo').map((h) => h.host);
    if (!cargo) return expect(fromCargo).toEqual([]);
    expect(fromCargo).toContain('index.crates.io');
    const config = (await (await fetch('https://index.crates.io/config.json')).json()) as { dl: string };
    expect(registries.hosts.map((h) => h.host)).toContain(new URL(config.dl).hostname);
  }, 60_000);
});
