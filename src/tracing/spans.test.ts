// Proves tracing's pieces in one process with an in-memory exporter: the config is off by default
// and refuses bad values by key; a sampled send writes its context into every record's headers
// (and the batch builder marks the batch), the broker, exchange and consumer spans come out as
// children of that context with the messaging attributes, and nothing is read or written when
// tracing is off or the produce was not sampled.
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import * as incubating from '@opentelemetry/semantic-conventions/incubating';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { ATTR_HAS_TRACE, buildBatch, decodeBatch, readBatchHeader, stampOrigin } from '../log/index.ts';
import { waitFor } from '../testing/index.ts';
import {
  anyBatchTraced,
  formatTraceparent,
  installTracing,
  parseTraceparent,
  resolveTracingConfig,
  shutdownTracing,
  traceAppend,
  traceApplied,
  traceReceive,
  traceGroupReceive,
  traceReplica,
  traceSend,
  ATTR_MESSAGING_BATCH_MESSAGE_COUNT,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  TRACE_HEADER,
  activeTracer,
  warmUpTracing,
  type ActiveTracer,
} from './index.ts';

let exporter: InMemorySpanExporter;
let tracer: ActiveTracer;

async function install(sampleRatio: number): Promise<void> {
  exporter = new InMemorySpanExporter();
  tracer = (await installTracing({ enabled: true, url: 'http://127.0.0.1:1/v1/traces', sampleRatio, exportDelayMs: 10 }, { service: 'edgeq-test', region: 'r1' }, { exporter }))!;
}

/** Spans exported so far, after a flush; waits (bounded) until `n` exist: broker spans are made after an async decode. */
async function spans(n: number): Promise<ReadableSpan[]> {
  return waitFor(`${n} spans`, 5_000, async () => {
    await tracer.flush();
    const got = exporter.getFinishedSpans();
    return got.length >= n ? got : undefined;
  }, 10);
}

afterEach(async () => {
  await shutdownTracing();
});

/** One record as the gateway parses it. */
const rec = (value: string) => ({ key: null, value: Buffer.from(value), headers: {} as Record<string, Buffer>, partition: 0 });

describe('tracing config', () => {
  it('is off without an endpoint, takes the flag before the environment, and refuses bad values naming the key', () => {
    expect(resolveTracingConfig({ env: {} }).enabled).toBe(false);
    expect(resolveTracingConfig({ env: { OTEL_TRACES_SAMPLER_ARG: '0.5' } }).enabled).toBe(false);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/', OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_BSP_SCHEDULE_DELAY: '200' };
    expect(resolveTracingConfig({ env })).toEqual({ enabled: true, url: 'http://127.0.0.1:4318/v1/traces', sampleRatio: 0.25, exportDelayMs: 200 });
    expect(resolveTracingConfig({ env, flags: { otlpEndpoint: 'http://127.0.0.1:9/x', traceSampleRatio: '0.01' } })).toMatchObject({ url: 'http://127.0.0.1:9/x/v1/traces', sampleRatio: 0.01 });
    expect(resolveTracingConfig({ env: { ...env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:7/t' } }).url).toBe('http://127.0.0.1:7/t');
    expect(resolveTracingConfig({ env: { ...env, OTEL_SDK_DISABLED: 'true' } }).enabled).toBe(false);
    for (const [flags, e, key] of [
      [{ traceSampleRatio: '1.5' }, env, '--trace-sample-ratio'],
      [{ otlpEndpoint: 'ftp://x' }, {}, '--otlp-endpoint'],
      [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
      [{}, { ...env, OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG'],
      [{}, { ...env, OTEL_BSP_SCHEDULE_DELAY: '0' }, 'OTEL_BSP_SCHEDULE_DELAY'],
    ] as const) {
      let err: unknown;
      try {
        resolveTracingConfig({ flags, env: e });
      } catch (x) {
        err = x;
      }
      expect(err).toBeInstanceOf(EdgeqError);
      expect((err as EdgeqError).code).toBe('INVALID_CONFIG');
      expect((err as EdgeqError).details['key']).toBe(key);
    }
  });

  it('uses the names of the OpenTelemetry messaging conventions', () => {
    expect(ATTR_MESSAGING_SYSTEM).toBe(incubating.ATTR_MESSAGING_SYSTEM);
    expect(ATTR_MESSAGING_DESTINATION_NAME).toBe(incubating.ATTR_MESSAGING_DESTINATION_NAME);
    expect(ATTR_MESSAGING_DESTINATION_PARTITION_ID).toBe(incubating.ATTR_MESSAGING_DESTINATION_PARTITION_ID);
    expect(ATTR_MESSAGING_OPERATION_TYPE).toBe(incubating.ATTR_MESSAGING_OPERATION_TYPE);
    expect(ATTR_MESSAGING_OPERATION_NAME).toBe(incubating.ATTR_MESSAGING_OPERATION_NAME);
    expect(ATTR_MESSAGING_BATCH_MESSAGE_COUNT).toBe(incubating.ATTR_MESSAGING_BATCH_MESSAGE_COUNT);
    expect(ATTR_MESSAGING_CONSUMER_GROUP_NAME).toBe(incubating.ATTR_MESSAGING_CONSUMER_GROUP_NAME);
    expect(incubating.MESSAGING_OPERATION_TYPE_VALUE_SEND).toBe('send');
    expect(incubating.MESSAGING_OPERATION_TYPE_VALUE_RECEIVE).toBe('receive');
  });
});

describe('record headers', () => {
  it('a traceparent round-trips; malformed ones are ignored, not errors', () => {
    const sc = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };
    const text = formatTraceparent(sc);
    expect(text).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(parseTraceparent(Buffer.from(text))).toMatchObject({ ...sc, isRemote: true });
    for (const bad of ['', 'x', '00-00000000000000000000000000000000-b7ad6b7169203331-01', `${text.slice(0, 54)}`, 'zz' + text.slice(2)]) expect(parseTraceparent(bad)).toBeNull();
  });

  it('reads traceparent values as the SDK\'s W3C propagator does', () => {
    const propagator = new W3CTraceContextPropagator();
    const getter = { keys: (c: Record<string, string>) => Object.keys(c), get: (c: Record<string, string>, k: string) => c[k] };
    const id = '0af7651916cd43dd8448eb211c80319c';
    const cases = [
      `00-${id}-b7ad6b7169203331-01`,
      `00-${id}-b7ad6b7169203331-00`,
      `00-${id}-b7ad6b7169203331-09`,
      `01-${id}-b7ad6b7169203331-01-extra`,
      `00-${id}-b7ad6b7169203331-01-extra`,
      `ff-${id}-b7ad6b7169203331-01`,
      `00-${id.toUpperCase()}-b7ad6b7169203331-01`,
      `00-${id}-0000000000000000-01`,
      `00-${id}-b7ad6b716920333-01`,
      ` 00-${id}-b7ad6b7169203331-01 `,
    ];
    for (const c of cases) {
      const sdk = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, { traceparent: c }, getter)) ?? null;
      const ours = parseTraceparent(c);
      expect(ours === null ? null : { traceId: ours.traceId, spanId: ours.spanId, traceFlags: ours.traceFlags }, c).toEqual(sdk === null ? null : { traceId: sdk.traceId, spanId: sdk.spanId, traceFlags: sdk.traceFlags });
    }
  });

  it('the batch builder marks a batch holding a traceparent header, and only such a batch', async () => {
    const plain = await buildBatch([{ value: 'a', headers: { other: 'x' } }, { value: 'b' }]);
    const traced = await buildBatch([{ value: 'a' }, { value: 'b', headers: [{ key: TRACE_HEADER, value: Buffer.from('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01') }] }]);
    expect(readBatchHeader(plain).attributes & ATTR_HAS_TRACE).toBe(0);
    expect(readBatchHeader(traced).attributes & ATTR_HAS_TRACE).toBe(ATTR_HAS_TRACE);
    expect(anyBatchTraced(plain)).toBe(false);
    expect(anyBatchTraced(Buffer.concat([plain, traced]))).toBe(true);
    // The mark survives the origin stamp a region serves its records to the others with.
    expect(anyBatchTraced(stampOrigin(traced, { region: 'r1', offset: 7 }))).toBe(true);
  });
});

describe('spans of a record path', () => {
  it('send, append, commit, replicate, apply and receive form one trace with the messaging attributes', async () => {
    await install(1);
    const incoming = '00-11111111111111111111111111111111-2222222222222222-01';
    let sentRecords: ReturnType<typeof rec>[] = [];
    const answer = await traceSend('orders', incoming, [rec('a'), rec('b')], async (rs) => {
      sentRecords = rs;
      return rs.map((_, i) => ({ partition: 3, offset: 40 + i }));
    });
    expect(answer).toEqual([{ partition: 3, offset: 40 }, { partition: 3, offset: 41 }]);
    const [send] = await spans(1);
    expect(send!.name).toBe('send orders');
    expect(send!.kind).toBe(SpanKind.PRODUCER);
    expect(send!.spanContext().traceId).toBe('11111111111111111111111111111111');
    expect(send!.parentSpanContext?.spanId).toBe('2222222222222222');
    expect(send!.attributes).toMatchObject({ 'messaging.system': 'edgeq', 'messaging.destination.name': 'orders', 'messaging.operation.type': 'send', 'messaging.destination.partition.id': '3', 'edgeq.offset': 40, 'messaging.batch.message_count': 2 });
    // Every record carries the send span's context; the originals are untouched.
    const header = formatTraceparent(send!.spanContext());
    for (const r of sentRecords) expect(r.headers[TRACE_HEADER]?.toString()).toBe(header);

    const batch = await buildBatch(sentRecords.map((r) => ({ value: r.value, headers: r.headers })));
    const append = traceAppend('orders', 3, batch, { acks: 'all', brokerId: 1 })!;
    expect(append).not.toBeNull();
    append.appended({ baseOffset: 40 });
    append.end({ isrSize: 3 });
    const replica = traceReplica('orders', 3, batch, { brokerId: 2 })!;
    replica.end();
    const stamped = stampOrigin(batch, { region: 'r1', offset: 40 });
    traceApplied({ topic: 'orders', partition: 3, batches: [stamped], startMs: Date.now() - 5, baseOffset: 9, duplicate: false });
    const { records } = await decodeBatch(stamped);
    await traceReceive('orders', 3, undefined, async () => ({ records }));
    const all = await spans(6);
    const by = (name: string) => all.find((s) => s.name === name)!;
    for (const name of ['append orders', 'commit orders', 'replicate orders', 'apply orders', 'receive orders']) {
      const s = by(name);
      expect(s, name).toBeDefined();
      expect(s.spanContext().traceId, name).toBe(send!.spanContext().traceId);
      expect(s.parentSpanContext?.spanId, name).toBe(send!.spanContext().spanId);
      expect(s.attributes, name).toMatchObject({ 'messaging.system': 'edgeq', 'messaging.destination.name': 'orders', 'messaging.destination.partition.id': '3' });
    }
    expect(by('append orders').attributes).toMatchObject({ 'messaging.operation.name': 'append', 'edgeq.broker.id': 1, 'edgeq.offset': 40, 'messaging.batch.message_count': 2 });
    expect(by('commit orders').attributes).toMatchObject({ 'messaging.operation.name': 'commit', 'edgeq.isr.size': 3 });
    expect(by('replicate orders').attributes).toMatchObject({ 'edgeq.broker.id': 2 });
    expect(by('apply orders').attributes).toMatchObject({ 'edgeq.origin.region': 'r1', 'edgeq.origin.offset': 40, 'edgeq.offset': 9 });
    const receive = by('receive orders');
    expect(receive.kind).toBe(SpanKind.CONSUMER);
    expect(receive.attributes).toMatchObject({ 'messaging.operation.type': 'receive', 'messaging.batch.message_count': 2 });
    expect(receive.links.map((l) => l.context.spanId)).toEqual([send!.spanContext().spanId]);
  });

  it('a consumer group poll makes one receive span per topic with traced records, named by group, linked to each creation context', async () => {
    await install(1);
    const ctxA = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 };
    const ctxB = { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), traceFlags: 1 };
    const h = (sc: typeof ctxA) => [{ key: TRACE_HEADER, value: Buffer.from(`00-${sc.traceId}-${sc.spanId}-01`) }];
    const polled = [
      { topic: 'orders', partition: 0, offset: 5, headers: h(ctxA) },
      { topic: 'orders', partition: 1, offset: 9, headers: h(ctxB) },
      { topic: 'plain', partition: 0, offset: 1, headers: [] },
      { topic: 'single', partition: 2, offset: 7, headers: h(ctxB) },
    ];
    const got = await traceGroupReceive('billing', undefined, async () => polled);
    expect(got).toBe(polled);
    const all = await spans(2);
    await tracer.flush();
    expect(exporter.getFinishedSpans().map((s) => s.name).sort()).toEqual(['receive orders', 'receive single']);
    const orders = all.find((s) => s.name === 'receive orders')!;
    expect(orders.kind).toBe(SpanKind.CONSUMER);
    expect(orders.attributes).toMatchObject({ 'messaging.consumer.group.name': 'billing', 'messaging.operation.type': 'receive', 'messaging.batch.message_count': 2, 'edgeq.offset': 5 });
    expect(orders.attributes['messaging.destination.partition.id']).toBeUndefined();
    expect(orders.links.map((l) => l.context.spanId).sort()).toEqual([ctxA.spanId, ctxB.spanId]);
    expect(orders.spanContext().traceId).toBe(ctxA.traceId);
    const single = all.find((s) => s.name === 'receive single')!;
    expect(single.attributes).toMatchObject({ 'messaging.destination.partition.id': '2', 'messaging.consumer.group.name': 'billing' });

    await shutdownTracing();
    const passed = await traceGroupReceive('billing', undefined, async () => polled);
    expect(passed).toBe(polled);
  });

  it('an unsampled produce writes no header, and its batch is not followed', async () => {
    await install(0);
    const input = [rec('a')];
    let got: ReturnType<typeof rec>[] = [];
    await traceSend('orders', undefined, input, async (rs) => {
      got = rs;
      return [{ partition: 0, offset: 0 }];
    });
    expect(got[0]!.headers[TRACE_HEADER]).toBeUndefined();
    const batch = await buildBatch(got.map((r) => ({ value: r.value, headers: r.headers })));
    expect(traceAppend('orders', 0, batch, { acks: 'all', brokerId: 1 })).toBeNull();
    await traceReceive('orders', 0, undefined, async () => ({ records: (await decodeBatch(batch)).records }));
    await tracer.flush();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('the broker hooks take what the wire gives (an absent bytes field is an empty array) and never throw', async () => {
    await install(1);
    const empty = [] as unknown as Uint8Array;
    expect(traceReplica('orders', 0, empty, { brokerId: 1 })).toBeNull();
    expect(traceAppend('orders', 0, empty, { acks: 'all', brokerId: 1 })).toBeNull();
    // A corrupt length (the log refuses such a batch on its own) is not followed, and does not loop.
    const bad = Buffer.alloc(80);
    bad.writeInt32BE(-5, 8);
    expect(anyBatchTraced(bad)).toBe(false);
    expect(() => traceApplied({ topic: 'orders', partition: 0, batches: [bad], startMs: 0, baseOffset: 0, duplicate: false })).not.toThrow();
  });

  it('with tracing off the hooks pass everything through and read nothing', async () => {
    const traced = await buildBatch([{ value: 'a', headers: { [TRACE_HEADER]: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } }]);
    expect(traceAppend('orders', 0, traced, { acks: 'all', brokerId: 1 })).toBeNull();
    expect(traceReplica('orders', 0, traced, { brokerId: 1 })).toBeNull();
    const input = [rec('a')];
    let got: unknown = null;
    await traceSend('orders', undefined, input, async (rs) => {
      got = rs;
      return [];
    });
    expect(got).toBe(input);
  });
});

describe('JIT warm-up at install', () => {
  it('runs every hook through a tracer of its own: nothing reaches the exporter, the real tracer is installed after it, and real spans flow', async () => {
    exporter = new InMemorySpanExporter();
    tracer = (await installTracing({ enabled: true, url: null, sampleRatio: 1, exportDelayMs: 10 }, { service: 'edgeq-test' }, { exporter, warmUp: true }))!;
    expect(tracer.warmUpMs).toBeGreaterThan(0);
    expect(activeTracer()).toBe(tracer);
    await tracer.flush();
    expect(exporter.getFinishedSpans()).toEqual([]);
    await traceSend('orders', undefined, [rec('a')], async () => [{ partition: 0, offset: 1 }]);
    const got = await spans(1);
    expect(got.map((s) => s.name)).toEqual(['send orders']);
  });

  it('the warm-up itself makes spans at every hop (so a broken hook would leave the path cold), exports them in the real shape, and puts back the tracer it found', async () => {
    const { resourceFromAttributes } = await import('@opentelemetry/resources');
    const sink = new InMemorySpanExporter();
    await install(1);
    const before = activeTracer();
    await warmUpTracing(resourceFromAttributes({ 'service.name': 'edgeq-warm-up-test' }), 3, sink);
    expect(activeTracer()).toBe(before);
    const made = sink.getFinishedSpans();
    // Per round: send, append, commit, replicate, apply, receive.
    for (const name of ['send', 'append', 'commit', 'replicate', 'apply', 'receive']) expect(made.filter((s) => s.name === `${name} edgeq-warm-up`), name).toHaveLength(3);
    expect(made).toHaveLength(18);
    expect(made.every((s) => s.resource.attributes['service.name'] === 'edgeq-warm-up-test')).toBe(true);
    await tracer.flush();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
