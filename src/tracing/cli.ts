/**
 * The tracing flags every long-running command takes, and their wiring: resolve the config from
 * the flags and the OTEL_* environment, install the tracer, say so in one log line.
 */
import type { Logger } from '../core/logger.ts';
import { resolveTracingConfig, type TracingFlags } from './config.ts';
import { installTracing } from './tracer.ts';
import type { ActiveTracer, TracingIdentity } from './state.ts';

/** The flags, as [commander flag, help]. */
export const TRACING_OPTIONS: readonly [string, string][] = [
  ['--otlp-endpoint <url>', 'send traces over OTLP/HTTP to this base URL, e.g. http://127.0.0.1:4318 (OTEL_EXPORTER_OTLP_ENDPOINT; absent: tracing off)'],
  ['--trace-sample-ratio <f>', 'share of new traces recorded, 0..1 (OTEL_TRACES_SAMPLER_ARG, default 1); records of a sampled produce are followed everywhere'],
];

/** Installs the process's tracer from `flags` and `env` (null: tracing off). INVALID_CONFIG on a bad value. */
export async function tracingFromFlags(flags: TracingFlags, identity: TracingIdentity, o: { env?: NodeJS.ProcessEnv; logger?: Logger } = {}): Promise<ActiveTracer | null> {
  const config = resolveTracingConfig({ flags, env: o.env ?? process.env });
  const installed = await installTracing(config, identity);
  if (installed) o.logger?.info({ url: config.url, sampleRatio: config.sampleRatio, exportDelayMs: config.exportDelayMs, warmUpMs: installed.warmUpMs }, 'tracing on: spans exported over OTLP/HTTP');
  return installed;
}
