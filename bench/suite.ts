/**
 * Runs the chosen scenarios in order on one bench context and assembles the results: machine, setup,
 * each scenario's section, the target verdicts and the notes the figures call for. A scenario that
 * fails is reported (its section left out, its targets "not run", the error in the notes) and the
 * others still run; `failures` lists them so the command can exit non-zero.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BenchContext } from './context';
import { describeMachine, loadAverage } from './machine';
import { BENCH_MODEL } from './model';
import { PROFILES, type ProfileName } from './profiles';
import { CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, priceOf } from '../common/pricing';
import {
  evaluateTargets,
  TARGET_CACHE_HIT,
  TARGET_HANDOFF_COST_SHARE,
  TARGET_PEAK_CONTEXT_PCT,
  type BenchResults,
  type ConcurrencyResult,
  type CpuPerStep,
  type ScenarioName,
} from './results';
import { CPU_GROUP_LABELS } from './scenarios/concurrency';
import { round } from './stats';
import { runCluster } from './scenarios/cluster';
import { runConcurrency } from './scenarios/concurrency';
import { runEnvironment } from './scenarios/environment';
import { runFloor } from './scenarios/floor';
import { runHistory } from './scenarios/history';
import { runOverhead } from './scenarios/overhead';
import { runRecovery } from './scenarios/recovery';
import { runTokens } from './scenarios/tokens';
import { runContinue } from './scenarios/continue';
import { runTtft } from './scenarios/ttft';

export interface SuiteOptions {
  profile: ProfileName;
  scenarios: readonly ScenarioName[];
  /** How Temporal was provided, and with which dynamic config (for the report). */
  temporalDescription: string;
  dynamicConfig: Record<string, unknown>;
  temporalCli: string;
  /**
   * The results directory; the worker's CPU profiles go to its `profile/` folder (default: a new
   * temporary directory, never the working directory).
   */
  outDir?: string;
  cpuProfile?: boolean;
}

export interface SuiteOutcome {
  results: BenchResults;
  failures: { scenario: ScenarioName; error: string }[];
}

export async function runSuite(ctx: BenchContext, options: SuiteOptions): Promise<SuiteOutcome> {
  const profile = PROFILES[options.profile];
  const started = Date.now();
  const machine = await describeMachine(ctx.docker, options.temporalCli);
  const sections: Partial<Pick<BenchResults, ScenarioName>> = {};
  const failures: SuiteOutcome['failures'] = [];
  const suggestCan =
    typeof options.dynamicConfig['limit.historyCount.suggestContinueAsNew'] === 'number'
      ? (options.dynamicConfig['limit.historyCount.suggestContinueAsNew'] as number)
      : null;

  const runners: Record<ScenarioName, () => Promise<void>> = {
    floor: async () =>
      void (sections.floor = await runFloor(ctx, profile.floor, profile.concurrency, profile.overhead.latency200)),
    overhead: async () => {
      const outDir = options.outDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
      sections.overhead = await runOverhead(ctx, profile.overhead, {
        outDir,
        ...(options.cpuProfile ? { cpuProfileDir: path.join(outDir, 'profile') } : {}),
      });
    },
    history: async () => void (sections.history = await runHistory(ctx, profile.history, suggestCan)),
    tokens: async () => void (sections.tokens = await runTokens(ctx, profile.tokens)),
    continue: async () => void (sections.continue = await runContinue(ctx, profile.continue)),
    ttft: async () => void (sections.ttft = await runTtft(ctx, profile.ttft)),
    concurrency: async () => void (sections.concurrency = await runConcurrency(ctx, profile.concurrency)),
    recovery: async () => void (sections.recovery = await runRecovery(ctx)),
    environment: async () => void (sections.environment = await runEnvironment(ctx, profile.environment)),
    cluster: async () => void (sections.cluster = await runCluster(ctx, profile.cluster)),
  };
  for (const scenario of options.scenarios) {
    const scenarioStarted = Date.now();
    ctx.log(`${scenario}: start`);
    try {
      await runners[scenario]();
      ctx.log(`${scenario}: done in ${((Date.now() - scenarioStarted) / 1000).toFixed(1)} s`);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      failures.push({ scenario, error });
      ctx.log(`${scenario}: FAILED: ${error}`);
    }
  }

  const finished = Date.now();
  const base: Omit<BenchResults, 'targets' | 'notes'> = {
    schemaVersion: 4,
    profile: options.profile,
    startedAt: new Date(started).toISOString(),
    finishedAt: new Date(finished).toISOString(),
    wallMs: finished - started,
    machine: { ...machine, loadAverage: { start: machine.loadAverage.start, end: loadAverage() } },
    setup: {
      temporal: options.temporalDescription,
      temporalAddress: ctx.address,
      dynamicConfig: options.dynamicConfig,
      sandboxImage: ctx.image,
      model: `scripted Messages API server, priced as ${BENCH_MODEL}`,
      scenarios: [...options.scenarios],
      parameters: { ...profile },
    },
    ...sections,
    ...(sections.concurrency?.cpu ? { cpu: { msPerStep: cpuPerStep(sections.concurrency) } } : {}),
  };
  const notes = [
    ...failures.map((failure) => `The ${failure.scenario} scenario failed: ${failure.error}`),
    ...findings(base, suggestCan),
  ];
  return { results: { ...base, targets: evaluateTargets(base), notes }, failures };
}

/** What the figures say that a table does not: how to read them, and harness problems they reveal. */
function findings(results: Omit<BenchResults, 'targets' | 'notes'>, suggestCan: number | null): string[] {
  const notes: string[] = [];
  if (results.machine.cores <= 2) {
    notes.push(
      `The machine has ${results.machine.cores} cores shared by the Temporal server, Docker, the workers, the scripted model and the bench itself ` +
        `(and possibly other work: load average ${results.machine.loadAverage.start} at the start, ${results.machine.loadAverage.end} at the end), so absolute times are pessimistic and noisy.`,
    );
  }
  const o = results.overhead;
  if (o) notes.push(...overheadNotes(o, results.setup.dynamicConfig));
  const h = results.history;
  if (h) {
    const last = h.points[h.points.length - 1]!;
    const upserts = h.lastPointByEventType.find((row) => row.eventType === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
    notes.push(
      `History: a model+tool step is 12 events (model and tool activity: scheduled, started, completed; two workflow tasks: scheduled, started, completed)` +
        `${upserts ? `; the search-attribute counters add ${upserts.eventsPerStep.toFixed(2)} per step (published every 10 turns and at state changes)` : ''}; ` +
        `${last.runs} run(s) in the chain at ${last.steps} steps` +
        `${suggestCan ? ` (continue-as-new suggested at ${suggestCan} events for this profile)` : ' (server default: continue-as-new suggested at 4,096 events)'}. ` +
        `Message content is ${((last.contentBytes / last.bytes) * 100).toFixed(1)} % of the bytes here. Each tool result's content is stored twice ` +
        '(the tool activity\'s result and the next model step\'s input), which is linear, not quadratic; docs/benchmark.md ("History size") says why it stays so.',
    );
  }
  const t = results.tokens;
  if (t) {
    const over = [t.naive, t.cachedFullOutput, t.spillOnly, t.spillEditing].filter((way) => way.overWindowRequests > 0);
    if (over.length) {
      notes.push(
        `Tokens: without context editing and compaction the prompt reaches ${t.naive.peakContext.toLocaleString('en-US')} tokens with full outputs and ` +
          `${t.spillOnly.peakContext.toLocaleString('en-US')} with spilled ones — beyond the ${t.windowTokens.toLocaleString('en-US')}-token window ` +
          `(${over.map((way) => way.overWindowRequests).join(' / ')} requests over it in the ways that reach it); a real model would refuse those requests, ` +
          `so those figures are what the run would cost if it could run at all. The harness peaks at ${t.harness.peakContext.toLocaleString('en-US')} tokens ` +
          `(${t.harness.compactions} compactions, ${t.harness.editBatches} clear batches).`,
      );
    }
    if (t.harness.uncachedInput === 0 && t.cachedFullOutput.uncachedInput === 0) {
      notes.push(
        'Tokens: with breakpoints every prompt token is either written to or read from the simulated cache (its minimum cacheable length is passed from the first request), so uncached input is 0 for the cached ways; the reductions are measured on total prompt tokens.',
      );
    }
    notes.push(cacheHitNote(t));
  }
  if (results.continue) notes.push(continueNote(results.continue));
  const f = results.ttft;
  if (f) {
    notes.push(
      'TTFT: the workflow never waits for a sandbox before the first model step, so lazy and eager provisioning both start the model call at once. ' +
        `With eagerSandbox the seeding (container + copy of the repository) runs alongside the first model call; the first tool result arrives after ${f.eagerFirstToolRoundTripMs} ms vs ${f.lazyFirstToolRoundTripMs} ms lazily (model latency 1 s).`,
    );
  }
  const e = results.environment;
  if (e) notes.push(environmentNote(e));
  const r = results.recovery;
  if (r) {
    const sec = (value: number) => `${(value / 1000).toFixed(1)} s`;
    notes.push(
      `Recovery: ${sec(r.tool.killToProgressMs)} during a tool call, ${sec(r.model.killToProgressMs)} during a model call. The dead worker is noticed when the call's ` +
        `${sec(r.tool.heartbeatTimeoutMs)} heartbeat timeout expires (a second worker stands by); the call is retried after ` +
        "0.25 s (tool) or 0.5 s (model), and the retried attempt resets the workflow's sticky queue, so the workflow task that follows goes to the live worker at once instead of waiting " +
        "for the dead one's sticky queue to time out. The timeout runs from the last heartbeat the server recorded (heartbeats go out every second), so detection takes between 2 and 3 s of it; " +
        "the rest is the standby's first work: its first workflow task replays the history in a cold workflow thread (module evaluation, protobuf and source-map set-up: about 0.5 s of CPU on this machine) " +
        "and its first tool call starts the sandbox's executor. " +
        (r.tool.toolResult === 'recorded' && r.tool.effects === 1
          ? 'The retried `never` (bash) call returned the journalled output of the interrupted attempt; the command ran once.'
          : `The retried bash call returned ${r.tool.toolResult} and the command ran ${r.tool.effects} time(s) — see the table.`),
    );
  }
  const c = results.concurrency;
  if (c) {
    const cpu = c.cpu;
    const share = (label: RegExp) =>
      cpu ? cpu.byGroup.filter((row) => label.test(row.label)).reduce((sum, row) => sum + row.shareOfMachine, 0) : 0;
    notes.push(
      `Concurrency: ${c.operations} operations × ${c.stepsPerOperation} steps on one worker process (default tuning: 100 activity slots per worker, 10 workflow-task slots for the brain` +
        (c.stickyFailover
          ? `; \`AGENT_STICKY_FAILOVER=${c.stickyFailover}\`, as docs/crash-safety.md advises for a brain worker loaded far beyond its cores — with the default 5 s, a run of this load on this machine had 942 workflow tasks time out on the busy worker's sticky queue and replay from the shared queue`
          : '') +
        `), model latency 0; ` +
        `every operation creates its own container (included in the wall time; kept until the end so that its CPU time is counted). Timeouts under this load: ${c.timeouts.activity} activity timeouts, ` +
        `${c.timeouts.retriedActivities} retried activity attempts, ${c.timeouts.workflowTask} workflow-task timeouts` +
        (c.timeouts.workflowTaskStickyScheduleToStart !== undefined
          ? ` (${c.timeouts.workflowTaskStickyScheduleToStart} of them a task left on a busy worker's sticky queue past its schedule-to-start timeout, then run from the shared queue; ${c.timeouts.workflowTask - c.timeouts.workflowTaskStickyScheduleToStart} a task that ran too long).`
          : '.') +
        (c.timeouts.retryCauses?.length
          ? ` Retried activities, by the failure of their earlier attempt: ${c.timeouts.retryCauses.map((cause) => `${cause.activity} ×${cause.count} (${cause.failure}${cause.withHeartbeat !== undefined ? `; ${cause.withHeartbeat} with a heartbeat recorded before` : ''})`).join('; ')}.`
          : '') +
        (c.workerEventLoopDelayMs
          ? ` The worker's event loop (activities, heartbeats, the SDK's calls) ran up to ${c.workerEventLoopDelayMs.p99.toFixed(0)} ms late at the 99th percentile, ${c.workerEventLoopDelayMs.max.toFixed(0)} ms at worst.`
          : '') +
        (cpu
          ? ` The machine was busy ${cpu.machineBusyS.toFixed(0)} of ${(cpu.wallS * cpu.cores).toFixed(0)} CPU seconds: Docker (dockerd, containerd, the containers' shims, runc and tool processes) ` +
            `${(share(/dockerd|containerd|containers/) * 100).toFixed(0)} %, the worker process ${(share(/^worker/) * 100).toFixed(0)} %, the Temporal server ${(share(/Temporal/) * 100).toFixed(0)} %, ` +
            `the bench ${(share(/^bench/) * 100).toFixed(0)} %, everything else ${(share(/everything else/) * 100).toFixed(0)} %.`
          : ''),
    );
  }
  return notes;
}

function overheadNotes(o: NonNullable<BenchResults['overhead']>, dynamicConfig: Record<string, unknown>): string[] {
  const notes: string[] = [];
  const segments = o.segments.map((seg) => `steps ${seg.fromStep}–${seg.toStep}: +${seg.addedMsPerStep} ms`).join(', ');
  const rps = dynamicConfig['history.transferProcessorMaxPollRPS'];
  notes.push(
    `Overhead on long runs (model latency 0, ${o.latency0.stepsPerRun} steps): ${segments || 'runs too short for segments'}. ` +
      (rps === undefined || rps === 20
        ? "This server reads its transfer queue at most 20 times a second (`history.transferProcessorMaxPollRPS` default): every hand-off from a completed activity to the workflow then waits for the next 50 ms slot once the first second's burst is spent, so steps settle on a 100 ms grid (two hand-offs per step)."
        : `The server runs with \`history.transferProcessorMaxPollRPS\` ${String(rps)} (the dev-server default of \`platform/dev-server.ts\`); at the server default of 20 every hand-off from a completed activity to the workflow waits for the next 50 ms slot of the single shard's transfer-queue reader once the first second's burst is spent, and steps settle on a 100 ms grid (two hand-offs per step).`),
  );
  notes.push(stepBudgetNote(o));
  notes.push(latencyNote(o));
  const p = o.cpuProfile;
  if (p) {
    const busy = p.sampledMs - p.idleMs;
    const modules = p.byModule
      .slice(0, 6)
      .map((row) => `${row.module} ${(row.share * 100).toFixed(0)} %`)
      .join(', ');
    notes.push(
      `CPU profile of the worker process ${p.durableSteps ? `during a separate durable run of ${p.durableSteps} steps at model latency 0 (after the timed runs, so the profiler slows none of them)` : 'during the overhead scenario (`--profile`)'}: ${(busy / 1000).toFixed(1)} s busy of ${(p.sampledMs / 1000).toFixed(1)} s sampled over ${p.files.length} thread(s); busy time by module: ${modules}.`,
    );
  }
  return notes;
}

/**
 * How the added time changes with the model's latency, from the same scenario's figures: each step
 * outside the model's wait (plain and durable) and, where both timelines exist, which of the
 * durable step's parts changed between latency 0 and 200 ms.
 */
export function latencyNote(o: NonNullable<BenchResults['overhead']>): string {
  const points = [o.latency0, o.latency200, o.latency500];
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  let note =
    `Added overhead by model latency: ${points.map((p) => `${p.latencyMs} ms: ${ms(p.addedMsPerStep)}`).join(', ')}. ` +
    `Outside the model's wait (median step − latency), the plain loop's step takes ${points.map((p) => ms(p.plainMsPerStep - p.latencyMs)).join(' / ')} ` +
    `and the durable step ${points.map((p) => ms(p.durableMsPerStep - p.latencyMs)).join(' / ')} at 0 / 200 / 500 ms.`;
  const [t0, t200] = [o.timeline, o.timeline200];
  if (t200) {
    const parts = (t: typeof t0, latencyMs: number) => ({
      workflowTasks:
        2 * (t.completedToWorkflowTaskMs + t.workflowTaskScheduleToStartMs + t.workflowTaskStartToCompleteMs),
      tool: t.toolScheduleToStartMs + t.toolStartToCloseMs,
      model: t.modelScheduleToStartMs + t.modelStartToCloseMs - latencyMs,
    });
    const [a, b] = [parts(t0, 0), parts(t200, 200)];
    note +=
      ` Per durable step (server event times, medians; latency 0 in its longest run vs 200 ms in its first): the two workflow tasks ${ms(a.workflowTasks)} vs ${ms(b.workflowTasks)}, ` +
      `the tool call ${ms(a.tool)} vs ${ms(b.tool)} (dispatch, run in the worker, completion call), the model call beyond its latency ${ms(a.model)} vs ${ms(b.model)}.`;
  }
  const plainSpread =
    Math.max(...points.map((p) => p.plainMsPerStep - p.latencyMs)) -
    Math.min(...points.map((p) => p.plainMsPerStep - p.latencyMs));
  if (plainSpread > 10)
    note += ` The plain loop's own step moves by ${ms(plainSpread)} between latencies, so the added figures move with it: they are differences of two noisy medians on a shared 2-core machine.`;
  return note;
}

/**
 * Where the added time per step goes: the hand-offs every durable step makes through the server
 * (from the step timeline and the SDK's metrics) and, with `--profile`, the worker's CPU per step.
 */
function stepBudgetNote(o: NonNullable<BenchResults['overhead']>): string {
  const t = o.timeline;
  const m = o.workerMetrics;
  const workflowTasks = 2 * (t.workflowTaskScheduleToStartMs + t.workflowTaskStartToCompleteMs);
  const handOffs = workflowTasks + t.toolScheduleToStartMs + 2 * t.completedToWorkflowTaskMs;
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  let note =
    `Where the added ${ms(o.latency0.addedMsPerStep)} per step (model latency 0) goes: a durable step makes two workflow tasks ` +
    `(${ms(workflowTasks)} together: each ${ms(t.workflowTaskScheduleToStartMs)} to reach the worker and ${ms(t.workflowTaskStartToCompleteMs)} from start to completion, ` +
    `of which ${ms(m.workflowTaskExecutionMs)} is the worker's turn and ${ms(m.respondWorkflowTaskCompletedMs)} its completion call, a write on the server) ` +
    `and dispatches the tool call through the server's matching (${ms(t.toolScheduleToStartMs)}); that is ${ms(handOffs)} of hand-offs before the activities' own ` +
    `completion calls (${ms(m.respondActivityTaskCompletedMs)} each, inside their run times). None of it waits on a timer or a poll interval: on this machine it is CPU time ` +
    'of the worker and the server taking turns on two cores, with Docker and the model server on the same cores.';
  const p = o.cpuProfile;
  const durableSteps = p?.durableSteps ?? m.workflowTasks / 2;
  if (p && durableSteps > 0) {
    const busy = p.sampledMs - p.idleMs;
    const share = (test: (module: string) => boolean) =>
      p.byModule.filter((row) => test(row.module)).reduce((sum, row) => sum + row.share, 0);
    const sdk = share((module) => module.startsWith('@temporalio/') || ['rxjs', 'protobufjs', 'long'].includes(module));
    const gc = share((module) => module === '(garbage collector)');
    const ours = share(
      (module) => module === 'workflow bundle' || /^(activities|workflows|common|workers|platform)\//.test(module),
    );
    note +=
      ` Profiled${p.durableSteps ? ' (a separate run)' : ''}, the worker process spent ${ms(busy / durableSteps)} of CPU per durable step (both threads, model and tool call included): ` +
      `${(sdk * 100).toFixed(0)} % in the Temporal SDK's own modules (activations, the core bridge, protobuf, its rxjs pipelines; the workflow sandbox's ` +
      "promise hook also records a stack trace for every promise the workflow creates, for the Web UI's stack-trace view), " +
      `${(gc * 100).toFixed(0)} % in garbage collection and ${(ours * 100).toFixed(0)} % in the harness's own code (the rest is Node's internals, V8 and native code the SDK calls).`;
  }
  return note;
}

const int = (value: number): string => Math.round(value).toLocaleString('en-US');
const usd = (value: number): string => `$${value.toFixed(2)}`;

/**
 * What the harness way's cache-hit rate is made of, and what a higher one would take: the new tail
 * (written once whatever the harness does) bounds the rate from the run's own prompt tokens.
 */
export function cacheHitNote(t: NonNullable<BenchResults['tokens']>): string {
  const w = t.harness;
  const prompt = w.uncachedInput + w.cacheWrite + w.cacheRead;
  const { tail, start, compaction, clearBatch, missed, changed } = w.notRead;
  const fresh = tail + start;
  const ceiling = prompt > 0 ? 1 - fresh / prompt : 0;
  const needed = fresh / (1 - TARGET_CACHE_HIT);
  const price = priceOf(BENCH_MODEL).input / 1_000_000;
  const readMore = Math.max(0, needed - prompt) * CACHE_READ_MULTIPLIER * price;
  const pct = (value: number) => `${(value * 100).toFixed(1)} %`;
  return (
    `Cache hit: the harness way read ${int(w.cacheRead)} of its ${int(prompt)} prompt tokens (${pct(w.cacheHitRate)}). ` +
    `${int(tail)} tokens are the new tail (each request's reply and tool results, content the model never saw as input, written once whatever the harness does) and ${int(start)} the first request's tools and system prompt; ` +
    `${int(compaction + clearBatch + missed + changed)} were sent again (compactions ${int(compaction)}, clear batches ${int(clearBatch)}, sent before but not read ${int(missed)}, other changes ${int(changed)}). ` +
    `With nothing sent again the rate would be ${pct(ceiling)}. ${pct(TARGET_CACHE_HIT)} with the same new content needs ${int(needed)} prompt tokens: an average prompt of ${int(needed / Math.max(1, w.requests))} ` +
    `tokens per request against this run's ${int(prompt / Math.max(1, w.requests))}, when the peak may not pass ${TARGET_PEAK_CONTEXT_PCT} % of the window (${int((TARGET_PEAK_CONTEXT_PCT / 100) * t.windowTokens)}) ` +
    `and compaction and clear batches bring the context down to stay under it; the extra reads alone would cost ${usd(readMore)} more. ` +
    'The rate rises only with a larger average context (more reads, more cost) or less new content per request (a smaller head and tail kept of each long output).'
  );
}

/** What the continue-the-work figures are made of, and what a smaller handoff ÷ resume ratio would take. */
export function continueNote(c: NonNullable<BenchResults['continue']>): string {
  const price = priceOf(BENCH_MODEL);
  const parts = (w: NonNullable<BenchResults['continue']>['resume']) => ({
    output: (w.output * price.output) / 1_000_000,
    writes: (w.cacheWrite * CACHE_WRITE_MULTIPLIER * price.input) / 1_000_000,
    reads: (w.cacheRead * CACHE_READ_MULTIPLIER * price.input) / 1_000_000,
  });
  const [h, r] = [parts(c.handoff), parts(c.resume)];
  // The work itself: the replies and the new content each request adds, written once — every way pays it.
  const work = r.output + (c.resume.notRead.tail * CACHE_WRITE_MULTIPLIER * price.input) / 1_000_000;
  const ratio = c.handoffVsResume.cost;
  const scale = ratio / TARGET_HANDOFF_COST_SHARE;
  const pct = (value: number) => `${(value * 100).toFixed(1)} %`;
  const sw = c.modelSwitch;
  return (
    `Continue the work: the handoff cost ${usd(c.handoff.costUsd)} (output ${usd(h.output)}, cache writes ${usd(h.writes)}, reads ${usd(h.reads)}), ` +
    `resuming ${usd(c.resume.costUsd)} (output ${usd(r.output)}, writes ${usd(r.writes)}, reads ${usd(r.reads)}): ${pct(ratio)} of the cost, ${pct(c.handoffVsResume.promptTokens)} of the prompt tokens. ` +
    `The work itself — the replies and the new content each request adds, written once — costs ${usd(work)} (${pct(work / c.resume.costUsd)} of resuming): every way of continuing pays it, so no way goes below that share at this size. ` +
    "What resuming adds is reading the whole carried conversation on every request; what the handoff adds is each operation's fresh start (its goal, the handoff and the orientation turn written again) and the reads of its own short contexts. " +
    `Resuming grows with the square of the features carried and the handoff linearly, so the ratio falls about as 1/F: ${pct(TARGET_HANDOFF_COST_SHARE)} would take about ${Math.ceil(c.features * scale)} features, ` +
    `a conversation of about ${int(c.transcriptTokens * scale)} tokens at the end (this one: ${int(c.transcriptTokens)})${c.transcriptTokens * scale > 1_000_000 ? " — more than any model's window" : ''}. ` +
    `A model switch inside the long context wrote its ${int(sw.inside.promptTokens)} tokens again: ${usd(sw.inside.extraUsd)} more than the same request on the same model; at an operation boundary, ${usd(sw.boundary.extraUsd)} (only the tools and system prompt are written again).`
  );
}

/** Where the cold build's time goes, and what the environment step adds to a warm start. */
export function environmentNote(e: NonNullable<BenchResults['environment']>): string {
  const sec = (value: number) => `${(value / 1000).toFixed(1)} s`;
  const longest = [...e.coldBuildSteps].sort((a, b) => b.ms - a.ms)[0];
  return (
    `Environment: a cold build takes ${sec(e.coldBuildMs)} of preparation (the builder ${sec(e.coldBuilderMs)}; resolving the recipe, probing the base image and recording the image on the workspace the rest)` +
    (longest
      ? `, ${Math.round((longest.ms / e.coldBuildMs) * 100)} % of it in step ${longest.step} (${longest.title})`
      : '') +
    `; the image is ${(e.coldImageBytes / 2 ** 20).toFixed(0)} MiB against the default image's ${(e.defaultImageBytes / 2 ** 20).toFixed(0)} MiB. ` +
    `Once the image exists, preparing the environment takes ${e.prepareMs.warm.toFixed(0)} ms (the image found by its hash) against ${e.prepareMs.default.toFixed(0)} ms for the default image, ` +
    `and the operation's first tool result arrives after ${e.warmStartMs.toFixed(0)} vs ${e.defaultStartMs.toFixed(0)} ms (×${e.warmStartRatio.toFixed(2)}).`
  );
}

/** The concurrency run's CPU per step (ms) by the parts the targets name, from its process groups. */
export function cpuPerStep(c: ConcurrencyResult): CpuPerStep {
  const steps = c.completed * c.stepsPerOperation;
  const of = (prefix: string) =>
    (c.cpu?.byGroup.filter((row) => row.label.startsWith(prefix)).reduce((sum, row) => sum + row.cpuS, 0) ?? 0) * 1000;
  const per = (cpuMs: number) => (steps > 0 ? round(cpuMs / steps, 2) : 0);
  return {
    total: per((c.cpu?.machineBusyS ?? 0) * 1000),
    containers: per(of(CPU_GROUP_LABELS.containers)),
    containersInside: per(of(CPU_GROUP_LABELS.containersInside)),
    containerShims: per(of(CPU_GROUP_LABELS.containerShims)),
    worker: per(of(CPU_GROUP_LABELS.worker)),
    server: per(of(CPU_GROUP_LABELS.server)),
  };
}
