// The span queue in front of the exporter: bounded (drops counted past the bound), exported in
// batches after the delay or at once when a batch is full, one export at a time, a hung export
// bounded by its timeout; records become the SDK's ReadableSpan shape exactly (times as HrTime,
// parent only for a child), so the OTLP exporter and the in-memory exporter read them as theirs.
import type { SpanContext } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../testing/index.ts';
import { newSpanId, newTraceId } from './ids.ts';
import { hrTime, SpanQueue, toReadableSpan, type SpanQueueOptions, type SpanRecord } from './span-queue.ts';

const resource = resourceFromAttributes({ 'service.name': 'edgeq-test' });
const scope = { name: 'edgeq', version: '0.1.0' };

function record(name: string, parent: SpanContext | null = null, startMs = 1_700_000_000_123.5, endMs = startMs + 2.25): SpanRecord {
  return {
    name,
    kind: 0,
    context: { traceId: parent?.traceId ?? newTraceId(), spanId: newSpanId(), traceFlags: 1 },
    parent,
    startMs,
    endMs,
    attributes: { 'messaging.system': 'edgeq' },
    links: [],
    status: { code: 0 },
  };
}

function options(o: Partial<SpanQueueOptions> = {}): SpanQueueOptions {
  return { queueMax: 100, batchMax: 10, delayMs: 60_000, timeoutMs: 5_000, resource, scope, ...o };
}

/** An exporter that records each call's size and answers when told. */
class HeldExporter implements SpanExporter {
  calls: ReadableSpan[][] = [];
  private pending: ((r: { code: number }) => void)[] = [];
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    this.calls.push(spans);
    this.pending.push(done);
  }
  answer(code = 0): void {
    this.pending.shift()?.({ code });
  }
  async shutdown(): Promise<void> {}
}

describe('span ids', () => {
  it('are lowercase hex of 16 and 8 bytes, not zero, and do not repeat across pool refills', () => {
    const spans = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      const s = newSpanId();
      expect(s).toMatch(/^[0-9a-f]{16}$/);
      expect(s).not.toMatch(/^0+$/);
      spans.add(s);
    }
    expect(spans.size).toBe(5_000);
    expect(newTraceId()).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('toReadableSpan', () => {
  it('gives the exporter the SDK span shape: HrTime times and duration, parent only for a child', () => {
    const root = toReadableSpan(record('send t'), resource, scope);
    // (Times are binary fractions here: a double of ~1.7e12 ms holds about a quarter of a µs.)
    expect(root.startTime).toEqual([1_700_000_000, 123_500_000]);
    expect(root.endTime).toEqual([1_700_000_000, 125_750_000]);
    expect(root.duration).toEqual([0, 2_250_000]);
    expect(root.ended).toBe(true);
    expect('parentSpanContext' in root).toBe(false);
    expect(root.resource).toBe(resource);
    expect(root.instrumentationScope).toBe(scope);
    expect(root.spanContext().spanId).toMatch(/^[0-9a-f]{16}$/);
    const parent = root.spanContext();
    const child = toReadableSpan(record('append t', parent), resource, scope);
    expect(child.parentSpanContext).toBe(parent);
    expect(child.spanContext().traceId).toBe(parent.traceId);
    expect(child.spanContext().spanId).not.toBe(parent.spanId);
  });

  it('converts ms to HrTime without a nanosecond field of 1e9 or more', () => {
    expect(hrTime(1_999.9999999)).toEqual([2, 0]);
    expect(hrTime(0)).toEqual([0, 0]);
    expect(hrTime(1_000.5)).toEqual([1, 500_000]);
  });
});

describe('SpanQueue', () => {
  it('exports after the delay, and at once when a batch is full, one export at a time', async () => {
    const ex = new HeldExporter();
    const q = new SpanQueue(ex, options({ batchMax: 3, delayMs: 20 }));
    q.add(record('a'));
    await waitFor('the delayed export', 2_000, () => (ex.calls.length === 1 ? true : undefined), 5);
    expect(ex.calls[0]!.map((s) => s.name)).toEqual(['a']);
    // The first export is still unanswered: a full batch waits for it, then goes.
    for (const n of ['b', 'c', 'd']) q.add(record(n));
    await new Promise((r) => setTimeout(r, 50));
    expect(ex.calls).toHaveLength(1);
    ex.answer();
    await waitFor('the full batch', 2_000, () => (ex.calls.length === 2 ? true : undefined), 5);
    expect(ex.calls[1]!.map((s) => s.name)).toEqual(['b', 'c', 'd']);
    ex.answer();
    await waitFor('exported counted', 2_000, () => (q.exported === 4 ? true : undefined), 5);
    expect(q.size).toBe(0);
  });

  it('holds at most queueMax spans: the rest are dropped and counted', async () => {
    const ex = new InMemorySpanExporter();
    const q = new SpanQueue(ex, options({ queueMax: 5, batchMax: 100 }));
    for (let i = 0; i < 8; i++) q.add(record(`s${i}`));
    expect(q.size).toBe(5);
    expect(q.dropped).toBe(3);
    await q.flush();
    expect(ex.getFinishedSpans().map((s) => s.name)).toEqual(['s0', 's1', 's2', 's3', 's4']);
  });

  it('flush exports everything queued in batches of batchMax', async () => {
    const ex = new InMemorySpanExporter();
    const calls: number[] = [];
    const counting: SpanExporter = { export: (s, done) => (calls.push(s.length), ex.export(s, done)), shutdown: () => ex.shutdown() };
    const q = new SpanQueue(counting, options({ batchMax: 4, queueMax: 100 }));
    // Added faster than the immediate export runs: flush finds them queued.
    for (let i = 0; i < 10; i++) q.add(record(`s${i}`));
    await q.flush();
    expect(calls.reduce((a, b) => a + b, 0)).toBe(10);
    expect(Math.max(...calls)).toBeLessThanOrEqual(4);
    expect(q.exported).toBe(10);
  });

  it('an export that never answers is given up after timeoutMs and counted as failed; the next one goes', async () => {
    const ex = new HeldExporter();
    const q = new SpanQueue(ex, options({ timeoutMs: 30 }));
    q.add(record('lost'));
    await q.flush();
    expect(q.failed).toBe(1);
    q.add(record('next'));
    const flushed = q.flush();
    await waitFor('the next export', 2_000, () => (ex.calls.length === 2 ? true : undefined), 5);
    ex.answer(); // answers the first (late): ignored
    ex.answer();
    await flushed;
    expect(q.exported).toBe(1);
  });

  it('a failed export is counted, and shutdown exports what is left, then refuses new spans', async () => {
    const ex = new HeldExporter();
    const q = new SpanQueue(ex, options());
    q.add(record('a'));
    const flushed = q.flush();
    ex.answer(1);
    await flushed;
    expect(q.failed).toBe(1);
    q.add(record('b'));
    const down = q.shutdown();
    await waitFor('the last export', 2_000, () => (ex.calls.length === 2 ? true : undefined), 5);
    ex.answer();
    await down;
    q.add(record('after'));
    expect(q.size).toBe(0);
    expect(q.exported).toBe(1);
  });
});
