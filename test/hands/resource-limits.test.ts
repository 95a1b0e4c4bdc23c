/**
 * A tool result hit by one of the sandbox's limits says which limit, its value and how to work within
 * it: the pid limit (a fork bomb of 3,000 background processes against the default 1,024), the
 * memory limit (an OOM kill), and the workspace's disk quota (ENOSPC). Real Docker, real limits.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createHandsActivities } from '../../activities/hands/activities';
import { DEFAULT_SANDBOX_LIMITS } from '../../activities/hands/sandbox-spec';
import { handsFixture } from '../support/hands';

const bash = (
  hands: ReturnType<typeof createHandsActivities>,
  sessionId: string,
  command: string,
  timeoutMs?: number,
) =>
  hands.runTool({
    sessionId,
    toolCallId: `toolu_${randomUUID().slice(0, 12)}`,
    name: 'bash',
    input: { command, ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) },
  });

describe('resource exhaustion reads clearly (real Docker)', () => {
  it('names the pid limit when a command starts 3,000 background processes against 1,024', async () => {
    const fx = handsFixture();
    try {
      expect(DEFAULT_SANDBOX_LIMITS.pids).toBe(1024);
      const hands = createHandsActivities({ sandboxes: fx.sandboxes });
      const sessionId = fx.sessionId('forkbomb');
      const result = await bash(hands, sessionId, 'for i in $(seq 3000); do sleep 60 & done; echo started', 15_000);
      expect(result.isError).toBe(true);
      expect(result.content).toContain(
        '[pid limit reached: this sandbox runs at most 1024 processes and threads at once',
      );
      expect(result.content).toMatch(/\(\d+ forks? (was|were) refused\); what it left running was stopped/);
      expect(result.content).toContain('Start fewer processes at a time');
      // The sandbox is usable again at once.
      expect((await bash(hands, sessionId, 'echo ok')).content).toBe('ok\n[exit code 0]');
    } finally {
      await fx.cleanup();
    }
  });

  it('names the memory limit when the kernel kills a process for memory', async () => {
    const fx = handsFixture({ limits: { memoryBytes: 256 * 1024 ** 2 } });
    try {
      const hands = createHandsActivities({ sandboxes: fx.sandboxes });
      const sessionId = fx.sessionId('oom');
      const result = await bash(hands, sessionId, 'python3 -c "x = bytearray(1024 * 1024 * 1024)"; echo "exit $?"');
      expect(result.content).toContain('exit 137');
      expect(result.content).toContain('[memory limit reached: this sandbox has 256 MiB of memory');
      expect(result.content).toContain('killed 1 process of this command');
      expect(result.content).toContain('run fewer jobs in parallel');
    } finally {
      await fx.cleanup();
    }
  });

  it('names the disk quota when a write fails with ENOSPC', async () => {
    const imageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-quota-notes-'));
    const fx = handsFixture({ quota: { sizeBytes: 64 * 1024 ** 2, imageDir } });
    try {
      const hands = createHandsActivities({ sandboxes: fx.sandboxes });
      const sessionId = fx.sessionId('enospc');
      const result = await bash(hands, sessionId, 'dd if=/dev/zero of=big bs=1M count=100 status=none');
      expect(result.isError).toBe(true);
      expect(result.content).toContain('No space left on device');
      expect(result.content).toMatch(/\[disk quota reached: \/workspace holds at most 64 MiB, \d+ \w+ free now;/);
      expect(result.content).toContain('delete build outputs, caches and dependencies you can reinstall');
    } finally {
      await fx.cleanup();
      fs.rmSync(imageDir, { recursive: true, force: true });
    }
  });
});
