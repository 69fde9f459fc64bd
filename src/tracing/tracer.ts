/**
 * Installing the process's tracer from its TracingConfig. The SDK is imported here, on demand:
 * a process with tracing off never loads it.
 *
 * Spans go through a BatchSpanProcessor (a bounded queue, exported every `exportDelayMs` or when
 * a batch is full) to the OTLP/HTTP JSON exporter; tests inject their own exporter instead. The
 * sampler is parent-based: a record whose producer sampled it is followed everywhere; new traces
 * (a produce with no incoming context) are sampled at the ratio by `traceSend`.
 */
import type { SpanContext } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from './config.ts';
import { ATTR_EDGEQ_REGION } from './semconv.ts';
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
  const [api, sdk, resources, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporter = o.exporter ?? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url: config.url!, timeoutMillis: SPAN_EXPORT_TIMEOUT_MS });
  // One recipe for the real provider and the warm-up's: the same processor, resource and sampler
  // classes and shapes, so that the code the warm-up compiles is the code traffic runs (with a
  // no-op processor, V8 dropped the compiled SpanImpl and the processor's onStart/onEnding/onEnd
  // at the first real spans: --trace-deopt, wrong map).
  const makeProvider = (to: SpanExporter) =>
    new sdk.BasicTracerProvider({
      resource: resources.resourceFromAttributes({
        [semconv.ATTR_SERVICE_NAME]: identity.service,
        [semconv.ATTR_SERVICE_VERSION]: VERSION,
        ...(identity.instance !== undefined ? { 'service.instance.id': identity.instance } : {}),
        ...(identity.region !== undefined ? { [ATTR_EDGEQ_REGION]: identity.region } : {}),
      }),
      // New traces are sampled by `traceSend` itself (one Math.random() per produce, no SDK call
      // for the 99% it drops at 1%: the SDK's ratio sampler costs an id generation and a span
      // object per produce, measured ~5 µs); every other span has a parent, whose decision holds.
      sampler: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
      spanProcessors: [
        new sdk.BatchSpanProcessor(to, {
          maxQueueSize: SPAN_QUEUE_MAX,
          maxExportBatchSize: SPAN_EXPORT_BATCH_MAX,
          scheduledDelayMillis: config.exportDelayMs,
          exportTimeoutMillis: SPAN_EXPORT_TIMEOUT_MS,
        }),
      ],
    });
  const provider = makeProvider(exporter);
  // Before the real tracer is installed (and before the process serves): warm-up.ts says why.
  // Off by default with an injected exporter (tests install many tracers and do not measure speed).
  const parent = (sc: SpanContext | null) => (sc === null ? api.ROOT_CONTEXT : api.trace.setSpanContext(api.ROOT_CONTEXT, sc));
  const warmUpMs = (o.warmUp ?? !o.exporter) ? Math.round(await warmUpTracing(makeProvider, parent)) : null;
  const installed: ActiveTracer = {
    tracer: provider.getTracer('edgeq', VERSION),
    identity,
    sampleRatio: config.sampleRatio,
    url: o.exporter ? null : config.url,
    exportDelayMs: config.exportDelayMs,
    warmUpMs,
    parent,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      if (activeTracer() === installed) setActiveTracer(null);
      await provider.shutdown();
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
