/**
 * The proxy supervisor with the real proxy process: a sandbox's repeated policy costs no round trip
 * to the proxy per tool call, and a changed one is not taken as served until the proxy confirms it.
 * The proxy process is stopped (SIGSTOP) so that any round trip could not be answered.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProxySupervisor } from '../../activities/egress/proxy-supervisor';
import type { ResolvedEgress } from '../../activities/egress/proxy-rules';

const NONE: ResolvedEgress = { label: 'none', allow: [], registries: [], credentials: {} };
const ALLOW: ResolvedEgress = { ...NONE, label: 'allow-list', allow: [{ host: 'example.org', port: 443 }] };

describe('egress proxy supervisor', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'egress-supervisor-'));
  const socket = path.join(dir, 'proxy.sock');
  const supervisor = new ProxySupervisor();

  afterAll(() => {
    if (supervisor.pid) process.kill(supervisor.pid, 'SIGCONT');
    supervisor.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves a repeated policy without asking the proxy again; a changed one waits for the proxy', async () => {
    await supervisor.serve('sandbox-a', socket, NONE);
    expect(fs.existsSync(socket)).toBe(true);
    const pid = supervisor.pid!;
    process.kill(pid, 'SIGSTOP');
    try {
      // The same socket and policy (a new object, as every call resolves its own): no round trip.
      await supervisor.serve('sandbox-a', socket, { ...NONE });
      let changed = false;
      const change = supervisor.serve('sandbox-a', socket, ALLOW).then(() => (changed = true));
      // Nor is the old policy taken as served while the change is on its way.
      let again = false;
      const repeat = supervisor.serve('sandbox-a', socket, { ...NONE }).then(() => (again = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect({ changed, again }).toEqual({ changed: false, again: false });
      process.kill(pid, 'SIGCONT');
      await Promise.all([change, repeat]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(supervisor.pid).toBe(pid);
  });
});
