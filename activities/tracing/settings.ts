/**
 * Where a worker sends its trace spans: the OpenTelemetry exporter's standard variables, read once
 * when the worker starts. Without `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-only
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) no span is made.
 */
import { httpUrl, parsed, settingsPart, text, variable, type SettingsPart } from '../../common/env-settings';

export interface TracingSettings {
  /** The full URL spans are POSTed to (`…/v1/traces`). */
  url: string;
  headers: Record<string, string>;
  /** The `service.name` resource attribute. */
  serviceName: string;
  /** More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`). */
  resource: Record<string, string>;
}

/** Key/value lists as the OpenTelemetry variables write them: `k1=v1,k2=v2`, values URL-encoded. */
function keyValues(what: string): (value: string) => Record<string, string> {
  return (value) => {
    const pairs: Record<string, string> = {};
    for (const item of value.split(',')) {
      if (!item.trim()) continue;
      const at = item.indexOf('=');
      if (at <= 0) throw new Error(`${JSON.stringify(item.trim())} is not ${what}=value`);
      let decoded: string;
      try {
        decoded = decodeURIComponent(item.slice(at + 1).trim());
      } catch {
        throw new Error(`the value of ${JSON.stringify(item.slice(0, at).trim())} is not URL-encoded text`);
      }
      pairs[item.slice(0, at).trim()] = decoded;
    }
    return pairs;
  };
}

export const TRACING_PART: SettingsPart<TracingSettings | undefined> = settingsPart({
  title: 'Traces (OpenTelemetry)',
  intro:
    "A worker with an OTLP endpoint exports a trace per operation: the operation's span, a span per model step (tokens, model, stop reason, attempt, outcome) and per tool call (tool, replay policy, attempt, outcome), a coding task's operations under the task's span. docs/operations.md shows how to read them.",
  variables: {
    endpoint: variable(
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      {
        description: 'the OTLP/HTTP base URL of a collector or Jaeger; spans go to `<endpoint>/v1/traces`',
        default: 'none: no spans are made',
        values: 'an http(s) URL, e.g. `http://127.0.0.1:4318`',
      },
      httpUrl((): string | undefined => undefined),
    ),
    tracesEndpoint: variable(
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      {
        description: 'the full URL spans are sent to, instead of `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`',
        default: 'from `OTEL_EXPORTER_OTLP_ENDPOINT`',
        values: 'an http(s) URL',
      },
      httpUrl((): string | undefined => undefined),
    ),
    protocol: variable(
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      {
        description:
          'the OTLP transport; the worker speaks OTLP/HTTP with JSON bodies, which the collector and Jaeger accept on their OTLP/HTTP port (4318)',
        default: '`http/json`',
        values: '`http/json`',
      },
      parsed(
        (value) => {
          if (value !== 'http/json')
            throw new Error(
              `${JSON.stringify(value)} is not supported: the worker exports OTLP/HTTP with JSON bodies ("http/json"); point the endpoint at the collector's OTLP/HTTP port (4318)`,
            );
          return value;
        },
        () => 'http/json',
      ),
    ),
    headers: variable(
      'OTEL_EXPORTER_OTLP_HEADERS',
      {
        description: 'headers sent with every export (an API key of a hosted backend)',
        default: 'none',
        values: '`name=value,name2=value2` (values URL-encoded)',
      },
      parsed(keyValues('name'), () => ({})),
    ),
    serviceName: variable(
      'OTEL_SERVICE_NAME',
      {
        description: "the spans' `service.name`",
        default: '`agent-worker`',
      },
      text('agent-worker'),
    ),
    resource: variable(
      'OTEL_RESOURCE_ATTRIBUTES',
      {
        description: 'more resource attributes of every span (e.g. `deployment.environment=prod`)',
        default: 'none',
        values: '`key=value,key2=value2` (values URL-encoded)',
      },
      parsed(keyValues('key'), () => ({})),
    ),
    disabled: variable(
      'OTEL_SDK_DISABLED',
      {
        description: '`true` turns tracing off whatever the endpoint',
        default: '`false`',
        values: '`true`, `false`',
      },
      parsed(
        (value) => {
          const word = value.toLowerCase();
          if (word !== 'true' && word !== 'false') throw new Error(`${JSON.stringify(value)} is not true or false`);
          return word === 'true';
        },
        () => false,
      ),
    ),
  },
  build: (values): TracingSettings | undefined => {
    if (values.disabled) return undefined;
    const url = values.tracesEndpoint ?? (values.endpoint ? `${values.endpoint}/v1/traces` : undefined);
    if (!url) return undefined;
    return { url, headers: values.headers, serviceName: values.serviceName, resource: values.resource };
  },
});
