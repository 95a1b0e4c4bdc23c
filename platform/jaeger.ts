/**
 * Jaeger, to read the workers' traces: built from its Go module with the machine's Go (minutes,
 * once; cached by version under `.tools/jaeger/`) and run with in-memory storage, receiving OTLP/HTTP
 * on one port and answering its query API and UI on another (`npm run jaeger`, the trace tests).
 * `go install` refuses the module (its go.mod has replace directives), so it is built from a copy of
 * the downloaded module instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildFromModuleCopy } from './go-module-build';
import { TOOLS_DIR } from './paths';
import { PlatformError } from './temporal-cli';

export const JAEGER_VERSION = '1.76.0';
const MODULE = 'github.com/jaegertracing/jaeger';

/** The `jaeger` binary at `version`, built when missing. */
export async function ensureJaeger(
  version: string = JAEGER_VERSION,
  log: (line: string) => void = () => undefined,
): Promise<string> {
  const home = path.join(TOOLS_DIR, 'jaeger', version);
  const binary = path.join(home, 'jaeger');
  if (fs.existsSync(binary)) return binary;
  log(`building Jaeger ${version} from its Go module (minutes, once; cached in ${home})`);
  await buildFromModuleCopy({ module: MODULE, version, name: 'Jaeger', buildArgs: ['./cmd/jaeger'], binary });
  return binary;
}

export interface JaegerPorts {
  /** OTLP over HTTP: the workers' `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  otlp: number;
  /** The query API and the UI. */
  query: number;
  /** The query service's gRPC port (unused here, but Jaeger opens it). */
  queryGrpc: number;
}

export const DEFAULT_JAEGER_PORTS: JaegerPorts = { otlp: 4318, query: 16686, queryGrpc: 16685 };

export interface RunningJaeger {
  /** For `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  otlpEndpoint: string;
  /** The UI, and the query API under `/api`. */
  queryUrl: string;
  pid: number;
  /** Everything Jaeger printed. */
  output(): string;
  stop(): Promise<void>;
}

/** The configuration of an in-memory Jaeger on `ports` (127.0.0.1 only). */
export function jaegerConfig(ports: JaegerPorts, maxTraces = 100_000): string {
  return [
    'service:',
    '  extensions: [jaeger_storage, jaeger_query]',
    '  pipelines:',
    '    traces:',
    '      receivers: [otlp]',
    '      processors: [batch]',
    '      exporters: [jaeger_storage_exporter]',
    '  telemetry:',
    '    metrics:',
    '      level: none',
    '    logs:',
    '      level: warn',
    'extensions:',
    '  jaeger_query:',
    '    storage:',
    '      traces: memstore',
    '    http:',
    `      endpoint: 127.0.0.1:${ports.query}`,
    '    grpc:',
    `      endpoint: 127.0.0.1:${ports.queryGrpc}`,
    '  jaeger_storage:',
    '    backends:',
    '      memstore:',
    '        memory:',
    `          max_traces: ${maxTraces}`,
    'receivers:',
    '  otlp:',
    '    protocols:',
    '      http:',
    `        endpoint: 127.0.0.1:${ports.otlp}`,
    'processors:',
    '  batch:',
    'exporters:',
    '  jaeger_storage_exporter:',
    '    trace_storage: memstore',
    '',
  ].join('\n');
}

/** Starts Jaeger and resolves once its query API answers (or rejects with what it printed). */
export async function startJaeger(
  binary: string,
  ports: JaegerPorts,
  options: { dir: string; timeoutMs?: number },
): Promise<RunningJaeger> {
  fs.mkdirSync(options.dir, { recursive: true });
  const config = path.join(options.dir, 'jaeger.yaml');
  fs.writeFileSync(config, jaegerConfig(ports));
  const child: ChildProcess = spawn(binary, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => lines.push(chunk.toString('utf8'));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const queryUrl = `http://127.0.0.1:${ports.query}`;
  const running: RunningJaeger = {
    otlpEndpoint: `http://127.0.0.1:${ports.otlp}`,
    queryUrl,
    pid: child.pid ?? -1,
    output: () => lines.join(''),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new PlatformError(`Jaeger exited as it started:\n${running.output().slice(-2000)}`);
    const answered = await fetch(`${queryUrl}/api/services`).then(
      (response) => response.ok,
      () => false,
    );
    if (answered) return running;
    if (Date.now() > deadline) {
      await running.stop();
      throw new PlatformError(`Jaeger did not answer on ${queryUrl}:\n${running.output().slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A span as Jaeger's query API returns it (`GET /api/traces/<trace id>`), with its process's service. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: Array<{ refType: string; traceID: string; spanID: string }>;
  startTime: number;
  duration: number;
  tags: Array<{ key: string; type: string; value: unknown }>;
  processID: string;
  /** The `service.name` of the process that sent it (from the trace's `processes`). */
  service: string;
  warnings?: string[] | null;
}

/** The spans of one trace Jaeger holds (none when it holds no such trace). */
export async function jaegerTrace(queryUrl: string, traceId: string): Promise<JaegerSpan[]> {
  const response = await fetch(`${queryUrl}/api/traces/${traceId}`);
  if (response.status === 404) return [];
  if (!response.ok) throw new PlatformError(`Jaeger answered ${response.status} for trace ${traceId}`);
  const body = (await response.json()) as {
    data?: Array<{ spans: Omit<JaegerSpan, 'service'>[]; processes: Record<string, { serviceName: string }> }> | null;
  };
  return (body.data ?? []).flatMap((trace) =>
    trace.spans.map((span) => ({ ...span, service: trace.processes[span.processID]?.serviceName ?? span.processID })),
  );
}
