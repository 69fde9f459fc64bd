/**
 * Installing the process's tracer from its TracingConfig. The SDK's resource and exporter are
 * imported here, on demand: a process with tracing off never loads them.
 *
 * Spans go through a SpanQueue (span-queue.ts: a bounded queue, exported every `exportDelayMs`
 * or when a batch is full) to the OTLP/HTTP JSON exporter; tests inject their own exporter
 * instead. Sampling is parent-based: a record whose producer sampled it is followed everywhere
 * (the hooks make spans only for sampled contexts); new traces (a produce with no incoming
 * context) are sampled at the ratio by `traceSend`.
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from './config.ts';
import { ATTR_EDGEQ_REGION } from './semconv.ts';
import { SpanQueue } from './span-queue.ts';
import { activeTracer, setActiveTracer, type ActiveTracer, type TracingIdentity } from './state.ts';
import { warmUpTracing } from './warm-up.ts';

/**
 * Spans held for export. At 1% sampling a gateway taking 20,000 produce requests/s makes ~200
 * send spans/s, and each broker/region hop adds a few: 4,096 holds ~5 s of that (one default
 * export interval); past it new spans are dropped, never queued without bound.
 */
export const SPAN_QUEUE_MAX = 4_096;
/** Spans per OTLP request. */
export const SPAN_EXPORT_BATCH_MAX = 512;
/** Bound on one OTLP request, and on the flush at shutdown. */
export const SPAN_EXPORT_TIMEOUT_MS = 10_000;

const VERSION = '0.1.0';

/**
 * Installs the process's tracer (replacing one installed before) unless `config.enabled` is false
 * and no `exporter` is given; returns it or null. `exporter` replaces the OTLP exporter (tests).
 * `warmUp` (default: on unless an exporter is injected) runs warm-up.ts first.
 */
export async function installTracing(config: TracingConfig, identity: TracingIdentity, o: { exporter?: SpanExporter; warmUp?: boolean } = {}): Promise<ActiveTracer | null> {
  if ((!config.enabled || config.url === null) && !o.exporter) return null;
  const [resources, semconv] = await Promise.all([import('@opentelemetry/resources'), import('@opentelemetry/semantic-conventions')]);
  const exporter = o.exporter ?? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url: config.url!, timeoutMillis: SPAN_EXPORT_TIMEOUT_MS });
  // The SDK's default resource (telemetry.sdk.*) under ours, as its tracer provider merges them.
  const resource = resources.defaultResource().merge(resources.resourceFromAttributes({
    [semconv.ATTR_SERVICE_NAME]: identity.service,
    [semconv.ATTR_SERVICE_VERSION]: VERSION,
    ...(identity.instance !== undefined ? { 'service.instance.id': identity.instance } : {}),
    ...(identity.region !== undefined ? { [ATTR_EDGEQ_REGION]: identity.region } : {}),
  }));
  const queue = new SpanQueue(exporter, {
    queueMax: SPAN_QUEUE_MAX,
    batchMax: SPAN_EXPORT_BATCH_MAX,
    delayMs: config.exportDelayMs,
    timeoutMs: SPAN_EXPORT_TIMEOUT_MS,
    resource,
    scope: { name: 'edgeq', version: VERSION },
  });
  // Before the real tracer is installed (and before the process serves): warm-up.ts says why.
  // Off by default with an injected exporter (tests install many tracers and do not measure speed).
  const warmUpMs = (o.warmUp ?? !o.exporter) ? Math.round(await warmUpTracing(resource)) : null;
  const installed: ActiveTracer = {
    identity,
    sampleRatio: config.sampleRatio,
    url: o.exporter ? null : config.url,
    exportDelayMs: config.exportDelayMs,
    warmUpMs,
    record: (span) => queue.add(span),
    flush: () => queue.flush(),
    shutdown: async () => {
      if (activeTracer() === installed) setActiveTracer(null);
      await queue.shutdown();
    },
  };
  const previous = setActiveTracer(installed);
  if (previous) void previous.shutdown().catch(() => undefined);
  return installed;
}

/** Uninstalls and flushes the process's tracer, if any (on a clean stop). */
export async function shutdownTracing(): Promise<void> {
  await activeTracer()?.shutdown();
}
