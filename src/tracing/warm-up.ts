/**
 * JIT warm-up of the traced path, run once when a tracer is installed.
 *
 * Why: at 1% sampling the span path (our hooks, the traced-batch walk, the span queue) runs a few
 * times a second, too rarely for V8 to compile it while it serves, so it would run in the
 * interpreter and baseline tiers at several times the cost of compiled code. Measured with `perf`
 * on a loaded deployment when spans were still the SDK's: its span code ran in the baseline tier
 * (`^startSpan`), and the interleaved bench measured 1% at 0.886 of off without a warm-up and
 * 0.91-0.96 with it (README, "Tracing's cost"). Making and dropping a few thousand spans through
 * the very same code with the very same shapes at start (~100-300 ms of CPU, once) leaves it
 * compiled. (What a warm-up cannot fix, the path going cold in the CPU's caches between two
 * sampled requests, is why the spans are plain records now: span-queue.ts.)
 *
 * The warm-up runs every hook with a tracer of its own whose queue is built like the real one
 * (same resource, same conversion to the exporter's span shape) but exports to a sink that drops
 * every span: nothing leaves the process, and the installed tracer is put back before the real
 * one is installed.
 */
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { buildBatch, stampOrigin } from '../log/index.ts';
import { TRACE_HEADER } from './carrier.ts';
import { SpanQueue } from './span-queue.ts';
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
 * Runs the warm-up with spans of `resource` (the real tracer's) into a dropping exporter; returns
 * how long it took (ms). `exporter` replaces the dropping one (tests count what it made). Never
 * throws: a failed warm-up only costs speed.
 */
export async function warmUpTracing(resource: Resource, rounds = WARM_UP_ROUNDS, exporter: SpanExporter = DROP): Promise<number> {
  const started = performance.now();
  const previous = activeTracer();
  // Exported every round's few spans at the end of the round (batchMax 8), so that the conversion
  // to the exporter's shape runs as often as the hooks do.
  const queue = new SpanQueue(exporter, { queueMax: 1_024, batchMax: 8, delayMs: 1, timeoutMs: 1_000, resource, scope: { name: 'edgeq-warm-up' } });
  const warm: ActiveTracer = {
    identity: { service: 'edgeq-warm-up' },
    sampleRatio: 1,
    url: null,
    exportDelayMs: 1,
    warmUpMs: null,
    record: (span) => queue.add(span),
    flush: () => queue.flush(),
    shutdown: () => queue.shutdown(),
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
      // The broker hooks make their spans after an async walk: let them run, then export the round.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await queue.flush();
    }
  } catch {
    // Only speed is at stake.
  } finally {
    setActiveTracer(previous);
    // Not shutdown(): that would shut the exporter, which a test may still read.
    await queue.flush().catch(() => undefined);
  }
  return performance.now() - started;
}
