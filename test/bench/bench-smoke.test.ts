/**
 * The benchmark is not a test; this only checks that it still runs: the smallest profile of two
 * scenarios on the test server (real Temporal, Docker and scripted model), results with every field
 * of the sections that ran, and a report that renders. Plus the pure helpers.
 */
import Docker from 'dockerode';
import { parseBenchArgs } from '../../bench/args';
import { connectBench, type BenchContext } from '../../bench/context';
import { renderMarkdown, renderSvg } from '../../bench/report';
import { SCENARIOS, validateResults } from '../../bench/results';
import { outputSizes, printCommand } from '../../bench/scenarios/tokens';
import { median, p95, quantile } from '../../bench/stats';
import { runSuite } from '../../bench/suite';
import { testPlatform } from '../support/env';

describe('bench smoke run (overhead + history, smoke profile)', () => {
  let ctx: BenchContext;
  beforeAll(async () => {
    const platform = testPlatform();
    ctx = await connectBench(
      {
        address: platform.temporalAddress,
        namespace: platform.namespace,
        workflowBundlePath: platform.workflowBundlePath,
        docker: new Docker(),
        image: platform.sandboxImage,
      },
      () => undefined,
    );
  });
  afterAll(async () => {
    await ctx.close();
  });

  it('runs the scenarios and reports every field, as JSON and as a report', async () => {
    const { results, failures } = await runSuite(ctx, {
      profile: 'smoke',
      scenarios: ['overhead', 'history'],
      temporalDescription: 'the test server',
      dynamicConfig: {},
      temporalCli: testPlatform().temporalCli,
    });
    expect(failures).toEqual([]);
    const written = JSON.parse(JSON.stringify(results)) as unknown;
    expect(validateResults(written)).toEqual([]);

    expect(results.overhead?.latency0.latencyMs).toBe(0);
    expect(results.overhead?.latency200.latencyMs).toBe(200);
    // At 200 ms model latency a step cannot take less than the model's answer.
    expect(results.overhead!.latency200.plainMsPerStep).toBeGreaterThanOrEqual(200);
    expect(results.overhead!.latency200.durableMsPerStep).toBeGreaterThanOrEqual(200);
    expect(results.history?.points.map((point) => point.steps)).toEqual([2, 4]);
    for (const point of results.history!.points) {
      expect(point.events).toBeGreaterThan(point.steps * 6);
      expect(point.contentBytes).toBeGreaterThan(0);
      expect(point.contentBytes).toBeLessThan(point.bytes);
    }
    const verdicts = Object.fromEntries(results.targets.map((target) => [target.id, target.verdict]));
    expect(verdicts['overhead-ratio-200']).not.toBe('not run');
    expect(verdicts['history-flat']).not.toBe('not run');
    expect(verdicts['tokens-uncached']).toBe('not run');

    const markdown = renderMarkdown(results, 'latest.svg');
    expect(markdown).toContain('## Targets');
    expect(markdown).toContain('## 1. Overhead per step');
    expect(markdown).toContain('## 2. History per step');
    expect(markdown).toContain(results.machine.cpuModel);
    const svg = renderSvg(results);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('Overhead: ms per step');
  }, 90_000);
});

describe('bench helpers', () => {
  it('parses the command line', () => {
    expect(parseBenchArgs([], 'out')).toEqual({
      profile: 'full',
      scenarios: [...SCENARIOS],
      outDir: 'out',
      help: false,
    });
    expect(parseBenchArgs(['--quick', '--only', 'ttft,overhead', '--out=x'], 'out')).toEqual({
      profile: 'quick',
      scenarios: ['overhead', 'ttft'],
      outDir: 'x',
      help: false,
    });
    expect(parseBenchArgs(['--only', 'nope'], 'out')).toEqual({
      error: expect.stringContaining('unknown scenario nope'),
    });
    expect(parseBenchArgs(['--render', 'r.json'], 'out')).toMatchObject({ render: 'r.json', outDir: 'out' });
    expect(parseBenchArgs(['--fast'], 'out')).toEqual({ error: 'unknown argument --fast' });
  });

  it('computes quantiles by interpolation', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([1, 2, 3, 4])).toBe(2.5);
    expect(quantile([0, 10], 0.95)).toBeCloseTo(9.5);
    expect(p95([5])).toBe(5);
    expect(median([])).toBeNaN();
  });

  it('spreads the long outputs over the range, the same every run', () => {
    const sizes = outputSizes(60, 20 * 1024, 200 * 1024);
    expect(sizes).toEqual(outputSizes(60, 20 * 1024, 200 * 1024));
    expect(Math.min(...sizes)).toBe(20 * 1024);
    expect(Math.max(...sizes)).toBe(200 * 1024);
    expect(new Set(sizes).size).toBeGreaterThan(50);
    expect(printCommand(1000)).toContain('head -c 1000');
  });
});
