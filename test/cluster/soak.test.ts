/**
 * The chaos soak, three minutes of it (`npm run soak -- --minutes 3`, the same code), on the cluster
 * of `npm run cluster`: two brain workers and two hands hosts on two Docker engines under a steady
 * load of operations (approvals, hooks, aborts, a spent budget, egress), a session with two lanes
 * and a coding task, while the fault injector SIGKILLs brain and hands processes, sandbox
 * containers, the history service and an egress proxy, answers model requests 429 / 529 / 500 or
 * stalls them, and fills a workspace to its quota — every kind at least once (three minutes hold
 * about fifteen faults: the plan's rounds have every kind, and a kind that found no target is fired
 * again before the faults end). Then the work drains and is accounted for: nothing lost, no `never`
 * effect twice, the ledger equal to the model server's count, nothing left behind. The report is
 * written to `.data/test-artifacts/soak/`.
 *
 * What the soak meets depends on the machine; what is asserted does not: counts of outcomes, effects,
 * tokens and leftovers, never times.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runSoak } from '../../bench/soak/soak';
import { renderSoakMarkdown } from '../../bench/soak/report';
import { FAULT_KINDS } from '../../bench/soak/schedule';
import type { SoakResults } from '../../bench/soak/results';
import { DATA_DIR } from '../../platform/paths';
import { clusterLayout, devServerVersion, ensureServerBinaries } from '../../platform/temporal-cluster';
import { agentProcessArgs } from '../support/compiled-entries';
import { testPlatform } from '../support/env';

jest.setTimeout(1_800_000);

describe('the chaos soak, three minutes on the cluster', () => {
  let results: SoakResults;

  beforeAll(async () => {
    const layout = clusterLayout(await devServerVersion());
    if (testPlatform().temporalAddress !== layout.address)
      throw new Error(
        `this test runs on the cluster of \`npm run cluster\` (${layout.address}), not ${testPlatform().temporalAddress}: use npm run test:cluster`,
      );
    const out = path.join(DATA_DIR, 'test-artifacts', 'soak');
    fs.mkdirSync(out, { recursive: true });
    results = await runSoak({
      minutes: 3,
      seed: 'ci',
      concurrency: 6,
      cluster: { layout, binaries: await ensureServerBinaries(layout.version) },
      workflowBundlePath: testPlatform().workflowBundlePath,
      image: testPlatform().sandboxImage,
      agentArgs: agentProcessArgs(),
      dataDir: path.join(DATA_DIR, 'test', `soak-${process.pid}`),
      log: (line) => process.stdout.write(`[soak] ${line}\n`),
    });
    fs.writeFileSync(path.join(out, 'soak-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    fs.writeFileSync(path.join(out, 'soak-latest.md'), renderSoakMarkdown(results));
  });

  it('injects every kind of fault', () => {
    const injected = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, results.faults.byKind[kind].injected > 0]));
    expect(injected).toEqual(Object.fromEntries(FAULT_KINDS.map((kind) => [kind, true])));
  });

  it('accounts for every unit of work: accepted = completed + failed + aborted, none lost', () => {
    const { work } = results;
    expect(work.lostUnits).toEqual([]);
    expect({ accepted: work.accepted, lost: work.lost }).toEqual({ accepted: work.submitted, lost: 0 });
    expect(work.completed + work.failed + work.aborted).toBe(work.accepted);
    // Each kind of work ran.
    expect(Object.keys(work.byKind).sort()).toEqual(expect.arrayContaining(['op', 'session', 'task'].sort()));
  });

  it('ran no `never` effect twice, and no denied or over-budget call', () => {
    expect(results.effects.duplicates).toEqual([]);
    expect(results.effects.forbiddenRan).toEqual([]);
    expect(results.effects.neverEffects).toBeGreaterThan(0);
  });

  it('keeps the ledger exact: what the harness recorded is what the model server reported', () => {
    expect(results.ledger.mismatches).toEqual([]);
    expect(results.ledger.unattributedRequests).toBe(0);
    expect(results.ledger.exact).toBe(true);
  });

  it('leaves nothing behind, and no process died on its own', () => {
    expect(results.leaks).toMatchObject({
      containersLeftAfterEnd: [],
      afterRemoval: { containers: [], volumes: [], loopDevices: [], imageFiles: [] },
      workflowsRunning: [],
      orphanProcesses: [],
      total: 0,
    });
    expect(results.restarts.filter((restart) => !restart.cause.startsWith('fault '))).toEqual([]);
    expect(results.problems).toEqual([]);
  });
});
