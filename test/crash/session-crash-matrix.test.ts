/**
 * The crash matrix at session boundaries (`npm run test:crash -- session-crash-matrix`): the worker is
 * killed (SIGKILL) at every session boundary an uninterrupted run passes — a prompt accepted, a
 * follow-up queued, an operation started or ended, an approval requested or decided, the idle
 * sandbox removed — once per boundary, derived from the uninterrupted run's crash log; every third
 * (every one with CRASH_MATRIX_FULL=1) also kills the restarted worker at its first boundary. Each
 * run must accept both prompts exactly once (0 lost, 0 duplicated), run each `never` tool exactly
 * once, decide the approval once and end with the idle container removed. CRASH_MATRIX_ONLY=2,5 runs just those cases.
 * Cases run three at a time (CRASH_MATRIX_CONCURRENCY=N, 1 for one after another); the table and the
 * checks are in case order either way.
 */
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { crashMatrixConcurrency, runInPool } from '../support/scenario-pool';
import { connectTestTemporal, TestTemporal } from '../support/temporal';
import {
  isSessionBoundary,
  SESSION_EFFECTS,
  SessionCrashMatrix,
  sessionCrashScript,
  type SessionScenarioOutcome,
} from './session-crash-matrix';

jest.setTimeout(60 * 60 * 1000);

/** Cases run at once unless CRASH_MATRIX_CONCURRENCY says otherwise. */
const DEFAULT_CONCURRENCY = 3;

interface Row {
  case: number;
  point: string;
  recoveryCrash: boolean;
  outcome: string;
  lostPrompts: number;
  duplicatedPrompts: number;
  duplicatedEffects: number;
  approvals: number;
  seconds: number;
}

describe('session crash matrix', () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  let matrix: SessionCrashMatrix;
  let reference: SessionScenarioOutcome;
  let failed = false;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    model = await startScriptedModelServer({ script: sessionCrashScript() });
    matrix = new SessionCrashMatrix(temporal.client, model);
    reference = await matrix.run({ name: 'reference' });
  });
  afterAll(async () => {
    matrix?.cleanup(failed);
    await model?.stop();
    await temporal?.close();
  });

  const problemsOf = (outcome: SessionScenarioOutcome): string[] => {
    const duplicatedEffects = SESSION_EFFECTS.reduce(
      (sum, effect) => sum + Math.max(0, outcome.effects.filter((line) => line === effect).length - 1),
      0,
    );
    const missingEffects = SESSION_EFFECTS.filter((effect) => !outcome.effects.includes(effect));
    return [
      outcome.results.every((r) => r.state === 'completed') ? '' : `ended ${outcome.results.map((r) => r.state)}`,
      outcome.operations.length === 2 ? '' : `${outcome.operations.length} operations in the index`,
      outcome.operations.every((o) => o.state === 'completed')
        ? ''
        : `index: ${outcome.operations.map((o) => o.state)}`,
      outcome.promptsAccepted === 2 ? '' : `${outcome.promptsAccepted} prompts accepted`,
      outcome.approvalsDecided === 1 ? '' : `${outcome.approvalsDecided} approval decisions`,
      outcome.sandbox === 'removed' ? '' : `sandbox ${outcome.sandbox} at the end`,
      duplicatedEffects ? `${duplicatedEffects} duplicated effects` : '',
      missingEffects.length ? `effects missing: ${missingEffects.join(', ')}` : '',
    ].filter(Boolean);
  };

  it('the uninterrupted run passes every session boundary', () => {
    expect(problemsOf(reference)).toEqual([]);
    expect(reference.crashes).toBe(0);
    const names = reference.boundaries[0].filter(isSessionBoundary);
    for (const boundary of [
      'session: prompt accepted',
      'session: follow-up queued',
      'session: operation started',
      'session: operation ended',
      'workflow: approval requested',
      'workflow: approval decided',
      'session: sandbox removed',
    ]) {
      expect(names).toContain(boundary);
    }
  });

  it('survives a crash at every session boundary with no prompt lost and no effect repeated', async () => {
    // `<name>#<k>`: the k-th time the uninterrupted run reached each session boundary.
    const seen = new Map<string, number>();
    const points = reference.boundaries[0].filter(isSessionBoundary).map((name) => {
      const k = (seen.get(name) ?? 0) + 1;
      seen.set(name, k);
      return `${name}#${k}`;
    });
    const full = process.env.CRASH_MATRIX_FULL === '1';
    const only = process.env.CRASH_MATRIX_ONLY?.split(',').map(Number);
    const rows: Row[] = [];
    const failures: string[] = [];
    const started = Date.now();
    // Until every check below has passed, a failure (a scenario that threw included) keeps the logs.
    failed = true;
    const cases = points
      .map((point, i) => ({ n: i + 1, point, recoveryCrash: full || (i + 1) % 3 === 0 }))
      .filter(({ n }) => !only || only.includes(n));
    const concurrency = crashMatrixConcurrency(DEFAULT_CONCURRENCY);
    const outcomes = await runInPool(cases, concurrency, ({ n, point, recoveryCrash }) =>
      matrix.run({ name: `s${n}`, crashAtPoint: point, crashAgainOnRecovery: recoveryCrash }),
    );
    // Rows and checks in case order, whatever order the cases ended in.
    for (const [index, { n, point, recoveryCrash }] of cases.entries()) {
      const outcome = outcomes[index];
      const problems = [
        outcome.crashes < (recoveryCrash ? 2 : 1)
          ? `expected ${recoveryCrash ? 2 : 1} crashes, saw ${outcome.crashes} (${outcome.workers.join('; ')})`
          : '',
        ...problemsOf(outcome),
      ].filter(Boolean);
      rows.push({
        case: n,
        point,
        recoveryCrash,
        outcome: outcome.results.map((r) => r.state).join(', '),
        lostPrompts: Math.max(0, 2 - outcome.operations.filter((o) => o.state === 'completed').length),
        duplicatedPrompts: Math.max(0, outcome.promptsAccepted - 2),
        duplicatedEffects: SESSION_EFFECTS.reduce(
          (sum, effect) => sum + Math.max(0, outcome.effects.filter((line) => line === effect).length - 1),
          0,
        ),
        approvals: outcome.approvalsDecided,
        seconds: outcome.wallMs / 1000,
      });
      if (problems.length) failures.push(`case ${n} (${point}): ${problems.join('; ')}`);
    }
    console.log(
      [
        `session crash matrix: ${rows.length} session boundaries, ${rows.filter((r) => r.recoveryCrash).length} with a second crash during recovery, ${concurrency} at a time, ${((Date.now() - started) / 1000).toFixed(0)} s`,
        '| # | boundary | 2nd crash | outcome | lost prompts | duplicated prompts | duplicated effects | approvals decided | s |',
        '|---|---|---|---|---|---|---|---|---|',
        ...rows.map(
          (r) =>
            `| ${r.case} | ${r.point} | ${r.recoveryCrash ? 'yes' : ''} | ${r.outcome} | ${r.lostPrompts} | ${r.duplicatedPrompts} | ${r.duplicatedEffects} | ${r.approvals} | ${r.seconds.toFixed(1)} |`,
        ),
      ].join('\n'),
    );
    failed = failures.length > 0;
    expect(failures).toEqual([]);
    expect(rows.reduce((sum, r) => sum + r.lostPrompts + r.duplicatedPrompts + r.duplicatedEffects, 0)).toBe(0);
  });
});
