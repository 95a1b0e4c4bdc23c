/**
 * The coding task's pure contracts: the input schema (field-named errors), the feature list schema
 * and the integrity comparison, the goals the harness assembles, the morning report, and which
 * changed files count as tests.
 */
import { changedTestFiles } from '../../activities/repo/test-files';
import {
  defaultTaskBranch,
  isBranchName,
  parseCodingTaskInput,
  urlHasCredentials,
  type TaskReportData,
} from '../../common/coding-task';
import {
  checkNewFeatureList,
  compareFeatureList,
  describeViolation,
  featureListText,
  parseFeatureList,
  type Feature,
} from '../../common/feature-list';
import { featureGoal, FEATURE_HEADING, initializerGoal, INITIALIZER_HEADING } from '../../common/task-prompts';
import { ledgerTotals, renderTaskReport } from '../../common/task-report';

const FEATURES: Feature[] = [
  { id: 'slug', category: 'command', description: 'slug it', steps: ['run it'], verify: 'true', passes: true },
  { id: 'words', category: 'command', description: 'count words', steps: [], passes: false },
];

describe('coding task input', () => {
  it('accepts the documented example (docs/overnight-runs.md) and fills the defaults', () => {
    const parsed = parseCodingTaskInput({
      repo: { kind: 'git', url: 'file:///srv/git/textkit.git' },
      specPath: 'SPEC.md',
      verify: 'npm test',
      budget: { featuresPerRun: 2 },
    });
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        budget: { featuresPerRun: 2, maxTurnsPerFeature: 50, maxAttemptsPerFeature: 3 },
        verifyTimeoutMs: 600_000,
      },
    });
  });

  it.each([
    [{}, 'repo: '],
    [{ repo: { kind: 'local', path: 'relative/dir' } }, 'repo.path: must be an absolute path'],
    [{ repo: { kind: 'git', url: 'https://bob:s3cret@example.com/r.git' } }, 'repo.url: must not carry credentials'],
    [{ repo: { kind: 'git', url: 'file:///r' }, branch: 'bad..branch' }, 'branch: must be a valid git branch name'],
    [{ repo: { kind: 'git', url: 'file:///r' }, spec: 'a', specPath: 'b' }, 'specPath: give one of spec or specPath'],
    [{ repo: { kind: 'git', url: 'file:///r' }, specPath: '../etc/passwd' }, 'specPath: must be a path inside'],
    [{ repo: { kind: 'git', url: 'file:///r' }, budget: { featuresPerRun: 0 } }, 'budget.featuresPerRun:'],
    [{ repo: { kind: 'git', url: 'file:///r' }, budget: { maxCostUsd: 'lots' } }, 'budget.maxCostUsd:'],
    [{ repo: { kind: 'git', url: 'file:///r' }, colour: 'blue' }, 'colour: unknown field (not allowed)'],
  ])('rejects %j naming the field', (input, message) => {
    const parsed = parseCodingTaskInput(input);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.error).toContain(message);
  });

  it('knows branch names, credentials in URLs and the default branch', () => {
    expect(['agent/x', 'feature/a-b_c.1', 'main'].every(isBranchName)).toBe(true);
    expect(['-x', 'a..b', 'a/', 'a.lock', '.hidden', 'a b', 'a~1', 'x@{1}'].some(isBranchName)).toBe(false);
    expect(urlHasCredentials('https://token@github.com/o/r.git')).toBe(true);
    expect(urlHasCredentials('ssh://git@github.com/o/r.git')).toBe(false);
    expect(urlHasCredentials('ssh://git:pw@github.com/o/r.git')).toBe(true);
    expect(urlHasCredentials('git@github.com:o/r.git')).toBe(false);
    expect(defaultTaskBranch('task-nightly-2026-01-01T01:00:00Z')).toBe('agent/task-nightly-2026-01-01T01-00-00Z');
  });
});

describe('the feature list', () => {
  it('parses a valid list and writes it back canonically', () => {
    const text = featureListText(FEATURES);
    expect(parseFeatureList(text)).toEqual({ ok: true, features: FEATURES });
    expect(JSON.parse(text)[1]).toEqual({
      id: 'words',
      category: 'command',
      description: 'count words',
      steps: [],
      passes: false,
    });
  });

  it.each([
    ['{', 'feature_list.json: not valid JSON'],
    ['{}', 'must be a JSON array'],
    ['[]', 'the list is empty'],
    ['[{"id":"a","description":"x"}]', 'feature_list.json[0].category: '],
    ['[{"id":"a b","category":"c","description":"d","steps":[],"passes":false}]', 'feature_list.json[0].id: must be'],
    ['[{"id":"a..b","category":"c","description":"d","steps":[],"passes":false}]', 'feature_list.json[0].id: must be'],
    ['[{"id":"x.lock","category":"c","description":"d","steps":[],"passes":false}]', 'not ending in .lock'],
    ['[{"id":"a","category":"c","description":"d","steps":"x","passes":false}]', 'feature_list.json[0].steps: '],
    ['[{"id":"a","category":"c","description":"d","steps":[],"passes":false,"notes":1}]', 'unknown field "notes"'],
    [
      '[{"id":"a","category":"c","description":"d","steps":[],"passes":false},{"id":"a","category":"c","description":"d","steps":[],"passes":false}]',
      'feature_list.json[1].id: duplicate id "a"',
    ],
  ])('rejects %s naming the entry and field', (text, message) => {
    const parsed = parseFeatureList(text);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.error).toContain(message);
  });

  it('needs a verify command on every feature when the task has none', () => {
    expect(checkNewFeatureList(FEATURES, 'npm test')).toBeUndefined();
    expect(checkNewFeatureList(FEATURES, undefined)).toBe(
      'feature_list.json[1].verify: required, because the task has no verify command',
    );
  });

  it('finds every way an agent can change the list', () => {
    const record = FEATURES;
    expect(compareFeatureList(record, featureListText(record))).toEqual([]);
    expect(compareFeatureList(record, JSON.stringify(record))).toEqual([]); // formatting only
    expect(compareFeatureList(record, undefined)).toEqual([{ kind: 'file-missing' }]);
    expect(compareFeatureList(record, 'nope')[0]).toMatchObject({ kind: 'unparseable' });
    const flipped = record.map((f) => ({ ...f, passes: true }));
    expect(compareFeatureList(record, JSON.stringify(flipped))).toEqual([
      { kind: 'passes-changed', featureId: 'words', to: true },
    ]);
    expect(compareFeatureList(record, JSON.stringify([record[1]]))).toEqual([{ kind: 'deleted', featureId: 'slug' }]);
    expect(compareFeatureList(record, JSON.stringify([record[1], record[0]]))).toEqual([{ kind: 'reordered' }]);
    const reworded = [{ ...record[0], description: 'done', verify: 'exit 0' }, record[1]];
    expect(compareFeatureList(record, JSON.stringify(reworded))).toEqual([
      { kind: 'reworded', featureId: 'slug', fields: ['description', 'verify'] },
    ]);
    const added = [...record, { ...record[1], id: 'extra' }, record[0]];
    expect(compareFeatureList(record, JSON.stringify(added))).toEqual([
      { kind: 'added', featureId: 'slug' },
      { kind: 'added', featureId: 'extra' },
    ]);
    expect(describeViolation({ kind: 'passes-changed', featureId: 'words', to: true })).toBe(
      '`passes` of `words` was set to true by the agent',
    );
  });
});

describe('goals and the report', () => {
  it('builds a fresh context from the handoff, git, the feature and init.sh', () => {
    const goal = featureGoal({
      branch: 'agent/x',
      feature: FEATURES[1]!,
      attempt: 2,
      maxAttempts: 3,
      passing: 1,
      total: 2,
      taskVerify: 'npm test',
      snapshot: {
        handoff: '# Handoff\nslug done',
        initScript: 'npm test',
        gitLog: 'abc Feature slug',
        gitStatus: '',
        diffStat: '',
      },
      previousFailure: 'the check exited 1',
      corrections: ['feature_list.json was deleted: restored'],
    });
    expect(goal.startsWith(FEATURE_HEADING)).toBe(true);
    for (const part of [
      'id: words',
      'attempt 2 of 3',
      '# Handoff\nslug done',
      'abc Feature slug',
      '(clean)',
      '`npm test`',
      'the check exited 1',
      'feature_list.json was deleted: restored',
      'git wins',
    ]) {
      expect(goal).toContain(part);
    }
    const init = initializerGoal({ branch: 'agent/x', spec: { text: 'Build it.', truncated: false, path: 'SPEC.md' } });
    expect(init.startsWith(INITIALIZER_HEADING)).toBe(true);
    expect(init).toContain('every feature needs its own `verify` command');
  });

  it('renders the morning report from the ledger', () => {
    const usage = { input: 100, cacheWrite: 20, cacheRead: 300, output: 50 };
    const data: TaskReportData = {
      taskId: 'night-1',
      state: 'completed',
      reason: 'budget: features per run (1)',
      remote: 'file:///srv/r.git',
      branch: 'agent/x',
      initializer: 'ran',
      startCommit: 'a'.repeat(40),
      endCommit: 'b'.repeat(40),
      features: [
        {
          id: 'slug',
          description: 'slug it',
          passes: true,
          passedThisRun: true,
          attempts: 1,
          skipped: false,
          commit: 'b'.repeat(40),
        },
        {
          id: 'words',
          description: 'count',
          passes: false,
          passedThisRun: false,
          attempts: 3,
          skipped: true,
          lastError: 'exit 1',
        },
      ],
      commits: [
        { sha: 'c'.repeat(40), subject: 'Initialize' },
        { sha: 'b'.repeat(40), subject: 'Feature slug: slug it', featureId: 'slug' },
      ],
      unpushed: [],
      integrity: [
        {
          operationId: 'night-1.words.2',
          featureId: 'words',
          attempt: 2,
          violation: { kind: 'file-missing' },
          action: "restored from the harness's record",
        },
      ],
      ledger: [
        {
          operationId: 'night-1.init',
          kind: 'initializer',
          state: 'completed',
          reason: 'end_turn',
          turns: 4,
          usage,
          costUsd: 0.01,
        },
        {
          operationId: 'night-1.slug.1',
          kind: 'feature',
          featureId: 'slug',
          attempt: 1,
          state: 'completed',
          reason: 'end_turn',
          turns: 4,
          usage,
          costUsd: 0.02,
          changedTestFiles: ['package.json (modified)'],
        },
      ],
      usage: ledgerTotals([]).usage,
      costUsd: 0.03,
      wallMs: 125_000,
      sessionId: 'task-night-1',
      workspaceVolume: 'agent-ws-task-night-1',
    };
    data.usage = ledgerTotals(data.ledger).usage;
    const report = renderTaskReport(data);
    expect(report).toContain('| features passing | 1 of 2 (1 this run) |');
    expect(report).toContain('| skipped this run | 1 |');
    expect(report).toContain('| commits pushed | 2 |');
    expect(report).toContain('| tokens | 940 (input 200, cache write 40, cache read 600, output 100) |');
    expect(report).toContain('| cache hit | 71.4 % of prompt tokens |');
    expect(report).toContain('| cost | $0.0300 |');
    expect(report).toContain('| wall time | 2 min 5 s |');
    expect(report).toContain('- `words`: failed 3 attempts; last error: exit 1');
    expect(report).toContain('feature_list.json was deleted');
    expect(report).toContain('⚠ changed test files in the accepted work of `slug`: package.json (modified)');
    expect(report).toContain('with 1 feature left: `words` (no initializer');
  });

  it('flags existing test and verification files that a feature modified or deleted', () => {
    expect(
      changedTestFiles([
        { status: 'A', path: 'test/new.test.js' },
        { status: 'M', path: 'test/upper.test.js' },
        { status: 'D', path: 'spec/a_spec.rb' },
        { status: 'M', path: 'package.json' },
        { status: 'M', path: 'src/commands/slug.js' },
        { status: 'M', path: 'pkg/x_test.go' },
      ]),
    ).toEqual([
      'test/upper.test.js (modified)',
      'spec/a_spec.rb (deleted)',
      'package.json (modified)',
      'pkg/x_test.go (modified)',
    ]);
  });
});
