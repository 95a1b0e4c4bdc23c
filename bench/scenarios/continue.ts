/**
 * Continue the work (seed 000): a project of F features whose first half one agent did in one
 * conversation, continued three ways against the scripted server's prompt-cache simulation:
 *  - resume: the next operation on that agent's session lane takes its whole conversation over and
 *    keeps growing it (what `--resume` does), context management off, against no window — what it
 *    would cost if it could run at all;
 *  - resumeCompaction: the same, with the harness's context management on (compaction and context
 *    editing, the defaults), against the model's window; it first compacts the conversation it takes
 *    over, which no longer fits;
 *  - handoff: the harness's way, a coding task on the branch the first half left (feature list,
 *    HANDOFF.md, git): one fresh operation per feature.
 * The same nine turns build each feature in every way (`continue-project.ts`). Every way starts from
 * a cold cache (the first half ran long enough ago for its cache to expire), and only the
 * continuation's requests are counted; the server's request log is the source of every figure.
 *
 * Then a model switch, measured with one-request operations: at an operation boundary (a fresh
 * context the size of a feature operation's first request, on another model: only its tools and
 * system prompt are written again) and inside the long context (the resumed lane's next request on
 * another model: the whole prefix is written again), each against the same request on the same
 * model.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { Worker } from '@temporalio/worker';
import { ContextCache } from '../../activities/brain/context-cache';
import { acceptedOperationResult, operationResult } from '../../client/operation-result';
import { submitPrompt, sessionHandle } from '../../client/session';
import { codingTaskResult } from '../../client/task-result';
import { recordedStepsOf } from '../../client/token-report';
import { CODING_TASK_WORKFLOW_TYPE, type CodingTaskInput } from '../../common/coding-task';
import type { ContextPolicyInput } from '../../common/context';
import { contextWindowOf } from '../../common/models';
import { OPERATION_WORKFLOW_TYPE, type OperationResult } from '../../common/operation';
import { costUsd } from '../../common/pricing';
import { sessionIdFor } from '../../common/sandbox-names';
import type { RecordedStep } from '../../common/recorded-steps';
import { startScriptedModelServer, type RecordedRequest, type ScriptedModelServer } from '../../scripted-model/server';
import { handsSettingsFromEnv } from '../../workers/settings';
import { createBrainWorker, createHandsHostWorkers } from '../../workers/workers';
import { cacheWriteCauses, cacheWriteRows } from '../cache-writes';
import { BENCH_LOOP_LIMITS, runId, uniqueQueues, type BenchContext } from '../context';
import { BENCH_MODEL, benchModelSettings, usageOf } from '../model';
import type { BenchProfile } from '../profiles';
import type { ContinueResult, ContinueWay, ModelSwitchFigures } from '../results';
import { round } from '../stats';
import { continueScript, lanePrompt, SWITCH_PROBE, writeProject, type ContinueWork } from './continue-project';

/** The model the switch measurements move to: priced and windowed like the bench's, a cache of its own. */
export const SWITCH_MODEL = 'claude-sonnet-5';
/** "No window" for the resume way: as large as the context policy allows. */
const NO_WINDOW = 10_000_000;
const TASK_BRANCH = 'agent/bench-continue';

interface Harness {
  server: ScriptedModelServer;
  brainQueue: string;
  handsQueue: string;
  close(): Promise<void>;
}

/** What one continuation way measured, and (for the resume way) the switch inside its context. */
interface WayOutcome {
  way: ContinueWay;
  modelSwitch?: ModelSwitchFigures;
}

/** One request's figures, for the model-switch comparison. */
interface ProbeFigures {
  promptTokens: number;
  cacheWrite: number;
  cacheRead: number;
  costUsd: number;
}

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, LANG: 'C' } }).trim();

export async function runContinue(ctx: BenchContext, profile: BenchProfile['continue']): Promise<ContinueResult> {
  const work: ContinueWork = { features: profile.features, docBytes: profile.docBytes, replyChars: profile.replyChars };
  const windowTokens = profile.windowTokens ?? contextWindowOf(BENCH_MODEL);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-continue-'));
  try {
    const run = new ContinueRun(ctx, dir, work, windowTokens);
    const resume = await run.resumeWay('resume');
    const resumeCompaction = await run.resumeWay('resumeCompaction');
    const handoff = await run.handoffWay();
    const prompt = (w: ContinueWay) => w.promptTokens;
    const ratio = (a: number, b: number) => round(b > 0 ? a / b : 0, 4);
    return {
      features: work.features,
      firstHalf: run.half,
      docBytes: work.docBytes,
      replyChars: work.replyChars,
      windowTokens,
      transcriptTokens: run.transcriptTokens,
      takenOverTokens: run.takenOverTokens,
      resume: resume.way,
      resumeCompaction: resumeCompaction.way,
      handoff: handoff.way,
      handoffVsResume: {
        cost: ratio(handoff.way.costUsd, resume.way.costUsd),
        promptTokens: ratio(prompt(handoff.way), prompt(resume.way)),
      },
      handoffVsResumeCompaction: {
        cost: ratio(handoff.way.costUsd, resumeCompaction.way.costUsd),
        promptTokens: ratio(prompt(handoff.way), prompt(resumeCompaction.way)),
      },
      modelSwitch: { toModel: SWITCH_MODEL, boundary: handoff.modelSwitch!, inside: resume.modelSwitch! },
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

class ContinueRun {
  readonly half: number;
  /** The resume way's largest prompt: the one conversation at its end. */
  transcriptTokens = 0;
  /** The resume way's first continuation request: the conversation it took over. */
  takenOverTokens = 0;

  constructor(
    private readonly ctx: BenchContext,
    private readonly dir: string,
    private readonly work: ContinueWork,
    private readonly windowTokens: number,
  ) {
    this.half = Math.floor(work.features / 2);
  }

  /** The scripted server and the workers of one way: a brain worker, and a hands host as `agent worker hands` runs one. */
  private async harness(label: string, halves: ReadonlyArray<readonly [number, number]>): Promise<Harness> {
    const { ctx } = this;
    const server = await startScriptedModelServer({ script: continueScript(this.work, halves), recordBodies: false });
    const { brainQueue, handsQueue } = uniqueQueues(`bench-continue-${label}`);
    const env = handsSettingsFromEnv();
    const common = {
      connection: ctx.nativeConnection,
      namespace: ctx.namespace,
      workflowBundle: { codePath: ctx.workflowBundlePath },
    };
    const workers: Worker[] = [
      await createBrainWorker({
        ...common,
        taskQueue: brainQueue,
        client: ctx.client,
        modelSettings: benchModelSettings(server.url),
        cache: new ContextCache(),
      }),
      ...(await createHandsHostWorkers({
        ...common,
        taskQueue: handsQueue,
        host: `${brainQueue.replace('-brain-', '-host-')}`,
        docker: ctx.docker,
        image: ctx.image,
        // The projects and the task's remote live in this run's folder.
        settings: { ...env, allowedRoots: [...env.allowedRoots, this.dir] },
        tasksDir: path.join(this.dir, 'host-tasks'),
      })),
    ];
    const running = Promise.all(workers.map((worker) => worker.run()));
    return {
      server,
      brainQueue,
      handsQueue,
      async close() {
        for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await server.stop();
      },
    };
  }

  /** One agent's lane: the first half, then (cold cache) the second half resumed in the same conversation. */
  async resumeWay(kind: 'resume' | 'resumeCompaction'): Promise<WayOutcome> {
    const { ctx, work, half } = this;
    const project = path.join(this.dir, `project-${kind}`);
    writeProject(project, work, 0);
    const h = await this.harness(kind, [
      [1, half],
      [half + 1, work.features],
    ]);
    const sessionId = runId('continue', kind);
    const noWindow: ContextPolicyInput = { compaction: false, editing: { enabled: false }, windowTokens: NO_WINDOW };
    const submit = async (prompt: string, extra: { model?: string; context: ContextPolicyInput }) => {
      const accepted = await submitPrompt(ctx.client, {
        sessionId,
        taskQueue: h.brainQueue,
        session: {
          repo: { kind: 'local', path: project },
          handsTaskQueue: h.handsQueue,
          keepContainer: true,
          defaults: { stuck: BENCH_LOOP_LIMITS, budget: { maxTurns: 10 * work.features + 20 } },
        },
        prompt: { prompt, ...extra },
      });
      // Queued when the session has not yet handled the end of the operation before it.
      const result = await acceptedOperationResult(ctx.client, accepted.operationId);
      if (result.state !== 'completed')
        throw new Error(`continue: ${kind}: operation ${accepted.operationId} ended ${result.state}: ${result.reason}`);
      return { operationId: accepted.operationId, result };
    };
    try {
      await submit(lanePrompt(1, half), { context: noWindow });
      this.ctx.log(`continue: ${kind}: the first half done (${h.server.requests.length} requests)`);
      // The first half ran long enough ago for its cache to have expired.
      h.server.cache.clear();
      const from = h.server.requests.length;
      if (kind === 'resumeCompaction') h.server.setContextWindowTokens(this.windowTokens);
      const started = Date.now();
      const second = await submit(lanePrompt(half + 1, work.features), {
        context: kind === 'resume' ? noWindow : { windowTokens: this.windowTokens },
      });
      const wallMs = Date.now() - started;
      const requests = h.server.requests.slice(from);
      const way = this.wayOf(kind, requests, await recordedStepsOf(ctx.client, second.operationId), wallMs, {
        operations: 1,
        result: second.result,
      });
      if (kind !== 'resume') return { way };
      this.transcriptTokens = way.peakContext;
      this.takenOverTokens = promptOf(requests.find(answered)!);
      // A model switch inside the long context: the same one-request note on the same model, then on another.
      h.server.setContextWindowTokens(undefined);
      const probe = `${SWITCH_PROBE} Note where the work stands.`;
      const same = await this.probe(h.server, () => submit(probe, { context: noWindow }));
      const other = await this.probe(h.server, () => submit(probe, { model: SWITCH_MODEL, context: noWindow }));
      return { way, modelSwitch: switchFigures(same, other) };
    } finally {
      // The session stays open for more prompts; its workers stop first, so nothing is in flight.
      await h.close();
      await sessionHandle(ctx.client, sessionId)
        .terminate('bench: done')
        .catch(() => undefined);
      await ctx.removeSandboxes([sessionId]);
    }
  }

  /** A coding task on the branch the first half left: one fresh operation per remaining feature. */
  async handoffWay(): Promise<WayOutcome> {
    const { ctx, work, half } = this;
    const project = path.join(this.dir, 'project-handoff');
    writeProject(project, work, half);
    git(project, 'branch', TASK_BRANCH);
    const bare = path.join(this.dir, 'project-handoff.git');
    git(this.dir, 'clone', '-q', '--bare', project, bare);
    const h = await this.harness('handoff', []);
    const taskId = runId('continue', 'handoff');
    const probeIds: string[] = [];
    try {
      const input: CodingTaskInput = {
        repo: { kind: 'git', url: `file://${bare}` },
        branch: TASK_BRANCH,
        verify: 'npm test',
        handsTaskQueue: h.handsQueue,
        stuck: BENCH_LOOP_LIMITS,
        budget: { maxTurnsPerFeature: 30, maxAttemptsPerFeature: 1 },
      };
      const started = Date.now();
      const handle = await ctx.client.workflow.start(CODING_TASK_WORKFLOW_TYPE, {
        taskQueue: h.brainQueue,
        workflowId: taskId,
        args: [input],
      });
      const result = await codingTaskResult(handle);
      const wallMs = Date.now() - started;
      const failing = result.features.filter((feature) => !feature.passes).map((feature) => feature.id);
      if (result.state !== 'completed' || failing.length > 0)
        throw new Error(
          `continue: handoff: the task ended ${result.state} (${result.reason}); not passing: ${failing.join(', ')}`,
        );
      const steps: RecordedStep[] = [];
      for (const entry of result.ledger) steps.push(...(await recordedStepsOf(ctx.client, entry.operationId)));
      const requests = [...h.server.requests];
      const way = this.wayOf('handoff', requests, steps, wallMs, { operations: result.ledger.length });
      // A model switch at an operation boundary: a fresh context like a feature operation's first
      // request, on the same model (its tools and system prompt are cached), then on another.
      const lastGoal = goalOfSteps(steps.filter((step) => step.kind === 'model'));
      const fresh = (model?: string) => async () => {
        const id = runId('continue', model ? 'boundary-switch' : 'boundary-same');
        probeIds.push(id);
        const handleOf = await ctx.client.workflow.start(OPERATION_WORKFLOW_TYPE, {
          taskQueue: h.brainQueue,
          workflowId: id,
          args: [
            {
              goal: `${SWITCH_PROBE}\n${lastGoal}`,
              handsTaskQueue: h.handsQueue,
              stuck: BENCH_LOOP_LIMITS,
              ...(model ? { model } : {}),
            },
          ],
        });
        const probe = await operationResult(handleOf);
        if (probe.state !== 'completed')
          throw new Error(`continue: boundary probe ended ${probe.state}: ${probe.reason}`);
      };
      const same = await this.probe(h.server, fresh());
      const other = await this.probe(h.server, fresh(SWITCH_MODEL));
      return { way, modelSwitch: switchFigures(same, other) };
    } finally {
      await h.close();
      await ctx.removeSandboxes([sessionIdFor(`task-${taskId}`), ...probeIds]);
    }
  }

  /** Runs `submit` and returns the figures of the one request it made. */
  private async probe(server: ScriptedModelServer, submit: () => Promise<unknown>): Promise<ProbeFigures> {
    const from = server.requests.length;
    await submit();
    const made = server.requests.slice(from).filter(answered);
    if (made.length !== 1) throw new Error(`continue: a switch probe made ${made.length} requests, not one`);
    const request = made[0]!;
    const u = request.usage!;
    const model = request.cacheDetail?.model ?? BENCH_MODEL;
    return {
      promptTokens: promptOf(request),
      cacheWrite: u.cache_creation_input_tokens,
      cacheRead: u.cache_read_input_tokens,
      costUsd: costUsd(
        {
          input: u.input_tokens,
          cacheWrite: u.cache_creation_input_tokens,
          cacheRead: u.cache_read_input_tokens,
          output: u.output_tokens,
        },
        model,
      ),
    };
  }

  private wayOf(
    name: string,
    requests: readonly RecordedRequest[],
    steps: readonly RecordedStep[],
    wallMs: number,
    extra: { operations: number; result?: OperationResult },
  ): ContinueWay {
    const answeredRequests = requests.filter(answered);
    const { usage, peakContext } = usageOf(answeredRequests);
    const prompt = usage.input + usage.cacheWrite + usage.cacheRead;
    const way: ContinueWay = {
      operations: extra.operations,
      requests: answeredRequests.length,
      uncachedInput: usage.input,
      cacheWrite: usage.cacheWrite,
      cacheRead: usage.cacheRead,
      output: usage.output,
      promptTokens: prompt,
      peakContext,
      peakContextPct: round((100 * peakContext) / this.windowTokens, 2),
      overWindowRequests: answeredRequests.filter((r) => promptOf(r) > this.windowTokens).length,
      rejectedRequests: requests.filter((r) => r.status === 400).length,
      cacheHitRate: round(prompt > 0 ? usage.cacheRead / prompt : 0, 4),
      compactions: extra.result?.tokens.compactions ?? steps.filter((step) => step.kind === 'compaction').length,
      editBatches: extra.result?.tokens.editBatches ?? 0,
      costUsd: round(costUsd(usage, BENCH_MODEL), 4),
      wallMs,
      notRead: cacheWriteCauses(cacheWriteRows(requests, steps)),
    };
    this.ctx.log(
      `continue: ${name} done (${way.requests} requests, ${way.promptTokens} prompt tokens, peak ${way.peakContext}, ` +
        `cache hit ${(100 * way.cacheHitRate).toFixed(1)}%, $${way.costUsd.toFixed(2)}, ${(wallMs / 1000).toFixed(1)} s)`,
    );
    return way;
  }
}

const answered = (r: RecordedRequest): boolean => r.path === '/v1/messages' && r.status === 200 && r.usage !== null;
const promptOf = (r: RecordedRequest): number =>
  r.usage ? r.usage.input_tokens + r.usage.cache_creation_input_tokens + r.usage.cache_read_input_tokens : 0;

function switchFigures(same: ProbeFigures, other: ProbeFigures): ModelSwitchFigures {
  return {
    promptTokens: other.promptTokens,
    sameModel: { cacheWrite: same.cacheWrite, cacheRead: same.cacheRead, costUsd: round(same.costUsd, 4) },
    otherModel: { cacheWrite: other.cacheWrite, cacheRead: other.cacheRead, costUsd: round(other.costUsd, 4) },
    extraUsd: round(other.costUsd - same.costUsd, 4),
  };
}

/** The goal of the last operation among `steps` (its first model step's tail). */
function goalOfSteps(steps: readonly RecordedStep[]): string {
  const firsts = steps.filter((step) => step.kind === 'model' && step.input.base.messages === 0);
  const last = firsts[firsts.length - 1];
  if (!last || last.kind !== 'model') return '';
  return last.input.tail.map((block) => (block.type === 'text' ? block.text : '')).join('\n');
}
