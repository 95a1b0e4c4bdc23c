/**
 * The executor pool's bookkeeping when a container stops while the session's executor starts: the
 * command that asked gets the container's error, and forgetting the session meanwhile (its container
 * is being replaced or removed) leaves no unhandled rejection — one in a hands worker is a failure
 * of whatever runs next (CI saw a test fail on it).
 */
import type { Duplex } from 'node:stream';
import { SandboxError } from '../../activities/hands/docker-calls';
import { SandboxExecutors, type ExecutorHost } from '../../activities/hands/executor/pool';

describe('executor pool', () => {
  it('a start that fails after the session was forgotten rejects for its caller only', async () => {
    let stop: (err: Error) => void = () => undefined;
    const host: ExecutorHost = {
      open: () => new Promise<Duplex>((_, reject) => (stop = reject)),
      demux: () => undefined,
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const pool = new SandboxExecutors(host);
      const acquiring = pool.acquire('session-a');
      pool.forget('session-a');
      stop(new SandboxError('lost', 'the sandbox container is not running (stopped)'));
      await expect(acquiring).rejects.toMatchObject({ kind: 'lost' });
      // Unhandled rejections are reported once the microtasks of this turn have run.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
