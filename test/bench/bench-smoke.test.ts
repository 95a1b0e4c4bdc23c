/**
 * The benchmark is not a test; this only checks that it still runs: the smallest profile of three
 * scenarios on the test server (real Temporal, Docker and scripted model), results with every field
 * of the sections that ran, and a report that renders. Plus the pure helpers.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { moduleOf, summarizeCpuProfiles } from '../../bench/cpu-profile';
import { buildStepTimes } from '../../bench/scenarios/environment';
import { overheadSegments } from '../../bench/scenarios/overhead';
import { PROJECT_ROOT } from '../../platform/paths';
import { parseBenchArgs } from '../../bench/args';
import type { BenchContext } from '../../bench/context';
import { renderMarkdown, renderSvg } from '../../bench/report';
import { SCENARIOS, validateResults } from '../../bench/results';
import { outputSizes, printCommand } from '../../bench/scenarios/tokens';
import { median, p95, quantile } from '../../bench/stats';
import { latencyNote } from '../../bench/suite';
import type { OverheadResult } from '../../bench/results';
import { connectTestBench, runSmokeSuite } from '../support/bench';

describe('bench smoke runs (smoke profile)', () => {
  let ctx: BenchContext;
  beforeAll(async () => {
    ctx = await connectTestBench();
  });
  afterAll(async () => {
    await ctx.close();
  });

  it('runs the scenarios and reports every field, as JSON and as a report', async () => {
    const { results, failures } = await runSmokeSuite(ctx, ['floor', 'overhead', 'history'], 'the test server');
    expect(failures).toEqual([]);
    const written = JSON.parse(JSON.stringify(results)) as unknown;
    expect(validateResults(written)).toEqual([]);

    expect(results.overhead?.latency0.latencyMs).toBe(0);
    expect(results.overhead?.latency200.latencyMs).toBe(200);
    expect(results.overhead?.latency500.latencyMs).toBe(500);
    // At 200 ms model latency a step cannot take less than the model's answer.
    expect(results.overhead!.latency200.plainMsPerStep).toBeGreaterThanOrEqual(200);
    expect(results.overhead!.latency200.durableMsPerStep).toBeGreaterThanOrEqual(200);
    // The worker without stack traces ran its own steps and workflow tasks.
    const traces = results.overhead!.stackTracesOff!;
    expect(traces.samples).toBeGreaterThan(0);
    expect(traces.offMsPerStep).toBeGreaterThan(0);
    expect(traces.workflowTaskOffMs).toBeGreaterThan(0);
    expect(results.history?.points.map((point) => point.steps)).toEqual([2, 4]);
    for (const point of results.history!.points) {
      expect(point.events).toBeGreaterThan(point.steps * 6);
      expect(point.contentBytes).toBeGreaterThan(0);
      expect(point.contentBytes).toBeLessThan(point.bytes);
    }
    // Temporal's floor ran on the same server: per step, at once, and the overhead target is relative to it.
    const floor = results.floor!;
    expect(floor.samples).toBe(floor.runs * (floor.stepsPerRun - 1));
    expect(floor.msPerStep).toBeGreaterThan(0);
    expect(floor.stepsPerSecond).toBeGreaterThan(0);
    expect(floor.cpuMsPerStep!.worker).toBeGreaterThan(0);
    expect(results.targets.find((target) => target.id === 'overhead-added-0')?.target).toContain("the floor's step");
    const verdicts = Object.fromEntries(results.targets.map((target) => [target.id, target.verdict]));
    expect(verdicts['overhead-ratio-500']).not.toBe('not run');
    expect(verdicts['history-flat']).not.toBe('not run');
    expect(verdicts['tokens-uncached']).toBe('not run');

    const markdown = renderMarkdown(results, 'latest.svg');
    expect(markdown).toContain('## Targets');
    expect(markdown).toContain("## 0. Temporal's floor");
    expect(markdown).toContain('## 1. Overhead per step');
    expect(markdown).toContain('AGENT_WORKFLOW_STACK_TRACES=off');
    expect(markdown).toContain('## 2. History per step');
    expect(markdown).toContain(results.machine.cpuModel);
    const svg = renderSvg(results);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('Overhead: ms per step');
    // The durable harness runs in worker processes of its own (one per variant), which take a while to
    // start on a busy machine: about a minute here, three times that on a slower machine of the same kind.
  }, 600_000);

  it('measures the tokens and the continue-the-work scenarios, and says where the cache misses come from', async () => {
    const { results, failures } = await runSmokeSuite(ctx, ['tokens', 'continue'], 'the test server');
    expect(failures).toEqual([]);
    expect(validateResults(JSON.parse(JSON.stringify(results)))).toEqual([]);
    const t = results.tokens!;
    // Every prompt token not read from the cache has one cause, request by request.
    for (const way of [t.naive, t.cachedFullOutput, t.spillOnly, t.spillEditing, t.harness]) {
      const causes = Object.values(way.notRead).reduce((sum, value) => sum + value, 0);
      expect(causes).toBe(way.uncachedInput + way.cacheWrite);
    }
    expect(t.harnessRequests).toHaveLength(t.harness.requests);
    expect(t.harnessRequests[0]).toMatchObject({ index: 1, kind: 'turn', cacheRead: 0 });
    expect(t.naive.notRead.tail).toBeGreaterThan(0);

    const c = results.continue!;
    expect(c.firstHalf).toBe(2);
    // Resuming takes over more than the (smoke) window; the harness compacts it (reduced) and stays
    // inside it with no refused request; the handoff runs one operation per remaining feature.
    expect(c.takenOverTokens).toBeGreaterThan(c.windowTokens);
    expect(c.transcriptTokens).toBeGreaterThan(c.takenOverTokens);
    expect(c.resume).toMatchObject({ operations: 1, compactions: 0, rejectedRequests: 0 });
    expect(c.resume.notRead.start).toBeGreaterThan(0.9 * c.takenOverTokens);
    expect(c.resumeCompaction.compactions).toBeGreaterThanOrEqual(1);
    expect(c.resumeCompaction).toMatchObject({ rejectedRequests: 0, overWindowRequests: 0 });
    expect(c.handoff).toMatchObject({ operations: 2, compactions: 0, rejectedRequests: 0 });
    expect(c.handoffVsResume.cost).toBeCloseTo(c.handoff.costUsd / c.resume.costUsd, 3);
    // A switch inside the long context writes the whole prefix again; at a boundary only a small one.
    expect(c.modelSwitch.inside.otherModel).toMatchObject({
      cacheRead: 0,
      cacheWrite: c.modelSwitch.inside.promptTokens,
    });
    expect(c.modelSwitch.inside.sameModel.cacheRead).toBeGreaterThan(c.takenOverTokens);
    expect(c.modelSwitch.inside.extraUsd).toBeGreaterThan(c.modelSwitch.boundary.extraUsd);
    expect(results.targets.find((target) => target.id === 'continue-handoff-cost')?.verdict).not.toBe('not run');
    expect(results.notes.find((note) => note.startsWith('Continue the work:'))).toContain('of the prompt tokens');
    expect(results.notes.find((note) => note.startsWith('Cache hit:'))).toContain('With nothing sent again');

    const markdown = renderMarkdown(results, 'latest.svg');
    expect(markdown).toContain('## 3. Tokens with long tool outputs');
    expect(markdown).toContain("The harness way's requests that sent content again");
    expect(markdown).toContain('## 9. Continuing the work: handoff against resuming the transcript');
    expect(markdown).toContain('inside the long context');
  }, 900_000);

  it('builds a cold environment, times a cached one against the default image, and reports both', async () => {
    const { results, failures } = await runSmokeSuite(ctx, ['environment'], 'the test server');
    expect(failures).toEqual([]);
    expect(validateResults(JSON.parse(JSON.stringify(results)))).toEqual([]);
    const e = results.environment!;
    // The smoke profile's recipe: a setup command (its marker) and the harness's own step.
    expect(e.coldBuildSteps.map((step) => step.title)).toEqual([
      expect.stringMatching(/^setup 1: echo bench-env-cold-[0-9a-f]{8} > \/etc\/agent-bench-marker$/),
      'the agent user, /workspace and the dependency cache folder',
    ]);
    expect(e.coldBuilderMs).toBeGreaterThan(0);
    expect(e.coldBuilderMs).toBeLessThanOrEqual(e.coldBuildMs);
    expect(e.coldImageBytes).toBeGreaterThanOrEqual(e.defaultImageBytes);
    expect(e.warmImage).toMatch(/^agent-env:[0-9a-f]{16}$/);
    expect([e.samples.warm.length, e.samples.default.length]).toEqual([1, 1]);
    expect(e.warmStartRatio).toBeCloseTo(e.warmStartMs / e.defaultStartMs, 2);
    // What the run built is gone with it.
    if (e.warmImageBuiltByRun) await expect(ctx.docker.getImage(e.warmImage).inspect()).rejects.toThrow();
    expect(results.targets.find((target) => target.id === 'environment-warm-start')?.verdict).not.toBe('not run');

    const markdown = renderMarkdown(results, 'latest.svg');
    expect(markdown).toContain('## 7. Environments');
    expect(markdown).toContain(e.warmImage);
    expect(renderSvg(results)).toContain('Environment: start');
  }, 600_000);
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

  it('parses --profile and --dynamic-config', () => {
    expect(
      parseBenchArgs(
        ['--profile', '--dynamic-config', 'history.transferProcessorMaxPollRPS=20', '--dynamic-config=limit.x="a"'],
        'out',
      ),
    ).toMatchObject({ cpuProfile: true, dynamicConfig: { 'history.transferProcessorMaxPollRPS': 20, 'limit.x': 'a' } });
    expect(parseBenchArgs(['--dynamic-config', 'novalue'], 'out')).toEqual({
      error: expect.stringContaining('KEY=VALUE'),
    });
    expect(parseBenchArgs(['--dynamic-config', 'k=not json'], 'out')).toEqual({
      error: expect.stringContaining('must be JSON'),
    });
  });

  it('sums a CPU profile by module and function, leaving out the start-up', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-profile-'));
    const file = path.join(dir, 'CPU.test.cpuprofile');
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 });
    fs.writeFileSync(
      file,
      JSON.stringify({
        startTime: 1_000,
        nodes: [
          { id: 1, callFrame: frame('(idle)', '') },
          { id: 2, callFrame: frame('poll', 'file:///x/node_modules/@temporalio/worker/lib/worker.js') },
          { id: 3, callFrame: frame('runTool', path.join(PROJECT_ROOT, 'activities/hands/run-tool.ts')) },
        ],
        // Sample i stands for the time until the next one: 2 (start-up), then 3, 3, 1 (idle), 3.
        samples: [2, 2, 3, 1, 3],
        timeDeltas: [0, 100, 100, 100, 100, 100],
      }),
    );
    const summary = summarizeCpuProfiles([file], { relativeTo: dir, fromUs: 1_050 });
    expect(summary.files).toEqual(['CPU.test.cpuprofile']);
    expect(summary.sampledMs).toBeCloseTo(0.4);
    expect(summary.idleMs).toBeCloseTo(0.1);
    expect(summary.byModule.map((row) => [row.module, row.selfMs])).toEqual([
      ['activities/hands/run-tool.ts', 0.2],
      ['@temporalio/worker', 0.1],
    ]);
    expect(summary.topFunctions[0]).toMatchObject({ function: 'runTool', where: 'activities/hands/run-tool.ts:10' });
    expect(moduleOf(frame('x', 'node:internal/streams/readable'))).toBe('node:internal/streams');
    expect(moduleOf(frame('(garbage collector)', ''))).toBe('(garbage collector)');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('splits long runs into step ranges', () => {
    const run = (steps: number, msPerStep: number) => Array.from({ length: steps + 1 }, (_, i) => i * msPerStep);
    const segments = overheadSegments([run(120, 10)], [run(120, 12)]);
    expect(segments.map((seg) => [seg.fromStep, seg.toStep, seg.addedMsPerStep])).toEqual([
      [1, 10, 2],
      [10, 100, 2],
      [100, 120, 2],
    ]);
    expect(segments[0]!.samples).toBe(9); // step 1 (the container's creation) is left out
  });

  it('says how the added time changes with the model latency, part by part', () => {
    const point = (latencyMs: number, plain: number, durable: number) => ({
      latencyMs,
      plainMsPerStep: latencyMs + plain,
      durableMsPerStep: latencyMs + durable,
      addedMsPerStep: durable - plain,
    });
    const timeline = (workflowTaskMs: number, toolMs: number, modelMs: number) => ({
      workflowTaskScheduleToStartMs: 2,
      workflowTaskStartToCompleteMs: workflowTaskMs - 2,
      modelScheduleToStartMs: 0,
      modelStartToCloseMs: modelMs,
      toolScheduleToStartMs: 3,
      toolStartToCloseMs: toolMs - 3,
      completedToWorkflowTaskMs: 0,
    });
    const overhead = {
      latency0: point(0, 90, 111),
      latency200: point(200, 62, 134),
      latency500: point(500, 77, 140),
      timeline: timeline(12, 57, 19),
      timeline200: timeline(21, 90, 221),
    } as unknown as OverheadResult;
    const note = latencyNote(overhead);
    expect(note).toContain('0 ms: 21 ms, 200 ms: 72 ms, 500 ms: 63 ms');
    expect(note).toContain(
      "the plain loop's step takes 90 ms / 62 ms / 77 ms and the durable step 111 ms / 134 ms / 140 ms",
    );
    expect(note).toContain('the two workflow tasks 24 ms vs 42 ms, the tool call 57 ms vs 90 ms');
    expect(note).toContain('the model call beyond its latency 19 ms vs 21 ms');
    expect(note).toContain("plain loop's own step moves by 28 ms");
  });

  it("times a build's steps from its progress lines", () => {
    const line = (step: number, title: string) => `building environment 0123456789ab: step ${step}/3 ${title}`;
    expect(
      buildStepTimes(
        [
          { line: line(1, 'apt-get install python3'), at: 1_000 },
          { line: line(1, 'apt-get install python3'), at: 5_000 }, // a later line of the same step
          { line: line(2, 'setup 1: echo x > /etc/m'), at: 41_000 },
          { line: line(3, 'the agent user'), at: 42_500 },
        ],
        43_000,
      ),
    ).toEqual([
      { step: 1, title: 'apt-get install python3', ms: 40_000 },
      { step: 2, title: 'setup 1: echo x > /etc/m', ms: 1_500 },
      { step: 3, title: 'the agent user', ms: 500 },
    ]);
    expect(buildStepTimes([], 1)).toEqual([]);
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
