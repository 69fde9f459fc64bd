/**
 * Tracing's configuration from a process's flags and the standard OpenTelemetry environment:
 * off unless an OTLP endpoint is given, so a process that names none pays nothing.
 *
 * Precedence: `--otlp-endpoint` (a base URL, `/v1/traces` appended, like
 * OTEL_EXPORTER_OTLP_ENDPOINT) > OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL, as is) >
 * OTEL_EXPORTER_OTLP_ENDPOINT. `--trace-sample-ratio` > OTEL_TRACES_SAMPLER_ARG (read when
 * OTEL_TRACES_SAMPLER is unset or one of the ratio samplers) > 1 (the standard's
 * parentbased_always_on). OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
 */
import { EdgeqError } from '../core/errors.ts';

/** Tracing of one process, resolved. */
export interface TracingConfig {
  /** False: no provider, no spans, no header is read or written. */
  enabled: boolean;
  /** Where spans are POSTed (OTLP/HTTP, JSON); null when disabled. */
  url: string | null;
  /** Share of new traces recorded, 0..1 (a record whose context is sampled is always followed). */
  sampleRatio: number;
  /** Delay between two exports of the span queue (OTEL_BSP_SCHEDULE_DELAY). */
  exportDelayMs: number;
}

/** Export delay when OTEL_BSP_SCHEDULE_DELAY is unset: the standard's 5 s. */
export const EXPORT_DELAY_MS_DEFAULT = 5_000;
/** Longest export delay accepted: spans older than a minute in memory help nobody. */
export const EXPORT_DELAY_MS_MAX = 60_000;

/** What the command line may give (strings, as commander hands them). */
export interface TracingFlags {
  otlpEndpoint?: string | undefined;
  traceSampleRatio?: string | undefined;
}

function invalid(key: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', `${key}: ${message}`, { details: { key } });
}

function httpUrl(raw: string, key: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(key, `"${raw}" is not a URL (e.g. http://127.0.0.1:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(key, `"${raw}" must be an http:// or https:// URL`);
  return url;
}

/** The base URL plus `v1/traces`, as the OTLP exporter does with OTEL_EXPORTER_OTLP_ENDPOINT. */
function tracesUrl(base: string, key: string): string {
  const url = httpUrl(base, key);
  return `${url.href.replace(/\/+$/, '')}/v1/traces`;
}

function ratio(raw: string, key: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw invalid(key, `must be a number within 0..1, got "${raw}"`);
  return n;
}

const RATIO_SAMPLERS = new Set(['traceidratio', 'parentbased_traceidratio']);

/** Resolves the tracing config; INVALID_CONFIG naming the key on a bad value. */
export function resolveTracingConfig(o: { flags?: TracingFlags; env?: NodeJS.ProcessEnv } = {}): TracingConfig {
  const env = o.env ?? {};
  const flags = o.flags ?? {};
  const off: TracingConfig = { enabled: false, url: null, sampleRatio: 0, exportDelayMs: EXPORT_DELAY_MS_DEFAULT };
  let url: string | null = null;
  if (flags.otlpEndpoint !== undefined && flags.otlpEndpoint !== '') url = tracesUrl(flags.otlpEndpoint, '--otlp-endpoint');
  else if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) url = httpUrl(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT').href;
  else if (env.OTEL_EXPORTER_OTLP_ENDPOINT) url = tracesUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  let sampleRatio = 1;
  if (flags.traceSampleRatio !== undefined) sampleRatio = ratio(flags.traceSampleRatio, '--trace-sample-ratio');
  else if (env.OTEL_TRACES_SAMPLER_ARG !== undefined && (env.OTEL_TRACES_SAMPLER === undefined || RATIO_SAMPLERS.has(env.OTEL_TRACES_SAMPLER))) {
    sampleRatio = ratio(env.OTEL_TRACES_SAMPLER_ARG, 'OTEL_TRACES_SAMPLER_ARG');
  }
  let exportDelayMs = EXPORT_DELAY_MS_DEFAULT;
  if (env.OTEL_BSP_SCHEDULE_DELAY !== undefined) {
    const n = Number(env.OTEL_BSP_SCHEDULE_DELAY);
    if (!Number.isSafeInteger(n) || n < 1 || n > EXPORT_DELAY_MS_MAX) throw invalid('OTEL_BSP_SCHEDULE_DELAY', `must be an integer within 1..${EXPORT_DELAY_MS_MAX} (ms), got "${env.OTEL_BSP_SCHEDULE_DELAY}"`);
    exportDelayMs = n;
  }
  if (url === null || env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return off;
  return { enabled: true, url, sampleRatio, exportDelayMs };
}
