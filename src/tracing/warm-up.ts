/**
 * JIT warm-up of the traced path, run once when a tracer is installed.
 *
 * Why: at 1% sampling the span path (our hooks, the traced-batch scan, the SDK's startSpan, Span
 * and processor) runs ~100 times a second, too rarely for V8 to compile it while it serves, so it
 * runs in the interpreter and baseline tiers at several times the cost of compiled code. Measured
 * with `perf` on a loaded deployment: the SDK's span code ran in the baseline tier (`^startSpan`)
 * and a span cost ~125 µs of wall time at 1%, where at 100% the same work is compiled and a span
 * costs ~20 µs; the interleaved bench measured 1% at 0.886 of off without this and 0.91-0.96
 * with it (README, "Tracing's cost"). Making and dropping a few thousand spans through the very
 * same code with the very same shapes at start (~100-300 ms of CPU, once) leaves it compiled.
 *
 * The warm-up runs every hook with a tracer of its own, made by the same recipe as the real one
 * (same processor, resource and sampler: other classes or shapes would leave code compiled for
 * them, which V8 throws away at the first real span) but exporting to a sink that drops every
 * span: nothing leaves the process, and the installed tracer is put back before the real one is.
 */
import type { Context, SpanContext } from '@opentelemetry/api';
import type { BasicTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { buildBatch, stampOrigin } from '../log/index.ts';
import { TRACE_HEADER } from './carrier.ts';
import { receiveSpan, traceAppend, traceApplied, traceNowMs, traceReplica, traceSend } from './spans.ts';
import { activeTracer, setActiveTracer, type ActiveTracer } from './state.ts';

/** Rounds of the warm-up, each one produce's spans at every hop (send, append, commit, replicate, apply, receive). */
export const WARM_UP_ROUNDS = 2_000;
/** Records per synthetic batch (a gateway's merged batch at ~10,000 req/s holds ~10). */
const WARM_UP_BATCH_RECORDS = 10;
const TOPIC = 'edgeq-warm-up';
/** Export result code SUCCESS (@opentelemetry/core's ExportResultCode, as a number: nothing is imported at load). */
const EXPORT_SUCCESS = 0;

/** The warm-up's exporter: takes every span and keeps none. */
const DROP: SpanExporter = {
  export: (_spans, done) => done({ code: EXPORT_SUCCESS }),
  shutdown: () => Promise.resolve(),
  forceFlush: () => Promise.resolve(),
};

/**
 * Runs the warm-up with providers from `makeProvider` (the real tracer's recipe) and the real
 * tracer's `parent`; returns how long it took (ms). Never throws: a failed warm-up only costs speed.
 */
export async function warmUpTracing(makeProvider: (exporter: SpanExporter) => BasicTracerProvider, parent: (sc: SpanContext | null) => Context, rounds = WARM_UP_ROUNDS): Promise<number> {
  const started = performance.now();
  const previous = activeTracer();
  const provider = makeProvider(DROP);
  const warm: ActiveTracer = {
    tracer: provider.getTracer('edgeq-warm-up'),
    identity: { service: 'edgeq-warm-up' },
    sampleRatio: 1,
    url: null,
    exportDelayMs: 1,
    warmUpMs: null,
    parent,
    flush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  setActiveTracer(warm);
  try {
    const value = Buffer.alloc(100, 0x61);
    for (let i = 0; i < rounds; i++) {
      let traceparent = '';
      await traceSend(TOPIC, undefined, [{ key: null, value, headers: {} as Record<string, Buffer>, partition: 0 }], async (rs) => {
        traceparent = rs[0]!.headers[TRACE_HEADER]!.toString('latin1');
        return [{ partition: 0, offset: i }];
      });
      const header = [{ key: TRACE_HEADER, value: Buffer.from(traceparent, 'latin1') }];
      // A batch of the size a loaded gateway sends, one record of it sampled, as at 1%.
      const batch = await buildBatch(Array.from({ length: WARM_UP_BATCH_RECORDS }, (_, k) => ({ value, ...(k === 3 ? { headers: header } : {}) })));
      const append = traceAppend(TOPIC, 0, batch, { acks: 'all', brokerId: 1 });
      append?.appended({ baseOffset: i * WARM_UP_BATCH_RECORDS });
      append?.end({ isrSize: 3 });
      traceReplica(TOPIC, 0, batch, { brokerId: 2 })?.end();
      const startMs = traceNowMs();
      traceApplied({ topic: TOPIC, partition: 0, batches: [stampOrigin(batch, { region: 'warm-up', offset: i })], startMs, baseOffset: i, duplicate: false });
      receiveSpan(warm, { topic: TOPIC, partition: 0, records: [{ offset: i, headers: header }], startMs, endMs: traceNowMs() });
      // The broker hooks make their spans after an async decode: let them run before the next round.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } catch {
    // Only speed is at stake.
  } finally {
    setActiveTracer(previous);
    await provider.shutdown().catch(() => undefined);
  }
  return performance.now() - started;
}
