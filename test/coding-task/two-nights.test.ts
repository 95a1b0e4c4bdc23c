/**
 * An overnight coding task end to end (real Temporal, real Docker, a local bare remote, the
 * scripted agent over the real SDK, the real `agent` command): a 3-feature spec goes from an empty
 * branch to all passing across two runs — the first started with `agent task start` and a
 * features-per-run budget of 2, the second by `agent schedule trigger`, resuming from the branch
 * without an initializer.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { CodingTaskResult } from '../../common/coding-task';
import { parseFeatureList } from '../../common/feature-list';
import { totalTokens } from '../../common/model-types';
import type { OperationResult } from '../../common/operation';
import { ledgerTotals } from '../../common/task-report';
import { PROJECT_ROOT } from '../../platform/paths';
import { testPlatform } from '../support/env';
import { remoteCommits, remoteFile, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

const run = promisify(execFile);
const AGENT = path.join(PROJECT_ROOT, 'bin', 'agent');

jest.setTimeout(600_000);

describe('codingTask over two runs', () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const agent = (...args: string[]) =>
    run(AGENT, args, {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: testPlatform().temporalAddress,
        TEMPORAL_NAMESPACE: testPlatform().namespace,
        AGENT_BRAIN_QUEUE: h.brainQueue,
        AGENT_HANDS_QUEUE: h.handsQueue,
      },
    });

  it('initializes, implements two features, then resumes and finishes the third', async () => {
    const branch = 'agent/textkit';
    const taskFlags = [
      '--git',
      h.remote.url,
      '--spec-path',
      'SPEC.md',
      '--verify',
      'npm test',
      '--features-per-run',
      '2',
    ];
    const night1 = `night-1-${process.pid}`;
    h.track(night1);
    const started = await agent('task', 'start', '--id', night1, '--branch', branch, ...taskFlags);
    expect(started.stdout).toContain(`task ${night1} accepted · branch ${branch}`);
    // Live progress: a line of the first feature's work (which of its phases a once-a-second poll
    // catches depends on how fast the machine is).
    expect(started.stdout).toMatch(/(feature|verifying|pushing) · slug \(attempt 1\)/);
    const first = await taskResult(h.temporal.client.workflow.getHandle(night1));
    expect(started.stdout).toContain(first.report.split('\n')[0]!);
    expect(first.state).toBe('completed');
    expect(first.reason).toBe('budget: features per run (2)');
    expect(first.initializer).toBe('ran');
    expect(first.features.map((f) => [f.id, f.passes])).toEqual([
      ['slug', true],
      ['words', true],
      ['title', false],
    ]);
    expect(remoteCommits(h.remote, branch).map((line) => line.slice(41))).toEqual([
      'Initialize the coding task: 3 features, init.sh, HANDOFF.md',
      'Feature slug: `textkit slug <text>` prints a URL slug of the text',
      'Feature words: `textkit words <text>` prints the number of words in the text',
    ]);
    expect(first.report).toContain('2 of 3 (2 this run)');
    // The report is also in the workspace volume (the container is gone, the volume stays).
    expect(first.reportPath).toBe(`/workspace/.agent/reports/${night1}.md`);
    const inVolume = execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '-v',
        `${first.workspaceVolume}:/workspace`,
        testPlatform().sandboxImage,
        'cat',
        first.reportPath!,
      ],
      { encoding: 'utf8' },
    );
    expect(inVolume).toBe(first.report);
    expect(first.report).toContain('`title` (no initializer: the feature list is on the branch)');

    const schedule = `nightly-${process.pid}`;
    let second: CodingTaskResult | undefined;
    await agent(
      'schedule',
      'create',
      schedule,
      '--cron',
      '0 1 1 1 *',
      '--timezone',
      'UTC',
      '--',
      ...taskFlags.slice(0, -2),
      '--branch',
      branch,
    );
    try {
      expect((await agent('schedule', 'ls')).stdout).toMatch(new RegExp(`${schedule}  active  "0 1 1 1 \\*" UTC`));
      const triggered = await agent('schedule', 'trigger', schedule);
      const night2 = /task (\S+) started/.exec(triggered.stdout)?.[1];
      expect(night2).toMatch(new RegExp(`^task-${schedule}-`));
      h.track(night2!);
      second = await taskResult(h.temporal.client.workflow.getHandle(night2!));
      // The morning report, then what the handoff saved against resuming (estimated from the operations).
      const printed = (await agent('report', night2!)).stdout;
      expect(printed.startsWith(second.report)).toBe(true);
      expect(printed).toMatch(/## Tokens\n\ncache hit \d+\.\d% of prompt tokens · [\d,]+ tokens · \$\d+\.\d{4}/);
      expect(printed).toMatch(
        /handoff against resuming: the same \d+ model turns of the operation carried in one growing conversation/,
      );
    } finally {
      await agent('schedule', 'delete', schedule);
    }
    if (!second) throw new Error('the scheduled run did not finish');
    expect(second.state).toBe('completed');
    expect(second.reason).toBe('all features pass');
    expect(second.initializer).toBe('not needed');
    expect(second.ledger.map((e) => e.kind)).toEqual(['feature']);
    const list = parseFeatureList(remoteFile(h.remote, branch, 'feature_list.json'));
    expect(list.ok && list.features.every((f) => f.passes)).toBe(true);
    const commits = remoteCommits(h.remote, branch);
    expect(commits).toHaveLength(4);
    expect(commits[3]).toContain('Feature title:');

    // The report's numbers are the ledger's, and the ledger's are the operations' own.
    for (const result of [first, second]) {
      const totals = ledgerTotals(result.ledger);
      expect(result.usage).toEqual(totals.usage);
      expect(result.report).toContain(`| tokens | ${totalTokens(totals.usage)} (`);
      expect(result.report).toContain(`| commits pushed | ${result.commits.length} |`);
      for (const entry of result.ledger) {
        const op = (await h.temporal.client.workflow.getHandle(entry.operationId).result()) as OperationResult;
        expect(op.usage).toEqual(entry.usage);
      }
    }
    expect(h.model.scriptErrors).toEqual([]);
  });
});
