/**
 * Schedules of coding tasks on the real Temporal server (created with `agent schedule create`, a
 * real process): while a run still goes, the server skips the next one (overlap SKIP) and `agent
 * schedule trigger` says so; a run that fails pauses its schedule, and `agent schedule ls` shows it;
 * a run missed while the server was down starts when it is back if still within the catch-up window,
 * and is given up past it.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { taskStatusQuery } from '../../common/coding-task';
import { sendUntilAdmitted } from '../../client/update-admission';
import { abortUpdate } from '../../common/operation';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from '../support/env';
import { waitFor } from '../support/operation-harness';
import { makeInitializedTextkitRemote, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

const exec = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');

describe('schedules of coding tasks on the real server', () => {
  let h: TaskHarness;
  const schedules: string[] = [];
  const env = () => ({
    ...process.env,
    TEMPORAL_ADDRESS: testPlatform().temporalAddress,
    TEMPORAL_NAMESPACE: testPlatform().namespace,
    AGENT_BRAIN_QUEUE: h.brainQueue,
    AGENT_HANDS_QUEUE: h.handsQueue,
  });
  const agent = (...args: string[]) => exec(AGENT, args, { env: env() });
  const create = async (name: string, ...taskFlags: string[]) => {
    schedules.push(name);
    await agent('schedule', 'create', name, '--cron', '0 1 1 1 *', '--', '--git', h.remote.url, ...taskFlags);
    return h.temporal.client.schedule.getHandle(name);
  };
  const triggered = async (name: string): Promise<string> => {
    const { stdout } = await agent('schedule', 'trigger', name);
    const taskId = /task (\S+) started/.exec(stdout)?.[1];
    if (!taskId) throw new Error(`agent schedule trigger ${name} started nothing: ${stdout}`);
    h.track(taskId);
    return taskId;
  };

  beforeAll(async () => {
    h = await startTaskHarness({}, { remote: makeInitializedTextkitRemote });
  });
  afterAll(async () => {
    for (const name of schedules) {
      await h.temporal.client.schedule
        .getHandle(name)
        .delete()
        .catch(() => undefined);
    }
    await h?.close();
  });

  it('skips a run while the last one still goes', async () => {
    const name = `overlap-${randomUUID().slice(0, 6)}`;
    // Each run waits for a person once its token budget is spent: it goes on until someone decides.
    const schedule = await create(name, '--verify', 'npm test', '--max-tokens', '100', '--ask-over-budget');
    const first = await triggered(name);
    const run = h.temporal.client.workflow.getHandle(first);
    await waitFor(async () => (await run.query(taskStatusQuery)).waitingApproval, 'the first run to wait');

    // The server's own policy: a trigger while the run goes is skipped.
    await schedule.trigger(ScheduleOverlapPolicy.SKIP);
    const skipped = await waitFor(async () => {
      const described = await schedule.describe();
      return described.info.numActionsSkippedOverlap > 0 ? described : undefined;
    }, 'the server to skip the overlapping run');
    expect(skipped.info.runningActions.map((action) => action.workflow.workflowId)).toEqual([first]);
    expect(skipped.info.recentActions.map((action) => action.action.workflow.workflowId)).toEqual([first]);
    // The command says so without asking the server to start one.
    const refused = await agent('schedule', 'trigger', name).catch((err: { code: number; stderr: string }) => err);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr.trim()).toBe(
      `schedule ${name}: a run is still going (${first}); not starting another`,
    );

    await sendUntilAdmitted((updateId) =>
      run.executeUpdate(abortUpdate, { args: [{ reason: 'test done' }], updateId }),
    );
    expect((await taskResult(run)).state).toBe('aborted');
  });

  it('pauses the schedule when a run fails', async () => {
    const name = `pause-${randomUUID().slice(0, 6)}`;
    // A ref the remote does not have: the run fails as it prepares the repository.
    const schedule = await create(name, '--ref', 'no-such-ref');
    const taskId = await triggered(name);
    const result = await taskResult(h.temporal.client.workflow.getHandle(taskId));
    expect(result.state).toBe('failed');
    expect(result.reason).toContain('RepositoryRefNotFound: repo.ref no-such-ref');
    const paused = await waitFor(async () => {
      const described = await schedule.describe();
      return described.state.paused ? described : undefined;
    }, 'the schedule to pause');
    expect(paused.state.note).toBeTruthy();
    expect((await agent('schedule', 'ls')).stdout).toMatch(new RegExp(`^${name}  paused  `, 'm'));
  });

  it('catches up a run missed while the server was down within the catch-up window, and only then', async () => {
    // A server of its own, restarted on its SQLite file; nothing needs to run the tasks it starts.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-schedule-catchup-'));
    const port = await freePort();
    const start = () =>
      startDevServer({
        cli: { path: testPlatform().temporalCli, source: 'env' },
        port,
        dbFile: path.join(dir, 'dev.sqlite'),
        logFile: path.join(dir, 'server.log'),
      });
    let server: DevServer = await start();
    const client = new Client({ connection: await Connection.connect({ address: server.address }) });
    const on = (...args: string[]) =>
      exec(AGENT, args, { env: { ...env(), TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default' } });
    try {
      // Every minute; created early in a minute so that its next run comes while the server is down.
      if (new Date().getUTCSeconds() > 40) await sleepUntilNextMinute(1_000);
      const task = ['--', '--git', 'file:///srv/git/never-cloned.git', '--spec-path', 'SPEC.md'];
      await on('schedule', 'create', 'late-ok', '--cron', '* * * * *', '--catchup-window', '1h', ...task);
      await on('schedule', 'create', 'late-missed', '--cron', '* * * * *', '--catchup-window', '10s', ...task);
      const missedAt = (await client.schedule.getHandle('late-ok').describe()).info.nextActionTimes[0]!;
      await server.kill();
      // The server must be down when the run is due and stay down past the short window: real time
      // has to pass here, nothing else can stand for it.
      await sleepUntil(missedAt.getTime() + 20_000);
      server = await start();

      const caughtUp = await waitFor(async () => {
        const info = (await client.schedule.getHandle('late-ok').describe()).info;
        return info.recentActions.find((action) => action.scheduledAt.getTime() === missedAt.getTime());
      }, 'the missed run to be caught up');
      expect(caughtUp.takenAt.getTime()).toBeGreaterThan(missedAt.getTime() + 20_000);
      const missed = await waitFor(async () => {
        const info = (await client.schedule.getHandle('late-missed').describe()).info;
        return info.numActionsMissedCatchupWindow > 0 ? info : undefined;
      }, 'the run past the short window to be given up');
      expect(missed.recentActions.map((action) => action.scheduledAt.getTime())).not.toContain(missedAt.getTime());
    } finally {
      await client.connection.close();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function sleepUntil(at: number): Promise<void> {
  const wait = at - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

function sleepUntilNextMinute(extraMs: number): Promise<void> {
  const now = Date.now();
  return sleepUntil(now - (now % 60_000) + 60_000 + extraMs);
}
