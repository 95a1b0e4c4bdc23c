/**
 * The harness verifies, not the model: a scripted agent that cheats in every way the issue names —
 * flips `passes` itself, rewords features and weakens their `verify` commands, deletes
 * feature_list.json, rewrites history with `git reset --hard` to before the run, edits the test
 * script — is corrected by the integrity guard and the harness's own verification, and the morning
 * report says what happened. Real Temporal, Docker, a local bare remote.
 */
import type { CodingTaskResult } from '../../common/coding-task';
import { hostQueueOf } from '../../common/hands-route';
import { parseFeatureList } from '../../common/feature-list';
import { TEXTKIT_FEATURES } from '../../scripted-model/scenarios/coding-task';
import { remoteCommits, remoteFile, startTaskHarness, taskResult, type TaskHarness } from '../support/coding-task';

jest.setTimeout(600_000);

describe('codingTask with a cheating agent', () => {
  let h: TaskHarness;
  let result: CodingTaskResult;
  const branch = 'agent/cheat';

  beforeAll(async () => {
    h = await startTaskHarness({
      cheats: {
        slug: { 1: ['flip-passes'] },
        words: { 1: ['reword-features', 'broken'], 2: ['reset-hard'], 3: ['edit-test-script'] },
        title: { 1: ['delete-feature-list'] },
      },
    });
    result = await taskResult(
      await h.start({ branch, specPath: 'SPEC.md', verify: 'npm test' }, `cheat-${process.pid}`),
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Every activity a workflow scheduled: its type and task queue. */
  async function scheduled(workflowId: string): Promise<Array<{ type: string; queue: string }>> {
    const history = await h.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    return (history.events ?? []).flatMap((event) => {
      const attributes = event.activityTaskScheduledEventAttributes;
      return attributes ? [{ type: attributes.activityType?.name ?? '', queue: attributes.taskQueue?.name ?? '' }] : [];
    });
  }

  const notes = (operation: string) =>
    result.integrity.filter((note) => note.operationId.endsWith(operation)).map((note) => note.violation);

  it("ends with every feature passing by the harness's verification, one commit each", () => {
    expect(result.state).toBe('completed');
    expect(result.reason).toBe('all features pass');
    expect(result.features.map((f) => [f.id, f.passes, f.attempts])).toEqual([
      ['slug', true, 1],
      ['words', true, 3],
      ['title', true, 1],
    ]);
    expect(result.ledger.map((e) => [e.operationId.split('.').slice(1).join('.'), e.verified ?? null])).toEqual([
      ['init', null],
      ['slug.1', true],
      ['words.1', false],
      ['words.2', null],
      ['words.3', true],
      ['title.1', true],
    ]);
    expect(remoteCommits(h.remote, branch)).toHaveLength(4);
    expect(h.model.scriptErrors).toEqual([]);
  });

  it('reverts passes the agent set itself', () => {
    expect(notes('.slug.1')).toEqual([
      { kind: 'passes-changed', featureId: 'slug', to: true },
      { kind: 'passes-changed', featureId: 'words', to: true },
      { kind: 'passes-changed', featureId: 'title', to: true },
    ]);
    const afterSlug = parseFeatureList(remoteFile(h.remote, `${branch}~2`, 'feature_list.json'));
    expect(afterSlug.ok && afterSlug.features.map((f) => f.passes)).toEqual([true, false, false]);
  });

  it('verifies with the commands recorded at initialization, not the reworded ones', () => {
    expect(notes('.words.1')).toEqual([
      { kind: 'reworded', featureId: 'slug', fields: ['verify'] },
      { kind: 'reworded', featureId: 'words', fields: ['verify'] },
      { kind: 'reworded', featureId: 'title', fields: ['description', 'verify'] },
    ]);
    const words1 = result.ledger.find((e) => e.operationId.endsWith('.words.1'))!;
    expect(words1.verifyError).toContain(`The harness's feature check \`${TEXTKIT_FEATURES.words!.verify}\` exited 1`);
    const final = parseFeatureList(remoteFile(h.remote, branch, 'feature_list.json'));
    expect(final.ok && final.features.map((f) => [f.verify, f.description])).toEqual(
      Object.values(TEXTKIT_FEATURES).map((f) => [f.verify, f.description]),
    );
  });

  it('restores history rewritten to before the run, and a deleted feature list', () => {
    const rewritten = notes('.words.2');
    expect(rewritten[0]).toMatchObject({ kind: 'history-rewritten' });
    expect(rewritten[0]).toMatchObject({ detail: expect.stringContaining('no longer contained the accepted commit') });
    expect(notes('.title.1')).toEqual([{ kind: 'file-missing' }]);
    expect(result.report).toContain('history rewritten');
    expect(result.report).toContain('feature_list.json was deleted');
  });

  it("runs every repository and sandbox call, its operations' too, on the hands host it claimed first", async () => {
    const brainActivities = new Set(['modelStep', 'compactContext', 'probePendingActivity', 'publishLiveEvents']);
    const task = await scheduled(result.taskId);
    expect(task[0]).toEqual({ type: 'claimSandboxHost', queue: h.handsQueue });
    const hostQueue = task.find((call) => call.type === 'prepareRepository')!.queue;
    expect(hostQueue.startsWith(hostQueueOf(h.handsQueue, ''))).toBe(true);
    const hands = [...task.slice(1)];
    for (const entry of result.ledger) hands.push(...(await scheduled(entry.operationId)));
    const handsCalls = hands.filter((call) => !brainActivities.has(call.type));
    expect(handsCalls.map((call) => call.type)).toEqual(
      expect.arrayContaining(['prepareRepository', 'runTool', 'verifyWorkspace']),
    );
    expect(handsCalls.filter((call) => call.queue !== hostQueue)).toEqual([]);
  });

  it('flags the edited test script in the report', () => {
    const words3 = result.ledger.find((e) => e.operationId.endsWith('.words.3'))!;
    expect(words3.changedTestFiles).toEqual(['package.json (modified)']);
    expect(result.report).toContain('⚠ changed test files in the accepted work of `words`: package.json (modified)');
  });
});
