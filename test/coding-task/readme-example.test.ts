/**
 * The README's `temporal workflow start --type codingTask` example, run with the real temporal CLI
 * against the test server: its input (the remote swapped for a local bare repository, the hands on
 * this test's queue) completes with every feature passing.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from '../support/env';
import { remoteCommits, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

/** The `--input '…'` of the README's `temporal workflow start --type codingTask` command. */
function readmeExampleInput(): Record<string, unknown> {
  const readme = fs.readFileSync(path.join(PROJECT_ROOT, 'README.md'), 'utf8');
  const command = /temporal workflow start --type codingTask[^\n]*\\\n\s*--input '([^']+)'/.exec(readme);
  if (!command) throw new Error('README.md has no `temporal workflow start --type codingTask … --input` example');
  return JSON.parse(command[1]!) as Record<string, unknown>;
}

describe('the README example of codingTask', () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('completes when started with the temporal CLI', async () => {
    const example = readmeExampleInput();
    expect(example).toMatchObject({ repo: { kind: 'git', url: 'file:///tmp/textkit.git' }, specPath: 'SPEC.md' });
    const input = { ...example, repo: { kind: 'git', url: h.remote.url }, handsTaskQueue: h.handsQueue };
    const taskId = `readme-${process.pid}`;
    h.track(taskId);
    const { temporalCli, temporalAddress, namespace } = testPlatform();
    execFileSync(temporalCli, [
      'workflow',
      'start',
      '--address',
      temporalAddress,
      '--namespace',
      namespace,
      '--type',
      'codingTask',
      '--task-queue',
      h.brainQueue,
      '--workflow-id',
      taskId,
      '--input',
      JSON.stringify(input),
    ]);
    const result = await taskResult(h.temporal.client.workflow.getHandle(taskId));
    expect(result.state).toBe('completed');
    expect(result.reason).toBe('all features pass');
    expect(remoteCommits(h.remote, String(example.branch))).toHaveLength(4);
  });
});
