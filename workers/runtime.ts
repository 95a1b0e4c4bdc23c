/**
 * Installs the Temporal runtime once per process with a logger at `AGENT_LOG_LEVEL` (default WARN),
 * so worker state changes do not drown the CLI's own output — and, given a metrics address
 * (`AGENT_METRICS_ADDRESS`), a Prometheus endpoint serving the SDK's metrics and the harness's own
 * (`activities/metrics.ts`); given an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`), trace spans
 * (`activities/tracing/`).
 */
import { DefaultLogger, LogLevel, Runtime } from '@temporalio/worker';
import { enableHarnessMetrics } from '../activities/metrics';
import type { TracingSettings } from '../activities/tracing/settings';
import { enableTracing } from '../activities/tracing/spans';
import { workerLogLevel } from './settings';

let installed = false;

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
      logger: new DefaultLogger(level),
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
