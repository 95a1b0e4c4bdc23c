/**
 * The `temporal workflow start --type codingTask` example of docs/overnight-runs.md, run with the real temporal CLI:
 * its input (the remote swapped for a local bare repository, the hands on this test's queue)
 * completes with every feature passing. The server here suggests continue-as-new after a few dozen
 * events, as a long night's history would: the task carries its record over (feature list, progress,
 * ledger, accepted commits) and repeats no step.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, startDevServer, type DevServer } from '../../platform/dev-server';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from '../support/env';
import { remoteCommits, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

/** The `--input '…'` of the documented `temporal workflow start --type codingTask` command. */
function documentedExampleInput(): Record<string, unknown> {
  const page = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'overnight-runs.md'), 'utf8');
  const command = /temporal workflow start --type codingTask[^\n]*\\\n\s*--input '([^']+)'/.exec(page);
  if (!command)
    throw new Error('docs/overnight-runs.md has no `temporal workflow start --type codingTask … --input` example');
  return JSON.parse(command[1]!) as Record<string, unknown>;
}

describe('the documented example of codingTask (docs/overnight-runs.md)', () => {
  let server: DevServer;
  let h: TaskHarness;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'task-readme-'));
  beforeAll(async () => {
    server = await startDevServer({
      cli: { path: testPlatform().temporalCli, source: 'env' },
      port: await freePort(),
      logFile: path.join(dir, 'server.log'),
      dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 },
    });
    h = await startTaskHarness({}, { address: server.address });
  });
  afterAll(async () => {
    await h?.close();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('completes when started with the temporal CLI, across continue-as-new', async () => {
    const example = documentedExampleInput();
    expect(example).toMatchObject({ repo: { kind: 'git', url: 'file:///tmp/textkit.git' }, specPath: 'SPEC.md' });
    const input = { ...example, repo: { kind: 'git', url: h.remote.url }, handsTaskQueue: h.handsQueue };
    const taskId = `readme-${process.pid}`;
    h.track(taskId);
    const started = execFileSync(
      testPlatform().temporalCli,
      [
        'workflow',
        'start',
        '--address',
        server.address,
        '--namespace',
        'default',
        '--type',
        'codingTask',
        '--task-queue',
        h.brainQueue,
        '--workflow-id',
        taskId,
        '--input',
        JSON.stringify(input),
      ],
      { encoding: 'utf8' },
    );
    const firstRunId = /RunId\s+(\S+)/.exec(started)?.[1];
    expect(firstRunId).toBeDefined();
    const handle = h.temporal.client.workflow.getHandle(taskId);
    const result = await taskResult(handle);
    expect(result.state).toBe('completed');
    expect(result.reason).toBe('all features pass');
    expect(result.ledger.map((e) => e.operationId.split('.').slice(1).join('.'))).toEqual([
      'init',
      'slug.1',
      'words.1',
      'title.1',
    ]);
    expect(remoteCommits(h.remote, String(example.branch))).toHaveLength(4);
    // It continued as new: the run that returned is not the first.
    expect((await handle.describe()).runId).not.toBe(firstRunId);
    expect((await handle.fetchHistory()).events?.length).toBeLessThan(120);
    expect(h.model.scriptErrors).toEqual([]);
  });
});
