/**
 * Runs the chosen scenarios in order on one bench context and assembles the results: machine, setup,
 * each scenario's section, the target verdicts and the notes the figures call for. A scenario that
 * fails is reported (its section left out, its targets "not run", the error in the notes) and the
 * others still run; `failures` lists them so the command can exit non-zero.
 */
import type { BenchContext } from './context';
import { describeMachine, loadAverage } from './machine';
import { BENCH_MODEL } from './model';
import { PROFILES, type ProfileName } from './profiles';
import { evaluateTargets, type BenchResults, type ScenarioName } from './results';
import { runConcurrency } from './scenarios/concurrency';
import { runHistory } from './scenarios/history';
import { runOverhead } from './scenarios/overhead';
import { runRecovery } from './scenarios/recovery';
import { runTokens } from './scenarios/tokens';
import { runTtft } from './scenarios/ttft';

export interface SuiteOptions {
  profile: ProfileName;
  scenarios: readonly ScenarioName[];
  /** How Temporal was provided, and with which dynamic config (for the report). */
  temporalDescription: string;
  dynamicConfig: Record<string, unknown>;
  temporalCli: string;
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
    overhead: async () => void (sections.overhead = await runOverhead(ctx, profile.overhead)),
    history: async () => void (sections.history = await runHistory(ctx, profile.history, suggestCan)),
    tokens: async () => void (sections.tokens = await runTokens(ctx, profile.tokens)),
    ttft: async () => void (sections.ttft = await runTtft(ctx, profile.ttft)),
    concurrency: async () => void (sections.concurrency = await runConcurrency(ctx, profile.concurrency)),
    recovery: async () => void (sections.recovery = await runRecovery(ctx, profile.recovery)),
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
    schemaVersion: 2,
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
  const h = results.history;
  if (h) {
    const last = h.points[h.points.length - 1]!;
    notes.push(
      `History: ${last.eventsPerStep} events per step at ${last.steps} steps; ${last.runs} run(s) in the chain` +
        `${suggestCan ? ` (continue-as-new suggested at ${suggestCan} events for this profile)` : ' (server default: continue-as-new suggested at 4,096 events)'}. ` +
        `Message content is ${((last.contentBytes / last.bytes) * 100).toFixed(1)} % of the bytes here; each tool result is stored twice ` +
        "(as the tool activity's result and again in the next model step's input tail), which is linear, not quadratic, but doubles the content share for tool-heavy runs.",
    );
    const upserts = h.lastPointByEventType.find((row) => row.eventType === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
    if (upserts) {
      notes.push(
        `History: search-attribute upserts take ${upserts.bytesPerStep.toFixed(0)} B per step — the workflow re-publishes all of its search attributes every turn, ` +
          'including those that do not change between turns (status, lane, kind, repo); upserting only changed values would trim that.',
      );
    }
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
  }
  const f = results.ttft;
  if (f) {
    notes.push(
      'TTFT: the workflow never waits for a sandbox before the first model step, so lazy and eager provisioning both start the model call at once. ' +
        `With eagerSandbox the seeding (container + copy of the repository) runs alongside the first model call; the first tool result arrives after ${f.eagerFirstToolRoundTripMs} ms vs ${f.lazyFirstToolRoundTripMs} ms lazily (model latency 1 s).`,
    );
    if (!f.eagerWithoutRepoProvisions) {
      notes.push(
        'Harness gap: `eagerSandbox: true` without a `repo` provisions nothing ahead of time — the workflow only schedules `seedWorkspace`, which needs a repository, so the container is still created at the first tool call. ' +
          'A hands activity that only ensures the container (e.g. `ensureSandbox`) would close the gap; it is not added here because the hands activities belong to another change in progress.',
      );
    }
  }
  const r = results.recovery;
  if (r) {
    const byLabel = r.variants.map((v) => `${(v.killToProgressMs / 1000).toFixed(1)} s with ${v.label}`).join(', ');
    const rerun = r.variants.some((v) => v.toolResult !== 'recorded');
    notes.push(
      `Recovery: ${byLabel}. With the defaults the replacement worker polls within about a second, but Temporal notices the dead worker only when the tool activity's ` +
        `${(r.heartbeatTimeoutMs / 1000).toFixed(0)} s heartbeat timeout expires. The per-operation \`heartbeatTimeoutMs\` (the hands heartbeat every second) moves that retry forward, ` +
        "but the workflow task that follows is then scheduled inside the server's sticky-poller window, goes to the dead worker's sticky queue and waits out the worker's " +
        'stickyQueueScheduleToStartTimeout (SDK default 10 s) before it moves to the normal queue. Meeting the target takes both settings; the defaults do not meet it ' +
        '(a short sticky timeout costs a history replay whenever a busy worker picks up its sticky task late). ' +
        (rerun
          ? "In at least one run the retried tool call did not return the first attempt's journalled output — see the table."
          : 'In every run the retried `never` tool call returned the journalled output of the interrupted attempt; the command was not run twice.'),
    );
  }
  const c = results.concurrency;
  if (c) {
    notes.push(
      `Concurrency: ${c.operations} operations × ${c.stepsPerOperation} steps on one worker process (default tuning: 100 activity slots per worker, 40 workflow-task slots), model latency 0; ` +
        `every operation creates its own container, which is included in the wall time.`,
    );
  }
  return notes;
}
