/**
 * The proxy supervisor with the real proxy process: a sandbox's repeated policy costs no round trip
 * to the proxy per tool call, and a changed one is not taken as served until the proxy confirms it.
 * The proxy process is stopped (SIGSTOP) so that any round trip could not be answered. A socket that
 * cannot be served fails its own call with the reason and leaves the proxy serving the others; a
 * proxy killed while a call waits fails that call, and the next one is answered by the new proxy.
 * A call that ends after the proxy's channel closed but before its exit was seen still learns of
 * the death (the two arrive in either order).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ChildProcess } from 'node:child_process';
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

  it('fails the call of a socket it cannot serve, and keeps serving the others', async () => {
    await supervisor.serve('sandbox-a', socket, NONE);
    const pid = supervisor.pid!;
    const missing = path.join(dir, 'no-such-dir', 'proxy.sock');
    await expect(supervisor.serve('sandbox-b', missing, NONE)).rejects.toThrow(`${missing}: listen E`);
    expect(supervisor.pid).toBe(pid);
    // The same sandbox, once its directory exists, is served; the other sandbox still is.
    fs.mkdirSync(path.dirname(missing));
    await supervisor.serve('sandbox-b', missing, NONE);
    expect(fs.existsSync(missing)).toBe(true);
    await supervisor.serve('sandbox-a', socket, ALLOW);
    expect(supervisor.pid).toBe(pid);
  });

  it('fails a call the proxy died before answering; the next call is answered by the new proxy', async () => {
    const pid = supervisor.pid!;
    process.kill(pid, 'SIGSTOP');
    const waiting = supervisor.serve('sandbox-a', socket, NONE);
    process.kill(pid, 'SIGKILL');
    await expect(waiting).rejects.toThrow('the egress proxy stopped (SIGKILL) before it served the socket');
    await supervisor.serve('sandbox-a', socket, ALLOW);
    await supervisor.serve('sandbox-a', socket, NONE);
    expect(supervisor.pid).not.toBe(pid);
    expect(supervisor.deaths).toBe(1);
  });

  it('a call that ends after the channel closed but before the exit was seen learns of the death', async () => {
    await supervisor.serve('sandbox-a', socket, NONE);
    const before = supervisor.deaths;
    // The supervisor's own process handle (private): closing the channel from this side is the one
    // way to have it closed, for certain, before the exit is seen. The proxy exits on it.
    const child = (supervisor as unknown as { child: ChildProcess }).child;
    child.disconnect();
    await supervisor.flush('sandbox-a');
    expect(supervisor.deaths).toBe(before + 1);
    await supervisor.serve('sandbox-a', socket, NONE);
    expect(supervisor.pid).not.toBe(child.pid);
  });
});
