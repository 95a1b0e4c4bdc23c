/**
 * The bench's cluster scenario (`npm run bench -- --only cluster`) at the smoke size, in the cluster
 * stage (the cluster is running): both sides complete their operations, the cluster's two hands hosts
 * each run some, every worker process is reported, and the report renders the section. Here the
 * bench's own server is the cluster too (the stage has no dev server); `npm run bench` runs that
 * side on its dev server.
 */
import type { BenchContext } from '../../bench/context';
import { validateResults } from '../../bench/results';
import { renderMarkdown } from '../../bench/report';
import { connectTestBench, runSmokeSuite } from '../support/bench';

jest.setTimeout(600_000);

describe('the bench on the cluster (smoke profile)', () => {
  let ctx: BenchContext;
  beforeAll(async () => {
    ctx = await connectTestBench();
  });
  afterAll(async () => {
    await ctx.close();
  });

  it('runs the same load on one worker and on two brain workers with two hands hosts', async () => {
    const { results, failures } = await runSmokeSuite(ctx, ['cluster'], 'the cluster');
    expect(failures).toEqual([]);
    expect(validateResults(JSON.parse(JSON.stringify(results)))).toEqual([]);
    const c = results.cluster!;
    expect(c.shards).toBeGreaterThan(1);
    for (const side of [c.devServer, c.cluster]) {
      expect(side).toMatchObject({ completed: c.operations, failed: 0 });
      expect(side.stepsPerSecond).toBeGreaterThan(0);
      expect(side.operationMs.p95).toBeGreaterThanOrEqual(side.operationMs.median);
    }
    expect(c.devServer.workers.map((w) => w.role)).toEqual(['brain + hands']);
    expect(c.cluster.workers.map((w) => w.role)).toEqual(['brain-1', 'brain-2', 'hands host-a', 'hands host-b']);
    for (const worker of [...c.devServer.workers, ...c.cluster.workers]) expect(worker.peakRssMb).toBeGreaterThan(0);
    expect(Object.values(c.cluster.hosts).reduce((a, b) => a + b, 0)).toBe(c.operations);
    expect(renderMarkdown(results, 'latest.svg')).toContain('## 8. On a Temporal cluster');
  });
});
