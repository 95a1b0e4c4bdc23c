/**
 * Installs the Temporal runtime once per process with a logger at `AGENT_LOG_LEVEL` (default WARN),
 * so worker state changes do not drown the CLI's own output (and without the SDK's warning that a
 * hands worker has no workflows, which it never has) — and, given a metrics address
 * (`AGENT_METRICS_ADDRESS`), a Prometheus endpoint serving the SDK's metrics and the harness's own
 * (`activities/metrics.ts`); given an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`), trace spans
 * (`activities/tracing/`).
 */
import { DefaultLogger, LogLevel, Runtime, type LogMetadata } from '@temporalio/worker';
import { enableHarnessMetrics } from '../activities/metrics';
import type { TracingSettings } from '../activities/tracing/settings';
import { enableTracing } from '../activities/tracing/spans';
import { workerLogLevel } from './settings';

let installed = false;

/**
 * What the SDK logs about a worker set up as intended: a hands worker runs activities only, so it
 * registers no workflows by design — a warning a reader takes for a fault (it is one on a brain worker,
 * whose workflows are always given).
 */
export const EXPECTED_SDK_MESSAGES: readonly string[] = ['No workflows registered, not polling for workflow tasks'];

/** The default logger, without `EXPECTED_SDK_MESSAGES`. */
export class HarnessLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (EXPECTED_SDK_MESSAGES.includes(message)) return;
    super.log(level, message, meta);
  }
}

export function installRuntime(
  level: LogLevel = workerLogLevel(),
  options: { metricsAddress?: string; tracing?: TracingSettings } = {},
): void {
  // Spans need no runtime of the SDK's: an embedding process that installed its own still gets them.
  if (options.tracing) enableTracing(options.tracing);
  if (installed) return;
  installed = true;
  try {
    Runtime.install({
      logger: new HarnessLogger(level),
      ...(options.metricsAddress
        ? { telemetryOptions: { metrics: { prometheus: { bindAddress: options.metricsAddress } } } }
        : {}),
    });
  } catch {
    // A runtime was already installed by the embedding process; keep it.
    return;
  }
  if (options.metricsAddress) enableHarnessMetrics(Runtime.instance().metricMeter);
}
