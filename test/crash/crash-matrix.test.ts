/**
 * The crash matrix: the worker is killed (SIGKILL) at every effect boundary of a scripted operation
 * that uses every tool kind, once per boundary, derived mechanically from an uninterrupted run; a
 * supervisor restarts it and the operation must still end exactly once, with no `never` side effect
 * repeated, no steering lost, and the same transcript except for marked synthetic results. Every
 * third boundary (every one with CRASH_MATRIX_FULL=1) also kills the restarted worker at its first
 * boundary.
 *
 * By default one boundary of each kind runs (`representativeBoundaries`): the same boundary of
 * another tool with the same replay policy, or of a later model turn on the same side of the
 * steering, exercises the same recovery path. CRASH_MATRIX_FULL=1 runs every boundary.
 *
 * Scenarios run three at a time (CRASH_MATRIX_CONCURRENCY=N, 1 for one after another); the table
 * and the checks are in boundary order either way.
 */
import { replayPolicyOf } from '../../common/tools';
import { startScriptedModelServer, type ScriptedModelServer } from '../../scripted-model/server';
import { crashMatrixConcurrency, runInPool } from '../support/scenario-pool';
import { connectTestTemporal, TestTemporal } from '../support/temporal';
import {
  CrashMatrix,
  crashMatrixScript,
  EFFECTS,
  ScenarioOutcome,
  STEERING_TEXT,
  transcriptDifferences,
} from './crash-matrix';

jest.setTimeout(60 * 60 * 1000);

/** Scenarios run at once unless CRASH_MATRIX_CONCURRENCY says otherwise. */
const DEFAULT_CONCURRENCY = 3;

/**
 * The 1-based numbers of one boundary per kind: a boundary's kind is its label with the tool named by
 * its replay policy and the model turn by whether steering was accepted before it; an "activity
 * completed" boundary takes the kind of the boundary before it (the call it completes).
 */
export function representativeBoundaries(boundaries: string[]): number[] {
  const seen = new Set<string>();
  const picked: number[] = [];
  let steered = false;
  let previous = '';
  boundaries.forEach((label, index) => {
    if (label.startsWith('workflow: steering accepted')) steered = true;
    let kind = label
      .replace(/\(turn \d+\)/, `(${steered ? 'after' : 'before'} steering)`)
      .replace(/\((\w+) toolu_\w+\)/, (_, tool: string) => `(${replayPolicyOf(tool)})`);
    if (label.startsWith('activity completed: runTool') || label.startsWith('activity completed: modelStep'))
      kind = `${label} after ${previous}`;
    previous = kind;
    if (seen.has(kind)) return;
    seen.add(kind);
    picked.push(index + 1);
  });
  return picked;
}

interface Row {
  boundary: number;
  where: string;
  recoveryCrash: boolean;
  outcome: string;
  synthetic: number;
  duplicates: number;
  lost: number;
  seconds: number;
}

describe('crash matrix', () => {
  let temporal: TestTemporal;
  let model: ScriptedModelServer;
  let matrix: CrashMatrix;
  let reference: ScenarioOutcome;
  let failed = false;

  beforeAll(async () => {
    temporal = await connectTestTemporal();
    model = await startScriptedModelServer({ script: crashMatrixScript });
    matrix = new CrashMatrix(temporal.client, model);
    matrix.prepare({ name: 'b1', crashAt: 1, crashAgainOnRecovery: process.env.CRASH_MATRIX_FULL === '1' });
    reference = await matrix.run({ name: 'reference' });
  });
  afterAll(async () => {
    matrix?.cleanup(failed);
    await model?.stop();
    await temporal?.close();
  });

  const steeringCount = (outcome: ScenarioOutcome): number =>
    outcome.transcript
      .filter((m) => m.role === 'user' && Array.isArray(m.content))
      .flatMap((m) => m.content as Array<{ type: string; text?: string }>)
      .filter((b) => b.type === 'text' && b.text?.includes(STEERING_TEXT)).length;

  const duplicatesOf = (outcome: ScenarioOutcome): number =>
    EFFECTS.reduce((sum, effect) => sum + Math.max(0, outcome.effects.filter((line) => line === effect).length - 1), 0);

  it('the uninterrupted run completes and passes enough boundaries', () => {
    expect(reference.result.state).toBe('completed');
    expect(reference.crashes).toBe(0);
    expect(reference.effects).toEqual(EFFECTS);
    expect(steeringCount(reference)).toBe(1);
    expect(reference.boundaries[0].length).toBeGreaterThanOrEqual(25);
  });

  it('survives a crash at every boundary', async () => {
    const boundaries = reference.boundaries[0];
    const full = process.env.CRASH_MATRIX_FULL === '1';
    const rows: Row[] = [];
    const failures: string[] = [];
    const started = Date.now();
    // Until every check below has passed, a failure (a scenario that threw included) keeps the logs.
    failed = true;
    // CRASH_MATRIX_ONLY=3,17 runs just those boundaries (for investigating one).
    const only = process.env.CRASH_MATRIX_ONLY?.split(',').map(Number);
    const numbers = full || only ? boundaries.map((_, index) => index + 1) : representativeBoundaries(boundaries);
    const scenarios = numbers
      .filter((n) => !only || only.includes(n))
      .map((n) => ({ name: `b${n}`, crashAt: n, crashAgainOnRecovery: full || n % 3 === 0 }));
    const concurrency = crashMatrixConcurrency(DEFAULT_CONCURRENCY);
    const outcomes = await runInPool(scenarios, concurrency, (scenario, index) => {
      // The next scenario's first worker starts now and stands by (process start is most of a run's cost).
      if (scenarios[index + 1]) matrix.prepare(scenarios[index + 1]);
      return matrix.run(scenario);
    });
    // Rows and checks in boundary order, whatever order the scenarios ended in.
    for (const [index, scenario] of scenarios.entries()) {
      const outcome = outcomes[index];
      const n = scenario.crashAt;
      const recoveryCrash = scenario.crashAgainOnRecovery;
      const synthetic = outcome.transcript
        .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
        .filter((b) => b.type === 'tool_result' && JSON.stringify(b.content).includes('[interrupted:')).length;
      const duplicates = duplicatesOf(outcome);
      const lost = 1 - Math.min(1, steeringCount(outcome));
      rows.push({
        boundary: n,
        where: boundaries[n - 1],
        recoveryCrash,
        outcome: `${outcome.result.state} (${outcome.status.toLowerCase()})`,
        synthetic,
        duplicates,
        lost,
        seconds: outcome.wallMs / 1000,
      });
      const problems = [
        outcome.crashes < (recoveryCrash ? 2 : 1)
          ? `expected ${recoveryCrash ? 2 : 1} crashes, saw ${outcome.crashes} (${outcome.workers.join('; ')})`
          : '',
        outcome.boundaries[0].slice(0, n).join('|') !== boundaries.slice(0, n).join('|')
          ? 'boundaries before the crash differ from the reference'
          : '',
        outcome.result.state !== 'completed' || outcome.status !== 'COMPLETED'
          ? `ended ${outcome.result.state}/${outcome.status}`
          : '',
        duplicates ? `${duplicates} duplicated side effects` : '',
        lost ? 'steering lost' : '',
        steeringCount(outcome) > 1 ? 'steering entered twice' : '',
        ...transcriptDifferences(reference.transcript, outcome.transcript),
      ].filter(Boolean);
      if (problems.length) failures.push(`boundary ${n} (${boundaries[n - 1]}): ${problems.join('; ')}`);
    }
    console.log(
      [
        `crash matrix: ${rows.length} boundaries, ${rows.filter((r) => r.recoveryCrash).length} with a second crash during recovery, ${concurrency} at a time, ${((Date.now() - started) / 1000).toFixed(0)} s`,
        '| # | boundary | 2nd crash | outcome | synthetic results | duplicates | lost steering | s |',
        '|---|---|---|---|---|---|---|---|',
        ...rows.map(
          (r) =>
            `| ${r.boundary} | ${r.where} | ${r.recoveryCrash ? 'yes' : ''} | ${r.outcome} | ${r.synthetic} | ${r.duplicates} | ${r.lost} | ${r.seconds.toFixed(1)} |`,
        ),
      ].join('\n'),
    );
    failed = failures.length > 0;
    expect(failures).toEqual([]);
    expect(rows.reduce((sum, r) => sum + r.duplicates, 0)).toBe(0);
  });
});
