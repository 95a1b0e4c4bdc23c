/**
 * When a lazy heartbeat (`sendNow: false`) writes its first heartbeat: half a second into an
 * activity that began on time, at once when the activity began late (the worker is behind and the
 * attempt's heartbeat timeout has been running). Before it, new details wait for it unless flushed.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { Heartbeat } from '../../activities/heartbeat';

async function heartbeatsAtStart(scheduledAgoMs: number): Promise<unknown[]> {
  const env = new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() - scheduledAgoMs });
  const sent: unknown[] = [];
  env.on('heartbeat', (details: unknown) => sent.push(details));
  await env.run(async () => {
    const heartbeat = new Heartbeat(Context.current(), 60_000, { stage: 'start' }, false);
    heartbeat.stop();
  });
  return sent;
}

/** Runs `body` in an activity that began on time, under fake timers; `sent` collects its heartbeats. */
async function onTime(body: (sent: unknown[]) => void): Promise<void> {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  try {
    const env = new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() });
    const sent: unknown[] = [];
    env.on('heartbeat', (details: unknown) => sent.push(details));
    await env.run(async () => body(sent));
  } finally {
    jest.useRealTimers();
  }
}

describe('lazy heartbeats', () => {
  it('send nothing at the start of an activity that began on time', async () => {
    expect(await heartbeatsAtStart(0)).toEqual([]);
  });

  it('send the first heartbeat after half a second, then every interval', async () => {
    await onTime((sent) => {
      const heartbeat = new Heartbeat(Context.current(), 1_000, { stage: 'start' }, false);
      jest.advanceTimersByTime(499);
      expect(sent).toHaveLength(0);
      jest.advanceTimersByTime(1);
      expect(sent).toEqual([{ stage: 'start' }]);
      heartbeat.merge({ stage: 'running' }, false);
      jest.advanceTimersByTime(500);
      expect(sent).toEqual([{ stage: 'start' }, { stage: 'running' }]);
      heartbeat.stop();
      jest.advanceTimersByTime(5_000);
      expect(sent).toHaveLength(2);
    });
  });

  it('hold the details set before the first heartbeat, which sends the latest', async () => {
    await onTime((sent) => {
      const heartbeat = new Heartbeat(Context.current(), 1_000, { usage: 0 }, false);
      heartbeat.set({ usage: 1 });
      heartbeat.set({ usage: 2 });
      expect(sent).toEqual([]);
      jest.advanceTimersByTime(500);
      expect(sent).toEqual([{ usage: 2 }]);
      heartbeat.set({ usage: 3 });
      expect(sent).toEqual([{ usage: 2 }, { usage: 3 }]);
      heartbeat.stop();
    });
  });

  it('flush sends the details at once before the first heartbeat, and nothing more after it', async () => {
    await onTime((sent) => {
      const heartbeat = new Heartbeat(Context.current(), 1_000, { usage: 0 }, false);
      heartbeat.set({ usage: 5 });
      heartbeat.flush();
      expect(sent).toEqual([{ usage: 5 }]);
      heartbeat.flush();
      expect(sent).toEqual([{ usage: 5 }]);
      heartbeat.set({ usage: 6 });
      expect(sent).toEqual([{ usage: 5 }, { usage: 6 }]);
      heartbeat.stop();
    });
  });

  it('send the first heartbeat at once when the activity began long after its attempt was scheduled', async () => {
    expect(await heartbeatsAtStart(2_000)).toEqual([{ stage: 'start' }]);
  });
});
