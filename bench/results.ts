/**
 * The benchmark's results: the shape of `bench/results/latest.json` (a zod schema, so the run and the
 * smoke test can check that every field is there), and the targets each figure is judged against.
 *
 * Units: milliseconds (`…Ms`), bytes, tokens, US dollars (`costUsd`). Ratios and reductions are
 * fractions (0.8 = 80 %). Every scenario section is optional in the schema because `--only` runs a
 * subset; a full or quick run fills all seven.
 *
 * Definitions used throughout:
 *  - step (overhead, history, concurrency): one model call plus the one cheap tool call it asks for.
 *  - ms per step: the gap between two consecutive model requests of one run as the scripted server
 *    received them, so the plain loop and the harness are timed by the same clock at the same point.
 *    Step k is the gap between requests k and k+1; step 1 (it includes creating the container) is
 *    left out of the step figures and reported as `firstStepMs`.
 */
import { z } from 'zod';

const num = z.number();

export const overheadPointSchema = z.strictObject({
  /** Scripted model latency before each answer starts. */
  latencyMs: num,
  /** Steps per run, and runs per mode. */
  stepsPerRun: num,
  runs: num,
  /** Steps timed per mode (runs × steady-state steps). */
  samples: num,
  /** Median ms per step of the plain in-process loop (same model client, same tool code). */
  plainMsPerStep: num,
  plainP95Ms: num,
  /** Median ms per step of the durable harness (operation workflow, brain + hands workers). */
  durableMsPerStep: num,
  durableP95Ms: num,
  /** durableMsPerStep − plainMsPerStep. */
  addedMsPerStep: num,
  /** durableMsPerStep / plainMsPerStep. */
  ratio: num,
  /** durableP95Ms − plainP95Ms. */
  p95AddedMs: num,
  /** Gap from the first model request to the second (container creation included), medians. */
  firstStepMs: z.strictObject({ plain: num, durable: num }),
});

/**
 * The plain loop's step at model latency 0 with the sandbox's executor (how the harness runs tool
 * commands) and with one `docker exec` per command (how it did before, `AGENT_SANDBOX_EXECUTOR=off`),
 * measured in the same run, alternating: what the executor saves per tool call.
 */
export const plainStepSchema = z.strictObject({
  stepsPerRun: num,
  runs: num,
  /** Steps timed per mode. */
  samples: num,
  executorMsPerStep: num,
  executorP95Ms: num,
  dockerExecMsPerStep: num,
  dockerExecP95Ms: num,
  /** dockerExecMsPerStep − executorMsPerStep (medians). */
  gainMsPerStep: num,
});

/**
 * The durable harness at model latency 0 with `AGENT_WORKFLOW_STACK_TRACES=off` (a second worker
 * process), alternating with the default's runs: what the SDK's stack-trace recording costs per step.
 */
export const stackTracesOffSchema = z.strictObject({
  stepsPerRun: num,
  runs: num,
  samples: num,
  /** The default worker's (stack traces on) and this worker's median step, and their difference. */
  onMsPerStep: num,
  offMsPerStep: num,
  savedMsPerStep: num,
  /** This worker's added overhead over the plain loop (median step − the plain loop's). */
  addedMsPerStep: num,
  /** A workflow task's time in the worker (SDK metrics, mean), stack traces on vs off. */
  workflowTaskOnMs: num,
  workflowTaskOffMs: num,
});

/** Medians of steps `fromStep`–`toStep` of the long runs (model latency 0): does a long run slow down? */
export const overheadSegmentSchema = z.strictObject({
  fromStep: num,
  toStep: num,
  samples: num,
  plainMsPerStep: num,
  durableMsPerStep: num,
  addedMsPerStep: num,
});

/**
 * Where a durable step's time goes, from the history of the longest latency-0 run: medians over its
 * steps of each hand-off (event times are the server's).
 */
export const stepTimelineSchema = z.strictObject({
  /** Workflow task: scheduled → started (dispatch to the worker) and started → completed (the worker's turn plus the completion call). */
  workflowTaskScheduleToStartMs: num,
  workflowTaskStartToCompleteMs: num,
  /** Model step activity (eagerly dispatched with the workflow task that schedules it). */
  modelScheduleToStartMs: num,
  modelStartToCloseMs: num,
  /** Tool activity (on the hands queue: dispatched through the server's matching). */
  toolScheduleToStartMs: num,
  toolStartToCloseMs: num,
  /** Activity completed → the workflow task it causes scheduled. */
  completedToWorkflowTaskMs: num,
});

/** The worker's own figures over the overhead scenario, from the SDK's metrics (means over every call). */
export const workerMetricsSchema = z.strictObject({
  /** Workflow tasks the worker ran, and the mean time it took for one (activation to completion sent). */
  workflowTasks: num,
  workflowTaskExecutionMs: num,
  /** Mean latency of the worker's calls to the server: completing a workflow task, completing an activity. */
  respondWorkflowTaskCompletedMs: num,
  respondActivityTaskCompletedMs: num,
  /** Heartbeat calls to the server (each one a write on the server), and their mean latency. */
  heartbeatCalls: num,
  heartbeatCallMs: num,
  /** Activities the worker ran (model steps and tool calls). */
  activities: num,
  /** Mean time from an activity's start in the worker to its result (absent in older results). */
  activityExecutionMs: num.optional(),
});

/**
 * Where the worker's CPU went during the overhead scenario (`--profile`), from V8 CPU profiles of
 * every thread, from the moment the worker polled (its start-up left out).
 */
export const cpuProfileSchema = z.strictObject({
  /** The `.cpuprofile` files (one per thread), relative to the results directory. */
  files: z.array(z.string()),
  /** Sampled time over all threads, and the part of it that was idle. */
  sampledMs: num,
  idleMs: num,
  /** Busy time per module (package or project file) of at least 0.1 % of it, largest first. */
  byModule: z.array(z.strictObject({ module: z.string(), selfMs: num, share: num })),
  /** The functions with the most self time. */
  topFunctions: z.array(z.strictObject({ function: z.string(), where: z.string(), selfMs: num, share: num })),
  /**
   * Durable steps the profiled worker ran, when it was a separate profiled run (the full bench's
   * `profiledSteps`); absent when `--profile` profiled the timed runs.
   */
  durableSteps: num.optional(),
});

export const historyPointSchema = z.strictObject({
  steps: num,
  /** Events over the whole run chain (continue-as-new followed). */
  events: num,
  /** Encoded protobuf size of every run's history, summed. */
  bytes: num,
  /** Runs in the chain (1 = no continue-as-new). */
  runs: num,
  /** Bytes of message content inside those payloads: goal, tool inputs and outputs, replies. */
  contentBytes: num,
  eventsPerStep: num,
  /**
   * Events of the steps themselves over the whole chain: activity and workflow-task events, except
   * each run's first workflow task (it belongs to the run's start, like its started event).
   */
  stepEvents: num,
  bytesPerStep: num,
  bytesPerStepExcludingContent: num,
  /** Bytes per step added between the previous point and this one (the marginal cost). */
  marginalBytesPerStep: num.nullable(),
  /** Events per step added between the previous point and this one, all of them and the steps' own. */
  marginalEventsPerStep: num.nullable(),
  marginalStepEventsPerStep: num.nullable(),
  wallMs: num,
});

const firstLast = z.strictObject({ first: num, last: num });

/** The prompt tokens of requests that were not read from the cache, by cause (`bench/cache-writes.ts`). */
export const cacheWriteCausesSchema = z.strictObject({
  /** New content: the last reply and the tool results after it. */
  tail: num,
  /** The prefix of a request that found nothing of its prompt sent before: a new conversation, a cold cache, another model. */
  start: num,
  /** Sent again by compaction calls and the first request after each compaction. */
  compaction: num,
  /** Sent again by requests carrying a clear batch (the prefix after the first cleared result). */
  clearBatch: num,
  /** Sent before in exactly that prefix and not read back (breakpoint moved or missing, lookback, TTL). */
  missed: num,
  /** Anything else sent again: a changed system prompt, tools or model. */
  changed: num,
});

/** One answered request of a run, and where its prompt tokens came from. */
export const cacheWriteRowSchema = z.strictObject({
  /** 1-based, in the order the server answered them. */
  index: num,
  /** `turn 12`, `turn 40 + clear batch 2 (17 results)`, `compaction 1 (threshold)`. */
  label: z.string(),
  kind: z.enum(['turn', 'clearBatch', 'compaction', 'afterCompaction']),
  prompt: num,
  cacheRead: num,
  cacheWrite: num,
  uncached: num,
  /** Not read, new: the last reply and the tool results after it. */
  tail: num,
  /** Not read, and nothing of the prompt sent before: the prefix a conversation starts with. */
  start: num,
  /** Not read, sent before in exactly that prefix. */
  missed: num,
  /** Not read, sent before but changed (an edit, a compaction, another system prompt or model). */
  changed: num,
});

export const tokenWaySchema = z.strictObject({
  /** Requests answered (model turns, and compaction calls where there are any). */
  requests: num,
  /** Prompt tokens neither read from nor written to the cache, summed over requests. */
  uncachedInput: num,
  cacheWrite: num,
  cacheRead: num,
  output: num,
  /** Largest prompt of one request (uncached + cache write + cache read). */
  peakContext: num,
  /** `peakContext` as a percentage of the model's context window (`tokens.windowTokens`). */
  peakContextPct: num,
  /** Cache reads / prompt tokens over all requests. */
  cacheHitRate: num,
  /** Answered requests whose prompt was over the window: a real model would have refused them (ways run without a window). */
  overWindowRequests: num,
  /** Requests the server refused with 400 (the harness way runs against the window). */
  rejectedRequests: num,
  compactions: num,
  editBatches: num,
  completed: z.boolean(),
  costUsd: num,
  wallMs: num,
  /** The not-read prompt tokens by cause. */
  notRead: cacheWriteCausesSchema,
});

export const editingSweepPointSchema = z.strictObject({
  name: z.string(),
  /** The operation's `context.editing` of this point (defaults fill the rest). */
  editing: z.record(z.string(), z.unknown()),
  turns: num,
  promptTokens: num,
  cacheWrite: num,
  cacheRead: num,
  uncachedInput: num,
  cacheHitRate: num,
  editBatches: num,
  compactions: num,
  peakContextPct: num,
  costUsd: num,
  notRead: cacheWriteCausesSchema,
});

/** One way of continuing the work (the continuation's requests only). */
export const continueWaySchema = z.strictObject({
  /** Operations the continuation ran (1 for the resume ways; one per feature for the handoff). */
  operations: num,
  requests: num,
  uncachedInput: num,
  cacheWrite: num,
  cacheRead: num,
  output: num,
  /** uncachedInput + cacheWrite + cacheRead. */
  promptTokens: num,
  peakContext: num,
  /** `peakContext` as a percentage of the model's window (`continue.windowTokens`). */
  peakContextPct: num,
  /** Answered requests over the window (the resume way runs without one). */
  overWindowRequests: num,
  rejectedRequests: num,
  cacheHitRate: num,
  compactions: num,
  editBatches: num,
  costUsd: num,
  wallMs: num,
  notRead: cacheWriteCausesSchema,
});

/** One request on the same model and the same request on another, and what the switch added. */
export const modelSwitchSchema = z.strictObject({
  promptTokens: num,
  sameModel: z.strictObject({ cacheWrite: num, cacheRead: num, costUsd: num }),
  otherModel: z.strictObject({ cacheWrite: num, cacheRead: num, costUsd: num }),
  extraUsd: num,
});

export const recoveryMeasurementSchema = z.strictObject({
  /** What the worker was doing when it was killed: a `bash` call, or a model call. */
  during: z.enum(['tool', 'model']),
  /** The interrupted activity's heartbeat timeout, as scheduled. */
  heartbeatTimeoutMs: num,
  /**
   * SIGKILL of the worker → the operation's next effect: the next model request after the tool call
   * (tool case), the retried model request (model case).
   */
  killToProgressMs: num,
  completed: z.boolean(),
  /** SIGKILL → the interrupted activity completed (from the history). */
  killToActivityCompletedMs: num,
  /**
   * The interrupted attempt's last heartbeat the server had recorded → SIGKILL (from a describe just
   * before the kill): the heartbeat timeout runs from there, not from the kill.
   */
  lastHeartbeatBeforeKillMs: num.optional(),
  /** SIGKILL → the retried attempt started on the standby worker (from the history). */
  killToRetryStartedMs: num.optional(),
  /** Attempts of the interrupted activity. */
  attempts: num,
  /**
   * Tool case: what the retried `bash` call returned — the journalled output, a synthetic
   * "interrupted" result, or something else. Model case: `n/a`.
   */
  toolResult: z.enum(['recorded', 'interrupted', 'other', 'n/a']),
  /** The command's side effect, counted in the sandbox (tool case; 1 = it ran once). */
  effects: num.nullable(),
});

/** One step of an environment build, timed from the operation's live progress events. */
export const buildStepSchema = z.strictObject({
  /** 1-based, as the build numbers it (`step 2/5`). */
  step: num,
  /** What the step does (`apt-get install python3 python3-pip …`, `setup 1: …`). */
  title: z.string(),
  /**
   * Its first progress event → the next step's; the last step's runs to the preparation's completion
   * in the history, so it includes committing the image and recording it on the workspace. The
   * events travel in batches sent every second, so each figure is ±1 s.
   */
  ms: num,
});

/**
 * What a workspace's environment costs. Every run is an operation on `examples/calculator` whose one
 * tool call is `bash: true`, with the scripted model answering at once (so the figures are the
 * harness's own time); "start" is submit → the second model request (the first tool call's result is
 * in: the environment is prepared at the first tool call).
 */
export const environmentSchema = z.strictObject({
  /**
   * The `environment` input of the cold and warm runs: a toolchain and a setup command that writes a
   * marker into the image — the cold runs' marker is their run id (a new content hash each run, so the
   * image is built), the warm runs' a fixed word (built once, then reused).
   */
  spec: z.record(z.string(), z.unknown()),
  /** The scripted model's latency per answer. */
  modelLatencyMs: num,
  coldRuns: num,
  /** Median time of the cold runs' `prepareEnvironment` activity, scheduled → completed (history): resolve, build, record on the workspace. */
  coldBuildMs: num,
  /** Median of the builder's own time (`PreparedEnvironment.buildMs`): build container → committed image. */
  coldBuilderMs: num,
  /** Median submit → second model request of the cold runs: what a person waits for the first tool result. */
  coldStartMs: num,
  /** `coldBuildMs` of each cold run. */
  coldSamples: z.array(num),
  /** The first cold build's steps. */
  coldBuildSteps: z.array(buildStepSchema),
  /**
   * The first cold build's time before its first step (±1 s): the preparation scheduled → the first
   * step's progress event — resolving the recipe, probing the base image, starting the build container.
   */
  coldBuildLeadMs: num,
  /** Size of the cold environment's image and of the default image it is built on. */
  coldImageBytes: num,
  defaultImageBytes: num,
  /** Runs of each warm kind (after one warm-up of each, not counted). */
  warmRuns: num,
  /** The cached environment's image. */
  warmImage: z.string(),
  /** Whether this run's warm-up built it (false: it existed already). */
  warmImageBuiltByRun: z.boolean(),
  /** Median start with the cached environment, and with `environment: "default"`. */
  warmStartMs: num,
  defaultStartMs: num,
  /** warmStartMs / defaultStartMs. */
  warmStartRatio: num,
  samples: z.strictObject({ warm: z.array(num), default: z.array(num) }),
  /** Median `prepareEnvironment` time (scheduled → completed) of each kind: the environment step's own part of the start. */
  prepareMs: z.strictObject({ warm: num, default: num }),
});

/** CPU per step in ms: the whole machine's busy time and the parts of it the targets name. */
const cpuPerStepSchema = z.strictObject({
  total: num,
  containers: num,
  /** Of `containers`: inside them (executors, run wrappers, shells, probes, git) and Docker's shims and runc. */
  containersInside: num.optional(),
  containerShims: num.optional(),
  worker: num,
  server: num,
});

/**
 * Temporal's floor for the harness's step shape (`bench/floor/workflow.ts`: per step one no-op
 * activity on a brain queue and one on a hands queue), on the same server with the harness's worker
 * settings, measured in the same run.
 */
export const floorSchema = z.strictObject({
  /** One workflow at a time: steps per run, runs, steps timed (the first gap of each run left out). */
  stepsPerRun: num,
  runs: num,
  samples: num,
  /** Median and p95 gap between consecutive brain activities of one workflow. */
  msPerStep: num,
  p95Ms: num,
  /**
   * The same at the overhead scenario's second model latency (each "model call" takes so long): the
   * gap less the latency is Temporal's own time per step when the worker idles between steps, as the
   * harness's workers do while the model answers (absent in older results).
   */
  atModelLatency: z
    .strictObject({
      latencyMs: num,
      stepsPerRun: num,
      samples: num,
      msPerStep: num,
      addedMsPerStep: num,
      p95AddedMs: num,
    })
    .optional(),
  /** History bytes per step of one of those runs (its events, framing included; absent in older results). */
  historyBytesPerStep: num.optional(),
  /** As many workflows × steps started at once as the concurrency scenario's operations. */
  workflows: num,
  stepsPerWorkflow: num,
  wallMs: num,
  stepsPerSecond: num,
  /** CPU per step of that run (Linux): the whole machine, the worker process, the Temporal server. */
  cpuMsPerStep: z.strictObject({ total: num, worker: num, server: num }).optional(),
});

/** One side of the cluster scenario: the same load on one server and set of worker processes. */
const clusterSideSchema = z.strictObject({
  completed: num,
  failed: num,
  wallMs: num,
  stepsPerSecond: num,
  /** Median and p95 time from submit to completion of one operation. */
  operationMs: z.strictObject({ median: num, p95: num }),
  /** Each worker process: its role and peak RSS (VmHWM). */
  workers: z.array(z.strictObject({ role: z.string(), peakRssMb: num })),
  /** Operations each hands host ran (by the host their result names; empty with one worker for all). */
  hosts: z.record(z.string(), num),
});

export const resultsSchema = z.strictObject({
  /**
   * 4: the continue section; 3: every token way says where its prompt tokens not read from the cache
   * came from (`notRead`), and the harness way's requests are listed (`harnessRequests`); 2: the
   * tokens section has five ways, the window figures and the editing sweep.
   */
  schemaVersion: z.literal(4),
  profile: z.enum(['full', 'quick', 'smoke']),
  startedAt: z.string(),
  finishedAt: z.string(),
  wallMs: num,
  machine: z.strictObject({
    cpuModel: z.string(),
    cores: num,
    memoryGb: num,
    os: z.string(),
    node: z.string(),
    docker: z.string(),
    temporal: z.string(),
    /** 1-minute load average when the run started and ended (the machine may be shared). */
    loadAverage: z.strictObject({ start: num, end: num }),
  }),
  setup: z.strictObject({
    /** `dev-server (sqlite file)` when the bench started its own, else the address used. */
    temporal: z.string(),
    temporalAddress: z.string(),
    dynamicConfig: z.record(z.string(), z.unknown()),
    sandboxImage: z.string(),
    model: z.string(),
    scenarios: z.array(z.string()),
    parameters: z.record(z.string(), z.unknown()),
  }),
  floor: floorSchema.optional(),
  /**
   * CPU per step of the concurrency run (Linux), in ms: the whole machine, the operations'
   * containers (shims, runc, executors, tool processes), the worker process, the Temporal server.
   */
  cpu: z.strictObject({ msPerStep: cpuPerStepSchema }).optional(),
  overhead: z
    .strictObject({
      latency0: overheadPointSchema,
      latency200: overheadPointSchema,
      latency500: overheadPointSchema,
      /** Steps 1–10, 10–100, 100–500 of the latency-0 runs (as far as they go). */
      segments: z.array(overheadSegmentSchema),
      plainStep: plainStepSchema,
      stackTracesOff: stackTracesOffSchema.optional(),
      /** Where the durable harness's worker process runs (a child process of the bench). */
      worker: z.string(),
      timeline: stepTimelineSchema,
      /** The same for the first durable run at model latency 200 ms. */
      timeline200: stepTimelineSchema.optional(),
      workerMetrics: workerMetricsSchema,
      cpuProfile: cpuProfileSchema.optional(),
    })
    .optional(),
  history: z
    .strictObject({
      points: z.array(historyPointSchema),
      bytesPerStep: firstLast,
      bytesPerStepExcludingContent: firstLast,
      eventsPerStep: firstLast,
      /** The largest bytes-per-step-excluding-content of any point. */
      maxBytesPerStepExcludingContent: num,
      /** Where the bytes of the last point go: per event type, per step, largest first. */
      lastPointByEventType: z.array(z.strictObject({ eventType: z.string(), eventsPerStep: num, bytesPerStep: num })),
      /** The last point's marginal events per step: all, and the steps' own (activity and workflow-task events). */
      marginalEventsPerStep: num.nullable(),
      marginalStepEventsPerStep: num.nullable(),
      /** Whether the server's continue-as-new suggestion was lowered for this run. */
      suggestContinueAsNewEvents: num.nullable(),
    })
    .optional(),
  tokens: z
    .strictObject({
      turns: num,
      /** The model's context window the figures are measured against. */
      windowTokens: num,
      /** Characters of text the model writes each turn besides its tool call. */
      replyChars: num,
      outputBytes: z.strictObject({ min: num, max: num, total: num }),
      naive: tokenWaySchema,
      cachedFullOutput: tokenWaySchema,
      spillOnly: tokenWaySchema,
      spillEditing: tokenWaySchema,
      /** Spill + editing + compaction: the harness's defaults, against the window. */
      harness: tokenWaySchema,
      /** harness.peakContextPct and harness.cacheHitRate, for the targets. */
      peakContextPct: num,
      cacheHitRate: num,
      /** 1 − harness.uncachedInput / naive.uncachedInput. */
      uncachedReduction: num,
      /** 1 − spillOnly prompt tokens / cachedFullOutput prompt tokens (prompt = uncached + write + read). */
      spillReduction: num,
      /** 1 − spillEditing prompt tokens / spillOnly prompt tokens. */
      editingReduction: num,
      /** 1 − harness.costUsd / other.costUsd. */
      costReduction: z.strictObject({ vsNaive: num, vsCachedFullOutput: num, vsSpillOnly: num }),
      /** Context-editing settings on a shorter run (compaction on, against the window): cache writes against tokens saved. */
      editingSweep: z.array(editingSweepPointSchema),
      /** The harness way's requests, one row each: where the prompt tokens not read from the cache came from. */
      harnessRequests: z.array(cacheWriteRowSchema),
    })
    .optional(),
  continue: z
    .strictObject({
      features: num,
      /** Features the first agent did before the work is continued. */
      firstHalf: num,
      docBytes: num,
      replyChars: num,
      windowTokens: num,
      /** The one conversation at the end of the resume way (its largest prompt). */
      transcriptTokens: num,
      /** The conversation the resume way took over (its first continuation request). */
      takenOverTokens: num,
      resume: continueWaySchema,
      resumeCompaction: continueWaySchema,
      handoff: continueWaySchema,
      /** handoff ÷ resume, in cost and in prompt tokens. */
      handoffVsResume: z.strictObject({ cost: num, promptTokens: num }),
      handoffVsResumeCompaction: z.strictObject({ cost: num, promptTokens: num }),
      /** A model switch at an operation boundary (a fresh context) and inside the long context. */
      modelSwitch: z.strictObject({
        /** The model switched to (priced like the bench's model, so only the cache differs). */
        toModel: z.string(),
        boundary: modelSwitchSchema,
        inside: modelSwitchSchema,
      }),
    })
    .optional(),
  ttft: z
    .strictObject({
      runs: num,
      /** Median submit → first model request, operation that needs no tool and has no repository. */
      noSandboxMs: num,
      /** Median, default lazy provisioning (repository seeded at the first tool call). */
      lazyMs: num,
      /** Median, `eagerSandbox: true` (seeding scheduled with the first model call). */
      eagerMs: num,
      /** Median submit → second model request (the first tool call's result is in): what eager buys. */
      lazyFirstToolRoundTripMs: num,
      eagerFirstToolRoundTripMs: num,
      samples: z.strictObject({ noSandbox: z.array(num), lazy: z.array(num), eager: z.array(num) }),
      /** Whether `eagerSandbox` without a repository creates the container before the first tool call. */
      eagerWithoutRepoProvisions: z.boolean(),
      /** lazyMs / noSandboxMs. */
      ratio: num,
    })
    .optional(),
  concurrency: z
    .strictObject({
      operations: num,
      stepsPerOperation: num,
      completed: num,
      failed: num,
      wallMs: num,
      stepsPerSecond: num,
      /** The worker's `AGENT_STICKY_FAILOVER` during the run. */
      stickyFailover: z.string().optional(),
      /** VmHWM of the worker process (brain + hands in one child process). */
      workerPeakRssMb: num,
      /**
       * How late the worker's main event loop ran during the run (99th percentile and worst, ms):
       * activities, their heartbeats and the SDK's calls run there, so a heartbeat is at least this late.
       */
      workerEventLoopDelayMs: z.strictObject({ p99: num, max: num }).optional(),
      /**
       * The worker's main thread (JavaScript: activity code, the SDK's side of workflow tasks and its
       * calls into its core; the workflow code itself runs on the SDK's workflow thread) over the run,
       * in seconds: on a core, and runnable but waiting for one (Linux schedstat).
       * Their sum against the wall time is how much of the run that one thread had work.
       */
      workerMainThread: z.strictObject({ onCpuS: num, waitingS: num }).optional(),
      /** The worker's SDK metrics over the run: its heartbeat calls, activity and workflow-task times. */
      workerMetrics: workerMetricsSchema.optional(),
      /** Median and p95 time from submit to completion of one operation. */
      operationMs: z.strictObject({ median: num, p95: num }),
      /**
       * Timeouts in the operations' histories — a live but slow worker that misses a heartbeat
       * timeout shows up as an activity timeout (and a retried attempt), one that misses its sticky
       * queue's schedule-to-start timeout as a workflow-task timeout. 0 means no false timeouts.
       */
      timeouts: z.strictObject({
        activity: num,
        workflowTask: num,
        retriedActivities: num,
        /**
         * Of `workflowTask`: how many were a task left too long on a worker's sticky queue
         * (schedule-to-start: the worker that ran the workflow last did not poll in time; the task
         * moves to the shared queue and is replayed there) rather than a task that ran too long.
         */
        workflowTaskStickyScheduleToStart: num.optional(),
        /** What the retried activities' earlier attempts failed with (their last failure), most frequent first. */
        retryCauses: z
          .array(
            z.strictObject({
              activity: z.string(),
              failure: z.string(),
              count: num,
              /**
               * Of these, how many had a heartbeat recorded before the timeout (a heartbeat timeout
               * with none: the attempt's first heartbeat never reached the server).
               */
              withHeartbeat: num.optional(),
            }),
          )
          .optional(),
      }),
      /** Where the machine's CPU went during the run (Linux), to see what bounds the throughput. */
      cpu: z
        .strictObject({
          wallS: num,
          cores: num,
          machineBusyS: num,
          byGroup: z.array(z.strictObject({ label: z.string(), cpuS: num, shareOfMachine: num })),
        })
        .optional(),
    })
    .optional(),
  environment: environmentSchema.optional(),
  cluster: z
    .strictObject({
      operations: num,
      stepsPerOperation: num,
      /** History shards of the cluster. */
      shards: num,
      /** One worker process (brain and hands) on the bench's dev server. */
      devServer: clusterSideSchema,
      /** Two brain worker processes and two hands hosts (two Docker engines) on the cluster. */
      cluster: clusterSideSchema,
    })
    .optional(),
  recovery: z
    .strictObject({
      tool: recoveryMeasurementSchema,
      model: recoveryMeasurementSchema,
    })
    .optional(),
  targets: z.array(
    z.strictObject({
      id: z.string(),
      description: z.string(),
      target: z.string(),
      measured: z.string(),
      verdict: z.enum(['pass', 'fail', 'not run']),
    }),
  ),
  notes: z.array(z.string()),
});

export type BenchResults = z.infer<typeof resultsSchema>;
export type OverheadResult = NonNullable<BenchResults['overhead']>;
export type OverheadPoint = z.infer<typeof overheadPointSchema>;
export type HistoryResult = NonNullable<BenchResults['history']>;
export type HistoryPoint = z.infer<typeof historyPointSchema>;
export type TokensResult = NonNullable<BenchResults['tokens']>;
export type TokenWay = z.infer<typeof tokenWaySchema>;
export type EditingSweepPoint = z.infer<typeof editingSweepPointSchema>;
export type CacheWriteCauses = z.infer<typeof cacheWriteCausesSchema>;
export type CacheWriteRow = z.infer<typeof cacheWriteRowSchema>;
export type TtftResult = NonNullable<BenchResults['ttft']>;
export type ContinueResult = NonNullable<BenchResults['continue']>;
export type ContinueWay = z.infer<typeof continueWaySchema>;
export type ModelSwitchFigures = z.infer<typeof modelSwitchSchema>;
export type ConcurrencyResult = NonNullable<BenchResults['concurrency']>;
export type ClusterResult = NonNullable<BenchResults['cluster']>;
export type ClusterSide = z.infer<typeof clusterSideSchema>;
export type FloorResult = z.infer<typeof floorSchema>;
export type CpuPerStep = z.infer<typeof cpuPerStepSchema>;
export type RecoveryResult = NonNullable<BenchResults['recovery']>;
export type EnvironmentResult = z.infer<typeof environmentSchema>;
export type BuildStepTime = z.infer<typeof buildStepSchema>;
export type RecoveryMeasurement = z.infer<typeof recoveryMeasurementSchema>;
export type OverheadSegment = z.infer<typeof overheadSegmentSchema>;
export type PlainStep = z.infer<typeof plainStepSchema>;
export type StackTracesOff = z.infer<typeof stackTracesOffSchema>;
export type CpuProfileSummary = z.infer<typeof cpuProfileSchema>;
export type StepTimeline = z.infer<typeof stepTimelineSchema>;
export type WorkerMetrics = z.infer<typeof workerMetricsSchema>;
export type TargetVerdict = BenchResults['targets'][number];

export const SCENARIOS = [
  'floor',
  'overhead',
  'history',
  'tokens',
  'continue',
  'ttft',
  'concurrency',
  'recovery',
  'environment',
  'cluster',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** Checks a results object; returns the problems (empty when valid). */
export function validateResults(value: unknown): string[] {
  const parsed = resultsSchema.safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`);
}

// ---- targets ----

/**
 * Added ms per step at the median, model latency 0 and 200 ms (runs of at least 100 steps): at most
 * this × the floor's ms per step when the floor ran, else `TARGET_ADDED_MS`.
 */
export const TARGET_ADDED_FLOOR_RATIO = 1.5;
export const TARGET_ADDED_MS = 25;
/** durable / plain at 500 ms model latency. */
export const TARGET_RATIO_500 = 1.05;
/** last bytes-per-step ≤ this × first. */
export const TARGET_HISTORY_FLAT = 1.25;
/** History bytes per step, message content excluded (2 KiB). */
export const TARGET_HISTORY_BYTES = 2048;
/** History events per model+tool step (the step's activity and workflow-task events). */
export const TARGET_STEP_EVENTS = 12;
export const TARGET_UNCACHED_REDUCTION = 0.7;
/** The harness's largest prompt, as % of the window (the compaction threshold). */
export const TARGET_PEAK_CONTEXT_PCT = 70;
/** Cache reads / prompt tokens of the harness. */
export const TARGET_CACHE_HIT = 0.97;
/** The handoff's cost as a share of resuming the transcript's. */
export const TARGET_HANDOFF_COST_SHARE = 0.05;
/** lazy TTFT ≤ this × no-sandbox TTFT. */
export const TARGET_LAZY_TTFT = 1.1;
/** Start of an operation in a cached environment ≤ this × the same operation on the default image. */
export const TARGET_WARM_START_RATIO = 1.1;
export const TARGET_RECOVERY_MS = 5_000;
export const TARGET_CONCURRENCY_OPERATIONS = 200;
/** Steps per second of the concurrency run: at least this share of the floor's when it ran, else `TARGET_STEPS_PER_SECOND`. */
export const TARGET_FLOOR_THROUGHPUT_SHARE = 1 / 3;
export const TARGET_STEPS_PER_SECOND = 50;
/** CPU ms per step of the concurrency run: the machine in total and its parts. */
export const TARGET_CPU_MS_PER_STEP = { total: 40, containers: 12, worker: 10, server: 15 } as const;
export const TARGET_WORKER_RSS_MB = 1024;

const ms = (value: number): string => `${value.toFixed(1)} ms`;
const pct = (value: number): string => `${(value * 100).toFixed(1)} %`;

/** The verdict for every target, from whatever scenarios ran. */
export function evaluateTargets(results: Omit<BenchResults, 'targets' | 'notes'>): TargetVerdict[] {
  const rows: TargetVerdict[] = [];
  const add = (
    id: string,
    description: string,
    target: string,
    measured: string | undefined,
    pass: boolean | undefined,
  ) =>
    rows.push({
      id,
      description,
      target,
      measured: measured ?? '–',
      verdict: pass === undefined ? 'not run' : pass ? 'pass' : 'fail',
    });

  const o = results.overhead;
  const floor = results.floor;
  const addedLimit = floor ? TARGET_ADDED_FLOOR_RATIO * floor.msPerStep : TARGET_ADDED_MS;
  for (const [latency, point] of [
    [0, o?.latency0],
    [200, o?.latency200],
  ] as const) {
    add(
      `overhead-added-${latency}`,
      `added overhead per step, median, model latency ${latency} ms${point ? ` (${point.runs} × ${point.stepsPerRun} steps)` : ''}`,
      floor
        ? `≤ ${TARGET_ADDED_FLOOR_RATIO} × the floor's step (${ms(floor.msPerStep)}): ≤ ${ms(addedLimit)}`
        : `≤ ${TARGET_ADDED_MS} ms`,
      point &&
        `${ms(point.addedMsPerStep)}${floor ? ` (×${(point.addedMsPerStep / floor.msPerStep).toFixed(2)} the floor)` : ''}` +
          (latency > 0 && floor?.atModelLatency?.latencyMs === latency
            ? `; the floor's own step at ${latency} ms model latency: ${ms(floor.atModelLatency.addedMsPerStep)} beyond it (×${(point.addedMsPerStep / floor.atModelLatency.addedMsPerStep).toFixed(2)})`
            : ''),
      point && point.addedMsPerStep <= addedLimit,
    );
  }
  add(
    'plain-step-executor',
    `plain step at model latency 0 with the sandbox executor vs a \`docker exec\` per tool call${o ? ` (${o.plainStep.runs} × ${o.plainStep.stepsPerRun} steps each)` : ''}`,
    'faster than `docker exec`',
    o &&
      `${ms(o.plainStep.executorMsPerStep)} vs ${ms(o.plainStep.dockerExecMsPerStep)} (${ms(o.plainStep.gainMsPerStep)} saved per step)`,
    o && o.plainStep.executorMsPerStep < o.plainStep.dockerExecMsPerStep,
  );
  add(
    'overhead-ratio-500',
    'durable / plain ms per step at 500 ms model latency',
    `≤ ${TARGET_RATIO_500}`,
    o && o.latency500.ratio.toFixed(3),
    o && o.latency500.ratio <= TARGET_RATIO_500,
  );

  const h = results.history;
  add(
    'history-events',
    "history events per model+tool step (marginal, the step's activity and workflow-task events)",
    `≤ ${TARGET_STEP_EVENTS}`,
    h?.marginalStepEventsPerStep == null
      ? undefined
      : `${h.marginalStepEventsPerStep.toFixed(2)} (all events: ${h.marginalEventsPerStep!.toFixed(2)})`,
    h?.marginalStepEventsPerStep == null ? undefined : h.marginalStepEventsPerStep <= TARGET_STEP_EVENTS,
  );
  const longest = h?.points[h.points.length - 1];
  add(
    'history-size',
    `history bytes per step excluding message content${longest ? ` (${longest.steps}-step run; a 10-step run adds the operation's fixed cost: ${h!.points[0]!.bytesPerStepExcludingContent.toFixed(0)} B)` : ''}`,
    `≤ ${TARGET_HISTORY_BYTES} B (2 KiB)`,
    longest &&
      `${longest.bytesPerStepExcludingContent.toFixed(0)} B` +
        (results.floor?.historyBytesPerStep
          ? ` (the floor's step: ${results.floor.historyBytesPerStep.toFixed(0)} B; ×${(longest.bytesPerStepExcludingContent / results.floor.historyBytesPerStep).toFixed(2)})`
          : ''),
    longest && longest.bytesPerStepExcludingContent <= TARGET_HISTORY_BYTES,
  );
  add(
    'history-flat',
    'history bytes per step stay flat (last point vs first)',
    `last ≤ ${TARGET_HISTORY_FLAT} × first`,
    h &&
      `${h.bytesPerStep.last.toFixed(0)} vs ${h.bytesPerStep.first.toFixed(0)} B (×${(h.bytesPerStep.last / h.bytesPerStep.first).toFixed(2)})`,
    h && h.bytesPerStep.last <= TARGET_HISTORY_FLAT * h.bytesPerStep.first,
  );

  const t = results.tokens;
  add(
    'tokens-uncached',
    'uncached input tokens, harness vs naive loop',
    `≥ ${pct(TARGET_UNCACHED_REDUCTION)} lower`,
    t && `${pct(t.uncachedReduction)} lower`,
    t && t.uncachedReduction >= TARGET_UNCACHED_REDUCTION,
  );
  add(
    'tokens-no-400',
    `the long-output run completes against the ${t ? t.windowTokens.toLocaleString('en-US') : ''}-token window with no 400`,
    'completed, 0 refused',
    t && `${t.harness.completed ? 'completed' : 'not completed'}, ${t.harness.rejectedRequests} refused`,
    t && t.harness.completed && t.harness.rejectedRequests === 0,
  );
  add(
    'tokens-peak-context',
    'largest prompt of the harness run, % of the context window',
    `≤ ${TARGET_PEAK_CONTEXT_PCT} %`,
    t && `${t.peakContextPct.toFixed(1)} %`,
    t && t.peakContextPct <= TARGET_PEAK_CONTEXT_PCT,
  );
  add(
    'tokens-cache-hit',
    'cache reads / prompt tokens of the harness run',
    `≥ ${pct(TARGET_CACHE_HIT)}`,
    t && pct(t.cacheHitRate),
    t && t.cacheHitRate >= TARGET_CACHE_HIT,
  );

  const w = results.continue;
  add(
    'continue-handoff-cost',
    `continuing the work (${w ? `${w.features - w.firstHalf} of ${w.features} features` : 'the second half'}): handoff vs resuming the transcript, cost`,
    `≤ ${pct(TARGET_HANDOFF_COST_SHARE)} of resume's`,
    w &&
      `${pct(w.handoffVsResume.cost)} ($${w.handoff.costUsd.toFixed(2)} vs $${w.resume.costUsd.toFixed(2)}; prompt tokens ${pct(w.handoffVsResume.promptTokens)})`,
    w && w.handoffVsResume.cost <= TARGET_HANDOFF_COST_SHARE,
  );

  const f = results.ttft;
  add(
    'ttft-lazy',
    'time to first model request, lazy provisioning vs no sandbox',
    `≤ ${TARGET_LAZY_TTFT} × no-sandbox`,
    f && `${ms(f.lazyMs)} vs ${ms(f.noSandboxMs)} (×${f.ratio.toFixed(2)})`,
    f && f.ratio <= TARGET_LAZY_TTFT,
  );

  const e = results.environment;
  add(
    'environment-warm-start',
    'submit → first tool result in, operation in a cached environment vs on the default image',
    `≤ ${TARGET_WARM_START_RATIO} × default`,
    e && `${ms(e.warmStartMs)} vs ${ms(e.defaultStartMs)} (×${e.warmStartRatio.toFixed(2)})`,
    e && e.warmStartRatio <= TARGET_WARM_START_RATIO,
  );

  const r = results.recovery;
  for (const during of ['tool', 'model'] as const) {
    const m = r?.[during];
    add(
      `recovery-${during}`,
      `worker SIGKILLed during a ${during} call: kill → progress, and the run completes`,
      `≤ ${TARGET_RECOVERY_MS / 1000} s, completed`,
      m && `${(m.killToProgressMs / 1000).toFixed(1)} s, ${m.completed ? 'completed' : 'not completed'}`,
      m && m.killToProgressMs <= TARGET_RECOVERY_MS && m.completed,
    );
  }

  const c = results.concurrency;
  add(
    'concurrency',
    `${c?.operations ?? TARGET_CONCURRENCY_OPERATIONS} operations × ${c?.stepsPerOperation ?? 20} steps started at once on one worker process all complete, no false timeouts`,
    `all completed (${TARGET_CONCURRENCY_OPERATIONS} in the full run), no activity retried, no timeout`,
    c &&
      `${c.completed} of ${c.operations} completed; timeouts: ${c.timeouts.retriedActivities} retried activities, ${c.timeouts.workflowTask} workflow-task timeouts`,
    c &&
      c.completed === c.operations &&
      c.timeouts.activity === 0 &&
      c.timeouts.retriedActivities === 0 &&
      c.timeouts.workflowTask === 0,
  );
  const throughputLimit = floor ? floor.stepsPerSecond * TARGET_FLOOR_THROUGHPUT_SHARE : TARGET_STEPS_PER_SECOND;
  add(
    'concurrency-throughput',
    'steps per second over the concurrency run',
    floor
      ? `≥ 1/3 of the floor's ${floor.stepsPerSecond.toFixed(1)}: ≥ ${throughputLimit.toFixed(1)}`
      : `≥ ${TARGET_STEPS_PER_SECOND}`,
    c &&
      `${c.stepsPerSecond.toFixed(1)}${floor ? ` (${pct(c.stepsPerSecond / floor.stepsPerSecond)} of the floor)` : ''}`,
    c && c.stepsPerSecond >= throughputLimit,
  );
  const cpu = results.cpu?.msPerStep;
  const cpuParts = ['total', 'containers', 'worker', 'server'] as const;
  add(
    'cpu-per-step',
    'CPU per step of the concurrency run: machine total, containers, worker, server',
    cpuParts.map((part) => `${part} ≤ ${TARGET_CPU_MS_PER_STEP[part]}`).join(', ') + ' ms',
    cpu &&
      cpuParts
        .map(
          (part) =>
            `${part} ${cpu[part].toFixed(1)}` +
            (part === 'containers' && cpu.containersInside !== undefined && cpu.containerShims !== undefined
              ? ` (inside them ${cpu.containersInside.toFixed(1)}, their shims and runc ${cpu.containerShims.toFixed(1)})`
              : ''),
        )
        .join(', ') +
        ' ms' +
        (floor?.cpuMsPerStep ? ` (floor: total ${floor.cpuMsPerStep.total.toFixed(1)} ms)` : ''),
    cpu && cpuParts.every((part) => cpu[part] <= TARGET_CPU_MS_PER_STEP[part]),
  );
  add(
    'concurrency-rss',
    'worker peak RSS during the concurrency run',
    `≤ ${TARGET_WORKER_RSS_MB / 1024} GiB`,
    c && `${c.workerPeakRssMb.toFixed(0)} MiB`,
    c && c.workerPeakRssMb <= TARGET_WORKER_RSS_MB,
  );
  return rows;
}
