/**
 * The harness's own Prometheus metrics, beside the Temporal SDK's, on the worker's metrics endpoint
 * (`AGENT_METRICS_ADDRESS`; without it nothing here runs). Recorded once, at the activity boundary,
 * from what each activity returns — the model step's and compaction's usage, a tool call's name,
 * replay policy and egress — so a replayed workflow never counts twice (it does not run activities
 * again) and a retried activity counts its attempts. Names and labels are listed in docs/operations.md.
 */
import type { MetricCounter, MetricGauge, MetricHistogram, MetricMeter } from '@temporalio/common';
import type Docker from 'dockerode';
import { COMPACT_CONTEXT_ACTIVITY } from '../common/context';
import type { TokenUsage } from '../common/model-types';
import { costUsd } from '../common/pricing';
import { SANDBOX_LABELS } from '../common/sandbox-names';
import type { AttemptObserver } from './attempts';

/** The instruments, made once per process on the runtime's meter. */
export interface HarnessMetrics {
  tokens: MetricCounter;
  costMicroUsd: MetricCounter;
  modelLatency: MetricHistogram;
  toolLatency: MetricHistogram;
  activityRetries: MetricCounter;
  compactions: MetricCounter;
  egressRefusals: MetricCounter;
  liveSandboxes: MetricGauge;
}

export function harnessMetrics(meter: MetricMeter): HarnessMetrics {
  return {
    tokens: meter.createCounter('agent_tokens_total', 'tokens', 'Tokens billed by model calls, by class and model'),
    costMicroUsd: meter.createCounter(
      'agent_cost_microdollars_total',
      'microdollars',
      'Cost of model calls in millionths of a US dollar, by model (list prices, `common/pricing.ts`)',
    ),
    modelLatency: meter.createHistogram(
      'agent_model_call_latency_ms',
      'int',
      'ms',
      'Model calls (model steps and compactions): one attempt, start to end, by kind and outcome',
    ),
    toolLatency: meter.createHistogram(
      'agent_tool_call_latency_ms',
      'int',
      'ms',
      'Tool calls in the sandbox: one attempt, start to end, by tool, replay policy and outcome',
    ),
    activityRetries: meter.createCounter(
      'agent_activity_retries_total',
      'attempts',
      'Activity attempts after the first, by activity type',
    ),
    compactions: meter.createCounter('agent_compactions_total', 'compactions', 'Context compactions completed'),
    egressRefusals: meter.createCounter(
      'agent_egress_refusals_total',
      'requests',
      "Requests from the sandbox the egress proxy refused (the operation's egress policy did not allow them)",
    ),
    liveSandboxes: meter.createGauge(
      'agent_live_sandboxes',
      'int',
      'containers',
      "Running sandbox containers of this hands worker's name prefix",
    ),
  };
}

let processMetrics: HarnessMetrics | undefined;

/** The process's instruments once `enableHarnessMetrics` ran (the runtime exports them), else undefined. */
export function harnessMetricsOfProcess(): HarnessMetrics | undefined {
  return processMetrics;
}

export function enableHarnessMetrics(meter: MetricMeter): HarnessMetrics {
  processMetrics ??= harnessMetrics(meter);
  return processMetrics;
}

/** Records every activity's attempt: retries, and by type its latency, usage, cost and refusals. */
export function metricsObserver(metrics: HarnessMetrics): AttemptObserver {
  return {
    started(info) {
      if (info.attempt > 1) metrics.activityRetries.add(1, { activity: info.activityType });
    },
    ended({ outcome, durationMs, model, tool }) {
      if (model) {
        metrics.modelLatency.record(durationMs, { kind: model.kind, outcome });
        if (model.usage) recordUsage(metrics, model.model, model.usage, model.failedAttemptsUsage);
        if (model.kind === COMPACT_CONTEXT_ACTIVITY && outcome === 'completed') metrics.compactions.add(1);
      } else if (tool) {
        metrics.toolLatency.record(durationMs, { tool: tool.name, replay_policy: tool.replayPolicy, outcome });
        if (tool.egressDenied) metrics.egressRefusals.add(tool.egressDenied);
      }
    },
  };
}

function recordUsage(metrics: HarnessMetrics, model: string, usage: TokenUsage, failed: TokenUsage | undefined): void {
  for (const counted of failed ? [usage, failed] : [usage]) {
    const classes: [string, number][] = [
      ['input', counted.input],
      ['cache_write', counted.cacheWrite],
      ['cache_read', counted.cacheRead],
      ['output', counted.output],
    ];
    for (const [tokenClass, value] of classes) if (value > 0) metrics.tokens.add(value, { class: tokenClass, model });
    metrics.costMicroUsd.add(Math.round(costUsd(counted, model) * 1_000_000), { model });
  }
}

/**
 * Keeps `agent_live_sandboxes` current on a hands worker: counts its running sandbox containers now
 * and every `intervalMs`. Returns a function that stops it.
 */
export function watchLiveSandboxes(
  docker: Docker,
  namePrefix: string,
  metrics: HarnessMetrics,
  intervalMs = 10_000,
): () => void {
  const count = async () => {
    try {
      const running = await docker.listContainers({
        filters: { label: [`${SANDBOX_LABELS.harness}=1`], status: ['running'] },
      });
      const ours = running.filter((container) =>
        container.Names.some((name) => name.replace(/^\//, '').startsWith(namePrefix)),
      );
      metrics.liveSandboxes.set(ours.length);
    } catch {
      // The engine did not answer: the last count stands until the next look.
    }
  };
  void count();
  const timer = setInterval(() => void count(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
