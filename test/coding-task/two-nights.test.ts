/**
 * An overnight coding task end to end (real Temporal, real Docker, a local bare remote, the
 * scripted agent over the real SDK): a 3-feature spec goes from an empty branch to all passing
 * across two runs — the first with a features-per-run budget of 2, the second resuming from the
 * branch without an initializer.
 */
import { CODING_TASK_WORKFLOW_TYPE } from '../../common/coding-task';
import { parseFeatureList } from '../../common/feature-list';
import { totalTokens } from '../../common/model-types';
import { OPERATION_WORKFLOW_TYPE, type OperationResult } from '../../common/operation';
import { ledgerTotals } from '../../common/task-report';
import { remoteCommits, remoteFile, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

describe('codingTask over two runs', () => {
  let h: TaskHarness;
  beforeAll(async () => {
    h = await startTaskHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('initializes, implements two features, then resumes and finishes the third', async () => {
    const branch = 'agent/textkit';
    const input = { branch, specPath: 'SPEC.md', verify: 'npm test', budget: { featuresPerRun: 2 } };
    const first = await taskResult(await h.start(input, `night-1-${process.pid}`));
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
    expect(first.report).toContain('`title` (no initializer: the feature list is on the branch)');

    const second = await taskResult(await h.start(input, `night-2-${process.pid}`));
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
    expect(CODING_TASK_WORKFLOW_TYPE).toBe('codingTask');
    expect(OPERATION_WORKFLOW_TYPE).toBe('operation');
  });
});
