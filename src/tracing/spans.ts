/**
 * The spans of a record's path (docs/tracing.md has the tree): `send` at the producing gateway,
 * `append` and `commit` at the leader, `replicate` at each follower, `apply` where another
 * region's exchange applies it, `receive` at the consuming gateway. Each hook's first line returns
 * when no tracer is installed; the broker and exchange hooks then read two attribute bytes per
 * batch and walk only batches that carry a context, after the fact and off the answer's path
 * (their spans are made with the times taken when things happened). A span is one SpanRecord
 * handed to the tracer's queue when it is over (span-queue.ts says why not the SDK's spans).
 */
import type { Attributes, Link, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import type { RecordHeader } from '../log/index.ts';
import { anyBatchTraced, injectRecords, parseTraceparent, recordContext, sampled, TRACE_CONTEXTS_PER_BATCH_MAX, tracedRecords, type TracedRecords } from './carrier.ts';
import {
  ATTR_EDGEQ_ACKS,
  ATTR_EDGEQ_BROKER_ID,
  ATTR_EDGEQ_CONTEXTS_DROPPED,
  ATTR_EDGEQ_ISR_SIZE,
  ATTR_EDGEQ_OFFSET,
  ATTR_EDGEQ_ORIGIN_OFFSET,
  ATTR_EDGEQ_ORIGIN_REGION,
  ATTR_MESSAGING_BATCH_MESSAGE_COUNT,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  MESSAGING_SYSTEM,
} from './semconv.ts';
import { newSpanId, newTraceId } from './ids.ts';
import type { SpanRecord } from './span-queue.ts';
import { activeTracer, type ActiveTracer } from './state.ts';

// The API's enum values, as numbers: this module imports no OpenTelemetry code at run time.
const KIND_INTERNAL = 0 as SpanKind;
const KIND_PRODUCER = 3 as SpanKind;
const KIND_CONSUMER = 4 as SpanKind;
/** STATUS_ERROR */
const STATUS_ERROR = 2;
const STATUS_UNSET: SpanStatus = { code: 0 };
/** W3C trace-flags: sampled (every span made here is). */
const FLAGS_SAMPLED = 1;
const NO_LINKS: Link[] = [];

/** Milliseconds since the epoch with sub-millisecond precision: span times taken on the hot path, used later. */
export function traceNowMs(): number {
  return performance.timeOrigin + performance.now();
}

function baseAttributes(operation: string, topic: string, partition: number | null): Attributes {
  const a: Attributes = { [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM, [ATTR_MESSAGING_DESTINATION_NAME]: topic, [ATTR_MESSAGING_OPERATION_NAME]: operation };
  if (partition !== null) a[ATTR_MESSAGING_DESTINATION_PARTITION_ID] = String(partition);
  return a;
}

/** The context of a new span: a child of `parent` (same trace), or the root of a new trace. */
function childContext(parent: SpanContext | null): SpanContext {
  return { traceId: parent?.traceId ?? newTraceId(), spanId: newSpanId(), traceFlags: FLAGS_SAMPLED };
}

/** A failed span's status; its `error.type` attribute (the typed error's code) goes into `attributes`. */
function failed(err: unknown, attributes: Attributes): SpanStatus {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string') attributes['error.type'] = e.code;
  return { code: STATUS_ERROR, message: typeof e?.message === 'string' ? e.message : String(err) };
}

/** Hands a finished span to the tracer; `context` defaults to a new child of `parent`. */
function emit(t: ActiveTracer, r: Omit<SpanRecord, 'context' | 'links' | 'status'> & { context?: SpanContext; links?: Link[]; status?: SpanStatus }): void {
  t.record({ ...r, context: r.context ?? childContext(r.parent), links: r.links ?? NO_LINKS, status: r.status ?? STATUS_UNSET });
}

// ---------------------------------------------------------------------------------------------
// Gateway: send and receive

/**
 * Runs `send` for records produced over HTTP inside a `send {topic}` PRODUCER span (the child of
 * the request's own `traceparent`, when it has one) and gives each record that span's context as
 * its `traceparent` header: the records' creation context. A produce not sampled is sent as it is.
 */
export async function traceSend<R extends { headers: Record<string, Buffer> }, M extends { partition: number; offset: number }>(
  topic: string,
  incoming: string | undefined,
  records: R[],
  send: (records: R[]) => Promise<M[]>,
): Promise<M[]> {
  const t = activeTracer();
  if (t === null) return send(records);
  const parent = incoming === undefined ? null : parseTraceparent(incoming);
  // The sampling decision, before anything is made: the caller's when it sent a context, else the ratio.
  if (parent !== null ? !sampled(parent) : !(Math.random() < t.sampleRatio)) return send(records);
  const startMs = traceNowMs();
  const attributes: Attributes = { ...baseAttributes('send', topic, null), [ATTR_MESSAGING_OPERATION_TYPE]: 'send' };
  if (records.length > 1) attributes[ATTR_MESSAGING_BATCH_MESSAGE_COUNT] = records.length;
  const context = childContext(parent);
  let status = STATUS_UNSET;
  try {
    const sent = await send(injectRecords(records, context));
    const first = sent[0];
    if (first && sent.every((m) => m.partition === first.partition)) {
      attributes[ATTR_MESSAGING_DESTINATION_PARTITION_ID] = String(first.partition);
      if (first.offset >= 0) attributes[ATTR_EDGEQ_OFFSET] = first.offset;
    }
    return sent;
  } catch (err) {
    status = failed(err, attributes);
    throw err;
  } finally {
    emit(t, { name: `send ${topic}`, kind: KIND_PRODUCER, context, parent, startMs, endMs: traceNowMs(), attributes, status });
  }
}

/** A record as a read answers it: its offset and headers. */
export interface ReadRecordLike {
  offset: number;
  headers: readonly RecordHeader[];
}

/**
 * Runs a read and, when it returned records carrying a sampled creation context (or the request
 * had its own `traceparent`), makes a `receive {topic}` CONSUMER span over it, linked to every
 * creation context it returned (the conventions' rule for a batch receive). Its parent is the
 * request's context; without one, the first record's creation context (the conventions allow a
 * creation context as parent), so that one produce and its consumption form one trace.
 */
export async function traceReceive<T extends { records: readonly ReadRecordLike[] }>(topic: string, partition: number, incoming: string | undefined, read: () => Promise<T>): Promise<T> {
  const t = activeTracer();
  if (t === null) return read();
  const startMs = traceNowMs();
  const out = await read();
  receiveSpan(t, { topic, partition, incoming, records: out.records, startMs, endMs: traceNowMs() });
  return out;
}

/**
 * Runs a consumer group's poll (records of several topics and partitions) and makes one `receive
 * {topic}` span per topic it returned, as `traceReceive` does for one partition, with
 * `messaging.consumer.group.name`; the partition attribute only when the topic's records are all
 * from one partition.
 */
export async function traceGroupReceive<R extends ReadRecordLike & { topic: string; partition: number }>(group: string, incoming: string | undefined, poll: () => Promise<R[]>): Promise<R[]> {
  const t = activeTracer();
  if (t === null) return poll();
  const startMs = traceNowMs();
  const records = await poll();
  const endMs = traceNowMs();
  const byTopic = new Map<string, R[]>();
  for (const r of records) {
    const mine = byTopic.get(r.topic);
    if (mine) mine.push(r);
    else byTopic.set(r.topic, [r]);
  }
  for (const [topic, mine] of byTopic) {
    const partition = mine.every((r) => r.partition === mine[0]!.partition) ? mine[0]!.partition : null;
    receiveSpan(t, { topic, partition, incoming, records: mine, startMs, endMs, attributes: { [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: group } });
  }
  return records;
}

/** The `receive` span of records already read (the SSE stream calls this per chunk it sends). */
export function receiveSpan(t: ActiveTracer, o: { topic: string; partition: number | null; incoming?: string | undefined; records: readonly ReadRecordLike[]; startMs: number; endMs: number; attributes?: Attributes }): void {
  const contexts = new Map<string, SpanContext>();
  for (const r of o.records) {
    if (r.headers.length === 0) continue;
    const sc = recordContext(r.headers);
    if (sc !== null && contexts.size < TRACE_CONTEXTS_PER_BATCH_MAX) contexts.set(`${sc.traceId}-${sc.spanId}`, sc);
  }
  const ambient = parseTraceparent(o.incoming);
  // An unsampled caller does not hide sampled records: their creation context is then the parent.
  const parent = ambient !== null && sampled(ambient) ? ambient : (contexts.values().next().value ?? ambient);
  // Parent-based sampling: an unsampled caller with no sampled record makes no span.
  if (parent === null || !sampled(parent)) return;
  const links: Link[] = [...contexts.values()].map((context) => ({ context }));
  const attributes: Attributes = { ...baseAttributes('receive', o.topic, o.partition), [ATTR_MESSAGING_OPERATION_TYPE]: 'receive', [ATTR_MESSAGING_BATCH_MESSAGE_COUNT]: o.records.length };
  if (o.records[0]) attributes[ATTR_EDGEQ_OFFSET] = o.records[0].offset;
  if (o.attributes) Object.assign(attributes, o.attributes);
  emit(t, { name: `receive ${o.topic}`, kind: KIND_CONSUMER, parent, startMs: o.startMs, endMs: o.endMs, attributes, links });
}

/** A `receive` span at the moment records are delivered on a stream (zero length: a stream's poll has no request of its own). */
export function traceDelivered(topic: string, partition: number, records: readonly ReadRecordLike[]): void {
  const t = activeTracer();
  if (t === null || records.length === 0) return;
  const now = traceNowMs();
  receiveSpan(t, { topic, partition, records, startMs: now, endMs: now });
}

// ---------------------------------------------------------------------------------------------
// Broker: append, commit, replicate

/** What the produce handler tells an append trace. */
export interface AppendTrace {
  /** The log append finished (the records have offsets from `baseOffset`). */
  appended(r: { baseOffset: number }): void;
  /** The produce was answered: committed (acks=all: the high watermark passed it) or failed. */
  end(o: { err?: unknown; isrSize?: number }): void;
}

/**
 * Starts following one partition's produce at the leader: null (nothing to do) when tracing is
 * off or no batch carries a context. Spans per creation context: `append {topic}` (the request's
 * arrival to the log append) and, under acks=all, `commit {topic}` (the append to the high
 * watermark passing the records: the moment the write is acknowledged).
 */
export function traceAppend(topic: string, partition: number, records: Uint8Array, o: { acks: 'all' | 'leader'; brokerId: number }): AppendTrace | null {
  const t = activeTracer();
  if (t === null) return null;
  try {
    return appendTrace(t, topic, partition, records, o);
  } catch {
    return null; // tracing never fails a produce
  }
}

function appendTrace(t: ActiveTracer, topic: string, partition: number, records: Uint8Array, o: { acks: 'all' | 'leader'; brokerId: number }): AppendTrace | null {
  if (!anyBatchTraced(records)) return null;
  const startMs = traceNowMs();
  // Decoded now, while the request's bytes are certainly alive; the spans wait for the end.
  const decoded = tracedRecords(records);
  let appendedMs: number | null = null;
  let baseOffset = -1;
  return {
    appended: (r) => {
      appendedMs = traceNowMs();
      baseOffset = r.baseOffset;
    },
    end: ({ err, isrSize }) => {
      const endMs = traceNowMs();
      const appendEndMs = appendedMs;
      void decoded.then(({ traced, dropped }) => {
        for (const tr of traced) {
          const attributes: Attributes = { ...baseAttributes('append', topic, partition), [ATTR_EDGEQ_BROKER_ID]: o.brokerId, [ATTR_EDGEQ_ACKS]: o.acks, ...tracedAttributes(tr, dropped) };
          if (baseOffset >= 0) attributes[ATTR_EDGEQ_OFFSET] = baseOffset + tr.index;
          const commitAttributes = { ...attributes, [ATTR_MESSAGING_OPERATION_NAME]: 'commit', ...(isrSize !== undefined ? { [ATTR_EDGEQ_ISR_SIZE]: isrSize } : {}) };
          const appendStatus = appendEndMs === null && err !== undefined ? failed(err, attributes) : STATUS_UNSET;
          emit(t, { name: `append ${topic}`, kind: KIND_INTERNAL, parent: tr.context, startMs, endMs: appendEndMs ?? endMs, attributes, status: appendStatus });
          if (appendEndMs === null || o.acks !== 'all') continue;
          const commitStatus = err !== undefined ? failed(err, commitAttributes) : STATUS_UNSET;
          emit(t, { name: `commit ${topic}`, kind: KIND_INTERNAL, parent: tr.context, startMs: appendEndMs, endMs, attributes: commitAttributes, status: commitStatus });
        }
      }).catch(() => undefined);
    },
  };
}

function tracedAttributes(tr: TracedRecords, dropped: number): Attributes {
  const a: Attributes = {};
  if (tr.count > 1) a[ATTR_MESSAGING_BATCH_MESSAGE_COUNT] = tr.count;
  if (tr.originRegion !== null) {
    a[ATTR_EDGEQ_ORIGIN_REGION] = tr.originRegion;
    if (tr.originOffset !== null) a[ATTR_EDGEQ_ORIGIN_OFFSET] = tr.originOffset;
  }
  if (dropped > 0) a[ATTR_EDGEQ_CONTEXTS_DROPPED] = dropped;
  return a;
}

/** A follower's append of fetched records; `end` after it. */
export interface ReplicaTrace {
  end(err?: unknown): void;
}

/**
 * Starts following a follower's append of records fetched from the leader: null when tracing is
 * off or nothing fetched carries a context. One `replicate {topic}` span per creation context,
 * from the fetch answer's arrival to the local append.
 */
export function traceReplica(topic: string, partition: number, records: Uint8Array, o: { brokerId: number }): ReplicaTrace | null {
  const t = activeTracer();
  if (t === null) return null;
  try {
    return replicaTrace(t, topic, partition, records, o);
  } catch {
    return null; // tracing never fails a replica fetch
  }
}

function replicaTrace(t: ActiveTracer, topic: string, partition: number, records: Uint8Array, o: { brokerId: number }): ReplicaTrace | null {
  // `length`, not byteLength: protobufjs gives an absent bytes field as an empty array.
  if (records.length === 0 || !anyBatchTraced(records)) return null;
  const startMs = traceNowMs();
  const decoded = tracedRecords(records);
  return {
    end: (err) => {
      const endMs = traceNowMs();
      void decoded.then(({ traced, dropped }) => {
        for (const tr of traced) {
          const attributes: Attributes = { ...baseAttributes('replicate', topic, partition), [ATTR_EDGEQ_BROKER_ID]: o.brokerId, [ATTR_EDGEQ_OFFSET]: tr.offset, ...tracedAttributes(tr, dropped) };
          const status = err !== undefined ? failed(err, attributes) : STATUS_UNSET;
          emit(t, { name: `replicate ${topic}`, kind: KIND_INTERNAL, parent: tr.context, startMs, endMs, attributes, status });
        }
      }).catch(() => undefined);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Exchange: apply

/**
 * After the exchange applied a run of another region's batches in this region: one `apply {topic}`
 * span per creation context in them, from the fetch answer's arrival (`startMs`) to the local
 * leader's acks=all answer. Nothing when tracing is off or no batch carries a context.
 */
export function traceApplied(o: { topic: string; partition: number; batches: readonly Buffer[]; startMs: number; baseOffset: number; duplicate: boolean }): void {
  const t = activeTracer();
  if (t === null) return;
  try {
    applySpans(t, o);
  } catch {
    // tracing never fails an apply
  }
}

function applySpans(t: ActiveTracer, o: { topic: string; partition: number; batches: readonly Buffer[]; startMs: number; baseOffset: number; duplicate: boolean }): void {
  if (!o.batches.some((b) => anyBatchTraced(b))) return;
  const endMs = traceNowMs();
  const bytes = o.batches.length === 1 ? o.batches[0]! : Buffer.concat(o.batches);
  void tracedRecords(bytes).then(({ traced, dropped }) => {
    for (const tr of traced) {
      const attributes: Attributes = { ...baseAttributes('apply', o.topic, o.partition), ...tracedAttributes(tr, dropped), 'edgeq.duplicate': o.duplicate };
      if (o.baseOffset >= 0 && !o.duplicate) attributes[ATTR_EDGEQ_OFFSET] = o.baseOffset + tr.index;
      emit(t, { name: `apply ${o.topic}`, kind: KIND_INTERNAL, parent: tr.context, startMs: o.startMs, endMs, attributes });
    }
  }).catch(() => undefined);
}
