/**
 * What the routes need from the cell, over the client library: one producer per acks level (so
 * every request shares batching and connections), a bounded pool of single-partition consumers
 * for reads, and a short-lived cache of partition counts (validating a produce must not cost two
 * metadata round trips on every request).
 */
import type { AcksOption, Admin, Consumer, ConsumerRecord, EdgeqClient, Producer, RecordMetadata } from '../client/index.ts';
import { EdgeqError } from '../core/index.ts';
import type { GatewayLimits } from './limits.ts';
import { toRecordInput, type GatewayBatch, type GatewayRecord } from './records.ts';

/** The result of one read. */
export interface ReadResult {
  records: ConsumerRecord[];
  nextOffset: number;
  highWatermark: number;
}

/**
 * A fresh consumer has nothing buffered, so even `waitMs=0` needs one fetch round trip; this is
 * how long that round trip may take before the read answers with what it has.
 */
export const READ_ROUND_TRIP_MS = 200;

/**
 * Longest a read may take beyond its `waitMs`: finding the high watermark, then records known to
 * exist (below it). Past it the read is refused with a retriable 503 (LEADER_NOT_AVAILABLE and
 * Retry-After), never answered empty: an empty 200 below the high watermark says the records are
 * not there. 3 s covers a healthy read many times over (a fresh gateway bootstraps two clients,
 * each at most one 250 ms hedge delay per silent broker ahead of a live one, plus round trips)
 * while a client's own timeout is usually longer.
 */
export const READ_SERVE_MS_MAX = 3_000;

/** Retry-After of a read refused because the partition's leader did not answer in time. */
export const READ_RETRY_AFTER_MS = 1_000;

/** The answer to a read the cell did not serve in time. */
function unservedRead(o: { topic: string; partition: number; offset: number; highWatermark: number | null; cause?: unknown }): EdgeqError {
  const known = o.highWatermark === null ? 'its high watermark' : `records below the high watermark ${o.highWatermark}`;
  return new EdgeqError('LEADER_NOT_AVAILABLE', `partition ${o.topic}-${o.partition}: the cell did not serve ${known} within ${READ_SERVE_MS_MAX} ms (its leader is not answering); retry`, {
    cause: o.cause,
    details: { topic: o.topic, partition: o.partition, offset: o.offset, highWatermark: o.highWatermark, retryAfterMs: READ_RETRY_AFTER_MS },
  });
}

/** The gateway's view of the cell. */
export class GatewayBackend {
  readonly admin: Admin;
  /** By "acks/kind" (see `producer`). */
  private readonly producers = new Map<string, Producer>();
  /** Idle consumers by "topic\0partition", oldest first in insertion order (LRU by re-insertion). */
  private readonly idle = new Map<string, Consumer[]>();
  private idleCount = 0;
  private readsInflight = 0;
  private readonly partitionCounts = new Map<string, { count: number; global: boolean; atMs: number }>();

  constructor(
    private readonly client: EdgeqClient,
    private readonly limits: GatewayLimits,
  ) {
    this.admin = client.admin();
  }

  /** Partition count of `topic`; UNKNOWN_TOPIC_OR_PARTITION when it does not exist. */
  async partitionCount(topic: string): Promise<number> {
    return (await this.shape(topic)).count;
  }

  /** True when `topic`'s config says `scope=global` (its records carry their origin in reads). */
  async isGlobal(topic: string): Promise<boolean> {
    return (await this.shape(topic)).global;
  }

  /** Partition count and scope of `topic`, cached (a topic's scope never changes; its partitions may grow). */
  private async shape(topic: string): Promise<{ count: number; global: boolean }> {
    const cached = this.partitionCounts.get(topic);
    if (cached && Date.now() - cached.atMs < this.limits.topicCacheTtlMs) return cached;
    const [d] = await this.admin.describeTopics([topic]);
    if (!d) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${topic}" does not exist`, { details: { topic } });
    const shape = { count: d.partitions.length, global: d.config['scope'] === 'global', atMs: Date.now() };
    this.partitionCounts.delete(topic);
    this.partitionCounts.set(topic, shape);
    // Bounded: drop the oldest entry (Map keeps insertion order).
    if (this.partitionCounts.size > this.limits.topicCacheMax) {
      const oldest = this.partitionCounts.keys().next().value;
      if (oldest !== undefined) this.partitionCounts.delete(oldest);
    }
    return shape;
  }

  /** Forgets a topic's cached shape (after it was created or deleted here). */
  forget(topic: string): void {
    this.partitionCounts.delete(topic);
  }

  /** Throws UNKNOWN_TOPIC_OR_PARTITION unless `partition` exists in `topic`. */
  async checkPartition(topic: string, partition: number): Promise<void> {
    const count = await this.partitionCount(topic);
    if (partition < 0 || partition >= count) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${topic}" has no partition ${partition} (it has ${count})`, { details: { topic, partition } });
    }
  }

  /**
   * The producer for `acks` and a kind of input: records (JSON, octets) or whole protobuf batches.
   * Both keep few batches in flight (`produceInflightPerPartitionMax`), so that what arrives
   * meanwhile gathers: records into the next batch, protobuf batches into one merged batch.
   * Measured (2 cores, 50 connections of 100-record protobuf batches, rf 3): 5 in flight unmerged
   * cost the brokers ~0.94 ms of CPU per request, merged with 1 in flight ~0.57 ms, with 5 ~0.68.
   */
  private producer(acks: AcksOption, kind: 'records' | 'batches'): Producer {
    const key = `${acks}/${kind}`;
    let p = this.producers.get(key);
    if (!p) {
      p = this.client.producer({
        acks,
        idempotent: acks === 'all',
        // The gateway checks record sizes itself (recordBytesMax); the producer's estimate adds
        // framing, so its own bound is the body's to never refuse what the gateway accepted.
        recordBytesMax: this.limits.bodyBytesMax,
        topicWaitMs: 500,
        lingerMs: this.limits.produceLingerMs,
        inflightPerPartitionMax: this.limits.produceInflightPerPartitionMax,
        batchBytesMax: this.limits.produceBatchBytesMax,
        deliveryTimeoutMs: this.limits.produceTimeoutMs,
        // Clients' protobuf batches queued for a partition go out merged into one (uncompressed
        // ones; compressed batches pass as they are).
        mergeSealedBatches: kind === 'batches',
      });
      this.producers.set(key, p);
    }
    return p;
  }

  /**
   * Sends checked records; answers offsets in record order. Records naming a partition are sent
   * per partition, the others through the partitioner, all concurrently.
   */
  async produce(topic: string, records: readonly GatewayRecord[], acks: AcksOption): Promise<RecordMetadata[]> {
    const producer = this.producer(acks, 'records');
    const groups = new Map<number | null, number[]>();
    records.forEach((r, i) => {
      const list = groups.get(r.partition) ?? [];
      list.push(i);
      groups.set(r.partition, list);
    });
    const out: RecordMetadata[] = new Array<RecordMetadata>(records.length);
    // allSettled, not all: the answer must not go out while another partition's write is still
    // in flight, or a client could see an error and then find some of its records written later.
    const settled = await Promise.allSettled(
      [...groups].map(async ([partition, indexes]) => {
        const sent = await producer.send(topic, indexes.map((i) => toRecordInput(records[i]!)), partition === null ? {} : { partition });
        // acks=0 gets no answer from the broker, so there is no offset to report: -1 for each.
        sent.forEach((m, j) => (out[indexes[j]!] = acks === 0 ? { ...m, offset: -1 } : m));
      }),
    );
    for (const r of settled) if (r.status === 'rejected') throw r.reason;
    return out;
  }

  /**
   * Forwards checked protobuf batches as they are; answers each batch's base offset (-1 with
   * acks 0), in batch order. Batches of one partition keep their order (the producer appends in
   * call order).
   */
  async produceBatches(topic: string, batches: readonly GatewayBatch[], acks: AcksOption): Promise<number[]> {
    const producer = this.producer(acks, 'batches');
    // allSettled, for the same reason as in `produce`.
    const settled = await Promise.allSettled(batches.map((b) => producer.sendBatch(topic, b.partition, b.bytes, { validatedHeader: b.header })));
    return settled.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return acks === 0 ? -1 : r.value.offset;
    });
  }

  /**
   * Reads up to `maxRecords` from `offset`, waiting up to `waitMs` for the first. Answers within
   * `waitMs + READ_SERVE_MS_MAX`: records, or none when `offset` is the high watermark; otherwise
   * a retriable LEADER_NOT_AVAILABLE (see READ_SERVE_MS_MAX).
   */
  async read(topic: string, partition: number, o: { offset: number; maxRecords: number; waitMs: number }): Promise<ReadResult> {
    if (this.readsInflight >= this.limits.readsInflightMax) {
      throw new EdgeqError('THROTTLED', `${this.readsInflight} reads are waiting, the most the gateway holds (readsInflightMax)`, { details: { retryAfterMs: 1000 } });
    }
    this.readsInflight++;
    try {
      const startedMs = performance.now();
      const leftMs = () => o.waitMs + READ_SERVE_MS_MAX - (performance.now() - startedMs);
      let latest;
      try {
        [latest] = await this.admin.listOffsets(topic, { partitions: [partition], timeoutMs: READ_SERVE_MS_MAX });
      } catch (err) {
        if (err instanceof EdgeqError && err.retriable) throw unservedRead({ topic, partition, offset: o.offset, highWatermark: null, cause: err });
        throw err;
      }
      let highWatermark = latest?.offset ?? 0;
      if (o.offset > highWatermark) {
        throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${o.offset} is past the high watermark ${highWatermark}`, { details: { topic, partition, offset: o.offset, highWatermark } });
      }
      const consumer = this.takeConsumer(topic, partition);
      let reusable = false;
      try {
        const position = consumer.positions()[0]?.offset ?? null;
        if (position !== o.offset) consumer.seek(topic, partition, o.offset);
        let records = await consumer.poll({ maxRecords: o.maxRecords, timeoutMs: Math.max(o.waitMs, READ_ROUND_TRIP_MS) });
        // Below the high watermark the records exist: ask again until the read's time is spent
        // (each poll waits for the fetch already out, it does not send another).
        while (records.length === 0 && o.offset < highWatermark && leftMs() > 0) {
          records = await consumer.poll({ maxRecords: o.maxRecords, timeoutMs: Math.max(1, Math.min(leftMs(), READ_ROUND_TRIP_MS)) });
        }
        reusable = true;
        if (records.length === 0 && o.offset < highWatermark) {
          const now = consumer.positions()[0]?.offset ?? null;
          if (now !== null && now !== o.offset) {
            // The fetch said the offset is out of range and the consumer reset: retention removed it.
            throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${o.offset} is no longer in the log (retention removed it; the log starts at ${now})`, { details: { topic, partition, offset: o.offset, highWatermark, logStartOffset: now } });
          }
          throw unservedRead({ topic, partition, offset: o.offset, highWatermark });
        }
        const last = records[records.length - 1];
        const nextOffset = last ? last.offset + 1 : o.offset;
        highWatermark = Math.max(highWatermark, nextOffset);
        return { records, nextOffset, highWatermark };
      } finally {
        if (reusable) this.returnConsumer(topic, partition, consumer);
        else void consumer.close().catch(() => undefined);
      }
    } finally {
      this.readsInflight--;
    }
  }

  private takeConsumer(topic: string, partition: number): Consumer {
    const key = `${topic}\u0000${partition}`;
    const list = this.idle.get(key);
    const found = list?.pop();
    if (found) {
      this.idleCount--;
      if (list!.length === 0) this.idle.delete(key);
      return found;
    }
    const c = this.client.consumer({ maxWaitMs: this.limits.waitMsMax, autoCommit: false, pollRecordsMax: this.limits.recordsMax });
    c.assign([{ topic, partition }]);
    return c;
  }

  private returnConsumer(topic: string, partition: number, consumer: Consumer): void {
    const key = `${topic}\u0000${partition}`;
    const list = this.idle.get(key) ?? [];
    this.idle.delete(key); // re-insert: this key is now the most recently used
    list.push(consumer);
    this.idle.set(key, list);
    this.idleCount++;
    while (this.idleCount > this.limits.consumersIdleMax) {
      const [oldestKey, oldest] = this.idle.entries().next().value!;
      const victim = oldest.shift();
      if (oldest.length === 0) this.idle.delete(oldestKey);
      this.idleCount--;
      void victim?.close().catch(() => undefined);
    }
  }

  /** Drops idle consumers of a topic (after it was deleted). */
  dropConsumers(topic: string): void {
    for (const [key, list] of [...this.idle]) {
      if (!key.startsWith(`${topic}\u0000`)) continue;
      this.idle.delete(key);
      this.idleCount -= list.length;
      for (const c of list) void c.close().catch(() => undefined);
    }
  }

  /** Closes producers (flushing), consumers and the admin. */
  async close(): Promise<void> {
    const consumers = [...this.idle.values()].flat();
    this.idle.clear();
    this.idleCount = 0;
    await Promise.allSettled([...[...this.producers.values()].map((p) => p.close()), ...consumers.map((c) => c.close()), this.admin.close()]);
    this.producers.clear();
  }
}
