/**
 * The producer: `send` puts records into per-partition batches (see accumulator.ts); a sender
 * loop ships ready batches to partition leaders, one Produce request per broker carrying at most
 * one batch per partition, pipelined on the broker's connection.
 *
 * Idempotence (on by default with acks=all): the producer gets an id and epoch (InitProducerId)
 * and numbers each partition's records from 0. A batch keeps its sequence numbers on every retry,
 * so a retry of a batch the broker already wrote is answered with the original offsets instead of
 * being written twice. Order per partition holds because at most `inflightPerPartitionMax` (≤ 5,
 * what the broker's dedup window covers) batches are in flight, retries go out one at a time and
 * before any newer batch, and a batch rejected as out of order because an earlier one is still
 * pending is queued again rather than failed.
 *
 * When a batch fails for good under idempotence, the partitions' sequences no longer match what
 * the broker expects; the producer then waits for its in-flight batches, bumps its epoch
 * (InitProducerId with its id and epoch) and renumbers what is still queued from 0.
 *
 * Sequences belong to one incarnation of a topic (its id, KIP-516). Every request names the id
 * its batches were numbered for, so a broker holding a topic created again under the name refuses
 * them (UNKNOWN_TOPIC_ID, nothing written); once the metadata shows the new id, the partition's
 * sequences start over from 0 and what is queued is renumbered, after its in-flight batches have
 * been answered.
 *
 * Overload (overload.ts): a batch refused as over a quota (QUOTA_EXCEEDED, with the broker's
 * throttle time), cut capacity or throttled is retried after the throttle, within the delivery
 * timeout, and the connection holds every request to that broker meanwhile (KIP-219). Before a
 * request goes out, the adaptive throttle (SRE book, K = 2) may refuse it here, THROTTLED, when
 * the broker has been refusing most of what it was sent.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { buildBatch, checkBatchSize, CompressionCodec, stampProducer, stampProducerInPlace, validateBatchHeader, type BatchHeader, type CompressionName, type RecordInput } from '../log/index.ts';
import { Acks, errorOf, type AcksValue, type ProduceRequest, type ProduceResponse } from '../protocol/index.ts';
import { estimateRecordBytes, ProducerBatch, RecordAccumulator, type RecordMetadata } from './accumulator.ts';
import { BufferBudget, type BufferFullPolicy } from './buffer-budget.ts';
import { Cluster, isStaleMetadataError, type ClusterOptions } from './cluster.ts';
import { DefaultPartitioner, type Partitioner } from './partitioner.ts';
import { backoffDelayMs, retry } from './retry.ts';
import { BrokerThrottles, isOverloadError, locallyThrottled, type AdaptiveThrottleOptions } from './overload.ts';

export type { RecordMetadata } from './accumulator.ts';

/** Acknowledgement levels: 0 (none, no answer), 1 (leader), 'all' (in-sync replicas). */
export type AcksOption = 0 | 1 | 'all';

/** Options of a producer. */
export interface ProducerOptions {
  acks?: AcksOption;
  /** Default true when acks is 'all'; true with other acks is a config error. */
  idempotent?: boolean;
  compression?: CompressionName;
  /** How long a batch waits for more records before it is sent. */
  lingerMs?: number;
  /** Target size of one batch (a single larger record gets a batch of its own). */
  batchBytesMax?: number;
  /** Largest single record accepted by `send` (estimated encoded bytes). */
  recordBytesMax?: number;
  /** Bytes of records held from `send` until answered. */
  bufferBytesMax?: number;
  /** Longest `send` waits for buffer space (policy 'wait'). */
  maxBlockMs?: number;
  bufferFullPolicy?: BufferFullPolicy;
  /** Batches of one partition in flight at once; at most 5 with idempotence. */
  inflightPerPartitionMax?: number;
  /**
   * Send consecutive `sendBatch` batches of a partition as one merged batch (up to
   * `batchBytesMax`) when they are uncompressed and alike; each call still resolves with its own
   * first offset. For a gateway forwarding many small client batches. Default false.
   */
  mergeSealedBatches?: boolean;
  /** Bound on one Produce request (sent to the broker as its timeout too). */
  requestTimeoutMs?: number;
  /** Retries of one batch after retriable errors. */
  retriesMax?: number;
  retryBackoffMs?: number;
  retryBackoffMsMax?: number;
  /** Bound on a batch's life from its first send to its answer, retries included. */
  deliveryTimeoutMs?: number;
  /** How long `send` waits for an unknown topic to appear in metadata before UNKNOWN_TOPIC_OR_PARTITION. */
  topicWaitMs?: number;
  partitioner?: Partitioner;
  random?: () => number;
  /**
   * Client-side adaptive throttling (Google SRE book, K = 2): per broker, refuse a request here
   * with probability max(0, (requests − K·accepts) / (requests + 1)). On by default; `false`
   * turns it off; off with acks 0 (no answers, so no accepts to count).
   */
  adaptiveThrottle?: boolean | AdaptiveThrottleOptions;
}

/**
 * Errors a broker answers only before it appends anything (the leader stopped writing because it
 * cannot renew its lease, a leader epoch it does not know, a topic it does not hold): an attempt
 * that ended with one of these wrote nothing. Not NOT_LEADER: a leader that steps down answers the
 * writes still waiting for their ISR with it, after their append. Any other error of a request
 * that left may follow an append (no answer in time, NOT_ENOUGH_REPLICAS while waiting).
 */
const REFUSED_BEFORE_APPEND: ReadonlySet<string> = new Set(['FENCED_LEADER_EPOCH', 'LEADER_NOT_AVAILABLE', 'ARBITER_UNAVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC_ID']);

/** Defaults of `ProducerOptions`. */
export const PRODUCER_DEFAULTS = {
  acks: 'all' as AcksOption,
  compression: 'none' as CompressionName,
  lingerMs: 5,
  batchBytesMax: 16 * 1024,
  recordBytesMax: 1024 * 1024,
  bufferBytesMax: 32 * 1024 * 1024,
  maxBlockMs: 60_000,
  inflightPerPartitionMax: 5,
  requestTimeoutMs: 30_000,
  retriesMax: 10,
  retryBackoffMs: 100,
  retryBackoffMsMax: 1_000,
  deliveryTimeoutMs: 120_000,
  topicWaitMs: 3_000,
} as const;

/** The broker's dedup window: it remembers this many batches per producer and partition. */
const IDEMPOTENT_INFLIGHT_MAX = 5;

/** A record as `send` takes it. */
export type ProducerRecord = RecordInput;

/** Options of one `send`. */
export interface SendOptions {
  /** Sends every record to this partition instead of asking the partitioner. */
  partition?: number;
}

interface PartitionState {
  topic: string;
  partition: number;
  /** The topic id the sequences below count for ('' until the metadata gave one). */
  topicId: string;
  /** Sequence the next new batch gets. */
  nextSequence: number;
  /** Sequence after the last batch the broker confirmed. */
  confirmedNext: number;
  /** Sent, awaiting an answer, in sequence order. */
  inflight: ProducerBatch[];
  /** To send again, in sequence (or creation) order. */
  retries: ProducerBatch[];
  /** Bound of a merged batch: the batch bound, halved each time the broker refuses one as too large. */
  mergeBytesMax: number;
  /** Why the partition has no leader to send to (its batches wait), or null when it has one. */
  leaderError: EdgeqError | null;
}

function toAcks(a: AcksOption): AcksValue {
  return a === 0 ? Acks.NONE : a === 1 ? Acks.LEADER : Acks.ALL;
}

/** A producer; make one with `createProducer` or `client.producer()`. */
export class Producer {
  private readonly cluster: Cluster;
  private readonly ownsCluster: boolean;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly acks: AcksOption;
  private readonly idempotent: boolean;
  private readonly codec: (typeof CompressionCodec)[CompressionName];
  private readonly recordBytesMax: number;
  private readonly batchBytesMax: number;
  private readonly inflightPerPartitionMax: number;
  private readonly requestTimeoutMs: number;
  private readonly retriesMax: number;
  private readonly retryBackoffMs: number;
  private readonly retryBackoffMsMax: number;
  private readonly deliveryTimeoutMs: number;
  private readonly topicWaitMs: number;
  private readonly random: () => number;
  private readonly partitioner: Partitioner;
  /** Per-broker adaptive throttles; null when off. */
  private readonly throttles: BrokerThrottles | null;
  private readonly accumulator: RecordAccumulator;
  private readonly budget: BufferBudget;
  private readonly partitions = new Map<string, PartitionState>();
  private producerId = -1;
  private producerEpoch = -1;
  private epochResetNeeded = false;
  private started: Promise<void> | null = null;
  private flushing = 0;
  private closing = false;
  private closed = false;
  private senderRunning = false;
  private senderAgain = false;
  private wakeTimer: TimerHandle | null = null;
  /** Watches a sender pass that waits long (see watchPass); armed while passes run. */
  private watchTimer: TimerHandle | null = null;
  private passStartedMs = 0;
  private wakeAtMs = Infinity;
  /** Resolves when the latest `send` has appended its records (see `send`). */
  private appendTail: Promise<void> = Promise.resolve();
  /** Per leader id: resolves when the latest request to it was handed to its connection (see `ship`). */
  private readonly dispatchTails = new Map<number, Promise<void>>();

  constructor(cluster: Cluster, options: ProducerOptions = {}, deps: { ownsCluster?: boolean; logger?: Logger } = {}) {
    this.cluster = cluster;
    this.ownsCluster = deps.ownsCluster ?? false;
    this.clock = cluster.clock ?? systemClock;
    this.logger = (deps.logger ?? cluster.logger ?? silentLogger).child({ component: 'producer' });
    this.acks = options.acks ?? PRODUCER_DEFAULTS.acks;
    if (options.idempotent === true && this.acks !== 'all') {
      throw new EdgeqError('INVALID_CONFIG', 'idempotent: needs acks "all" (the dedup state lives with the in-sync replicas)');
    }
    this.idempotent = options.idempotent ?? this.acks === 'all';
    const compression = options.compression ?? PRODUCER_DEFAULTS.compression;
    if (!(compression in CompressionCodec)) throw new EdgeqError('INVALID_CONFIG', `compression: unknown codec "${compression}"`);
    this.codec = CompressionCodec[compression];
    this.recordBytesMax = options.recordBytesMax ?? PRODUCER_DEFAULTS.recordBytesMax;
    const perPartition = options.inflightPerPartitionMax ?? PRODUCER_DEFAULTS.inflightPerPartitionMax;
    if (this.idempotent && perPartition > IDEMPOTENT_INFLIGHT_MAX) {
      throw new EdgeqError('INVALID_CONFIG', `inflightPerPartitionMax: at most ${IDEMPOTENT_INFLIGHT_MAX} with idempotence (the broker's dedup window)`);
    }
    if (perPartition < 1) throw new EdgeqError('INVALID_CONFIG', 'inflightPerPartitionMax: at least 1');
    this.inflightPerPartitionMax = perPartition;
    this.requestTimeoutMs = options.requestTimeoutMs ?? PRODUCER_DEFAULTS.requestTimeoutMs;
    this.retriesMax = options.retriesMax ?? PRODUCER_DEFAULTS.retriesMax;
    this.retryBackoffMs = options.retryBackoffMs ?? PRODUCER_DEFAULTS.retryBackoffMs;
    this.retryBackoffMsMax = options.retryBackoffMsMax ?? PRODUCER_DEFAULTS.retryBackoffMsMax;
    this.deliveryTimeoutMs = options.deliveryTimeoutMs ?? PRODUCER_DEFAULTS.deliveryTimeoutMs;
    this.topicWaitMs = options.topicWaitMs ?? PRODUCER_DEFAULTS.topicWaitMs;
    this.random = options.random ?? Math.random;
    this.partitioner = options.partitioner ?? new DefaultPartitioner({ random: this.random });
    const adaptive = options.adaptiveThrottle ?? true;
    this.throttles = adaptive === false || this.acks === 0 ? null : new BrokerThrottles(this.clock, (adaptive === true ? undefined : adaptive.random) ?? this.random, adaptive === true ? {} : adaptive);
    const batchBytesMax = options.batchBytesMax ?? PRODUCER_DEFAULTS.batchBytesMax;
    const bufferBytesMax = options.bufferBytesMax ?? PRODUCER_DEFAULTS.bufferBytesMax;
    if (bufferBytesMax < batchBytesMax) {
      throw new EdgeqError('INVALID_CONFIG', `bufferBytesMax (${bufferBytesMax}) must hold at least one batch (batchBytesMax ${batchBytesMax})`);
    }
    this.batchBytesMax = batchBytesMax;
    this.accumulator = new RecordAccumulator({ lingerMs: options.lingerMs ?? PRODUCER_DEFAULTS.lingerMs, batchBytesMax, clock: this.clock, mergeSealed: options.mergeSealedBatches ?? false });
    this.budget = new BufferBudget({
      bufferBytesMax,
      maxBlockMs: options.maxBlockMs ?? PRODUCER_DEFAULTS.maxBlockMs,
      policy: options.bufferFullPolicy ?? 'wait',
      clock: this.clock,
    });
  }

  /** The producer id and epoch (-1 before `connect` or without idempotence). */
  get identity(): { producerId: number; producerEpoch: number } {
    return { producerId: this.producerId, producerEpoch: this.producerEpoch };
  }

  /** Bytes of records held in the buffer. */
  get bufferedBytes(): number {
    return this.budget.usedBytes;
  }

  /** Produce requests the adaptive throttle decided on, and those it refused here (zeros when off). */
  get throttleStats(): { requests: number; rejectedLocally: number } {
    return { requests: this.throttles?.requests ?? 0, rejectedLocally: this.throttles?.rejectedLocally ?? 0 };
  }

  /** Connects and, with idempotence, gets a producer id. `send` calls it when needed. */
  connect(): Promise<void> {
    if (!this.started) {
      this.started = (async () => {
        await this.cluster.connect();
        if (this.idempotent) await this.initProducerId(false);
      })();
      this.started.catch(() => (this.started = null));
    }
    return this.started;
  }

  private async initProducerId(bump: boolean): Promise<void> {
    const ask = async (producerId: number, producerEpoch: number) =>
      retry(async () => {
        const conn = await this.cluster.anyConnection();
        const res = await conn.request('InitProducerId', { producerId, producerEpoch });
        const err = errorOf(res.error);
        if (err) throw err;
        return res;
      }, { clock: this.clock, random: this.random, retriesMax: this.retriesMax, retryBackoffMs: this.retryBackoffMs, retryBackoffMsMax: this.retryBackoffMsMax });
    let res;
    if (bump && this.producerId >= 0) {
      try {
        res = await ask(this.producerId, this.producerEpoch);
      } catch (err) {
        // The broker may not know our id any more (or not support bumps): start afresh.
        this.logger.info({ err: toEdgeqError(err).code }, 'epoch bump refused; asking for a new producer id');
        res = await ask(-1, -1);
      }
    } else {
      res = await ask(-1, -1);
    }
    this.producerId = res.producerId;
    this.producerEpoch = res.producerEpoch;
    this.logger.debug({ producerId: this.producerId, producerEpoch: this.producerEpoch }, 'producer id');
  }

  /**
   * Sends records to a topic; resolves with where each landed once the broker acknowledged them
   * (per `acks`). Records of one call succeed or fail together; a bad or oversized record fails
   * its call without queueing anything.
   */
  async send(topic: string, records: ProducerRecord | readonly ProducerRecord[], options: SendOptions = {}): Promise<RecordMetadata[]> {
    if (this.closing) throw new EdgeqError('CONNECTION_CLOSED', 'the producer is closed', { retriable: false });
    const list: readonly ProducerRecord[] = Array.isArray(records) ? records : [records as ProducerRecord];
    if (list.length === 0) return [];
    const sizes = list.map((r, i) => {
      if (r === null || typeof r !== 'object' || !('value' in r)) {
        throw new EdgeqError('INVALID_ARGUMENT', `record ${i} needs a value (string, Buffer or null)`);
      }
      const size = estimateRecordBytes(r);
      if (size > this.recordBytesMax) {
        throw new EdgeqError('MESSAGE_TOO_LARGE', `record ${i} is about ${size} bytes, over recordBytesMax ${this.recordBytesMax}`, {
          details: { topic, sizeBytes: size, recordBytesMax: this.recordBytesMax },
        });
      }
      return size;
    });
    // Records must reach the accumulator in call order (per partition that is the order they are
    // written in), but the awaits below can take different numbers of turns for different calls
    // (a metadata refresh one call waited for, another did not): each call waits for the one
    // before it to have appended.
    const turn = this.appendTail;
    let release!: () => void;
    this.appendTail = new Promise<void>((r) => (release = r));
    try {
      return await this.sendInTurn(topic, list, sizes, options, turn, release);
    } finally {
      release(); // on failure before the append (calling it twice is harmless)
    }
  }

  /**
   * Sends one already encoded record batch (the storage format, e.g. built by `buildBatch` or
   * received by a gateway) to `partition` as it is: no decode, no re-encode. Only its producer id,
   * epoch and base sequence are replaced with this producer's (the broker deduplicates on them),
   * so the usual retries and idempotence apply. Resolves with the batch's base offset. The header
   * and CRC are checked here, unless the caller passes the header `validateBatchHeader` gave it for
   * these very bytes (a gateway checks every batch of a request before sending any, and the CRC
   * of a large batch is the costly part); the broker checks the records.
   */
  async sendBatch(topic: string, partition: number, batch: Buffer, options: { validatedHeader?: BatchHeader } = {}): Promise<RecordMetadata> {
    if (this.closing) throw new EdgeqError('CONNECTION_CLOSED', 'the producer is closed', { retriable: false });
    if (options.validatedHeader) checkBatchSize(batch.length, this.recordBytesMax);
    const header = options.validatedHeader ?? validateBatchHeader(batch, { messageBytesMax: this.recordBytesMax });
    const turn = this.appendTail;
    let release!: () => void;
    this.appendTail = new Promise<void>((r) => (release = r));
    try {
      await this.connect();
      await this.cluster.waitForTopic(topic, this.topicWaitMs);
      const partitionCount = this.cluster.partitionCount(topic);
      if (!(Number.isInteger(partition) && partition >= 0 && partition < partitionCount)) {
        throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${topic}" has no partition ${partition} (it has ${partitionCount})`, { details: { topic, partition } });
      }
      await turn;
      await this.budget.acquire(batch.length);
      if (this.closed) {
        this.budget.release(batch.length);
        throw new EdgeqError('CONNECTION_CLOSED', 'the producer is closed', { retriable: false });
      }
      const { result } = this.accumulator.appendSealed(topic, partition, batch, header.recordCount);
      release();
      this.wake();
      return await result;
    } finally {
      release();
    }
  }

  private async sendInTurn(
    topic: string,
    list: readonly ProducerRecord[],
    sizes: number[],
    options: SendOptions,
    turn: Promise<void>,
    appended: () => void,
  ): Promise<RecordMetadata[]> {
    await this.connect();
    await this.cluster.waitForTopic(topic, this.topicWaitMs);
    const partitionCount = this.cluster.partitionCount(topic);
    if (options.partition !== undefined && !(Number.isInteger(options.partition) && options.partition >= 0 && options.partition < partitionCount)) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic "${topic}" has no partition ${options.partition} (it has ${partitionCount})`, {
        details: { topic, partition: options.partition },
      });
    }
    await turn;
    await this.budget.acquire(sizes.reduce((a, b) => a + b, 0));
    if (this.closed) {
      this.budget.release(sizes.reduce((a, b) => a + b, 0));
      throw new EdgeqError('CONNECTION_CLOSED', 'the producer is closed', { retriable: false });
    }
    const results = list.map((record, i) => {
      const key = record.key === undefined || record.key === null ? null : typeof record.key === 'string' ? Buffer.from(record.key) : record.key;
      const partition = options.partition ?? this.partitioner.partition({ topic, key, partitionCount });
      return this.accumulator.append(topic, partition, record, sizes[i]!).result;
    });
    // Appended: the next call may append now, while this one waits for its answers.
    appended();
    this.wake();
    return Promise.all(results);
  }

  /** Sends everything queued now and resolves once all of it was answered (failures included). */
  async flush(): Promise<void> {
    this.flushing++;
    try {
      const pending = [
        ...this.accumulator.all(),
        ...[...this.partitions.values()].flatMap((p) => [...p.inflight, ...p.retries]),
      ];
      this.wake();
      await Promise.all(pending.map((b) => b.done));
    } finally {
      this.flushing--;
    }
  }

  /** Flushes, then closes the connections. Later sends fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    try {
      if (this.started) await this.flush();
    } finally {
      this.closed = true;
      this.wakeTimer?.cancel();
      this.watchTimer?.cancel();
      const err = new EdgeqError('CONNECTION_CLOSED', 'the producer closed', { retriable: false });
      this.budget.failWaiters(err);
      for (const b of this.accumulator.clear()) b.fail(err);
      if (this.ownsCluster) await this.cluster.close();
    }
  }

  // ---- the sender ---------------------------------------------------------------------------

  private stateOf(topic: string, partition: number): PartitionState {
    const key = `${topic}\u0000${partition}`;
    let s = this.partitions.get(key);
    if (!s) {
      s = { topic, partition, topicId: this.cluster.topicIdOf(topic), nextSequence: 0, confirmedNext: 0, inflight: [], retries: [], mergeBytesMax: this.batchBytesMax, leaderError: null };
      this.partitions.set(key, s);
    }
    return s;
  }

  /** Runs the sender soon; coalesces wakes. */
  private wake(): void {
    if (this.closed) return;
    if (this.senderRunning) {
      this.senderAgain = true;
      return;
    }
    this.senderRunning = true;
    this.passStartedMs = this.clock.monotonicMs();
    this.watchPass();
    queueMicrotask(() => {
      this.runSender()
        .catch((err) => this.logger.error({ err }, 'sender pass failed'))
        .finally(() => {
          this.senderRunning = false;
          if (this.senderAgain) {
            this.senderAgain = false;
            this.wake();
          }
        });
    });
  }

  /**
   * A sender pass can wait a long time: on a metadata refresh a cell without its arbiter does not
   * answer, on an epoch bump. Batches still waiting must fail at their delivery timeout all the
   * same (found by the arbiter-loss drill: a produce with a 1.5 s timeout answered after 3.7 s),
   * so while passes run a timer checks every tenth of the timeout (10 ms..1 s) and expires what a
   * pass stuck that long has not. At most one timer; none while the sender is idle.
   */
  private watchPass(): void {
    if (this.watchTimer || this.closed) return;
    const periodMs = Math.min(1_000, Math.max(10, this.deliveryTimeoutMs / 10));
    this.watchTimer = this.clock.setTimeout(() => {
      this.watchTimer = null;
      if (this.closed || !this.senderRunning) return;
      const now = this.clock.monotonicMs();
      if (now - this.passStartedMs >= periodMs) this.expireWaiting(now);
      this.watchPass();
    }, periodMs);
  }

  private wakeIn(ms: number): void {
    if (this.closed || !Number.isFinite(ms)) return;
    const at = this.clock.monotonicMs() + Math.max(0, ms);
    if (this.wakeTimer && this.wakeAtMs <= at) return;
    this.wakeTimer?.cancel();
    this.wakeAtMs = at;
    this.wakeTimer = this.clock.setTimeout(() => {
      this.wakeTimer = null;
      this.wakeAtMs = Infinity;
      this.wake();
    }, Math.max(0, ms));
  }

  private anyInflight(): boolean {
    for (const s of this.partitions.values()) if (s.inflight.length > 0) return true;
    return false;
  }

  private async runSender(): Promise<void> {
    if (this.closed || !this.started) return;
    // First, so batches expire even while an epoch bump keeps failing below.
    this.expireWaiting(this.clock.monotonicMs());
    if (this.idempotent && this.epochResetNeeded) {
      // Wait for every in-flight answer first: they tell which batches were written.
      if (this.anyInflight()) return;
      await this.resetEpoch();
    }
    const flushing = this.flushing > 0 || this.closing;
    const now = this.clock.monotonicMs();
    let nextWakeMs = Infinity;
    // Which topics need leaders: refresh metadata first if it is stale.
    try {
      await this.cluster.ensureFresh();
    } catch (err) {
      this.logger.debug({ err: toEdgeqError(err).code }, 'metadata refresh failed; sender backs off');
      this.wakeIn(this.retryBackoffMs);
      return;
    }
    const toSend: ProducerBatch[] = [];
    // A topic created again under its name: its partitions' sequences start over.
    const recreated = this.followTopicIds();
    // Retries first: they are older than anything in the accumulator.
    for (const s of this.partitions.values()) {
      const head = s.retries[0];
      if (!head) continue;
      if (recreated.has(s)) continue; // answers of the old incarnation come first
      if (s.inflight.length > 0) continue; // retries go one at a time, in order
      if (head.retryAtMs > now) {
        nextWakeMs = Math.min(nextWakeMs, head.retryAtMs - now);
        continue;
      }
      if (!this.hasLeader(s.topic, s.partition)) {
        nextWakeMs = Math.min(nextWakeMs, this.retryBackoffMs);
        continue;
      }
      s.retries.shift();
      toSend.push(head);
    }
    const { ready, nextReadyMs } = this.accumulator.ready(flushing);
    nextWakeMs = Math.min(nextWakeMs, nextReadyMs);
    for (const tp of ready) {
      const s = this.stateOf(tp.topic, tp.partition);
      if (recreated.has(s)) continue;
      if (s.retries.length > 0 || toSend.some((b) => b.topic === tp.topic && b.partition === tp.partition)) continue;
      if (s.inflight.length >= this.inflightPerPartitionMax) continue; // woken again by an answer
      if (!this.hasLeader(tp.topic, tp.partition)) {
        nextWakeMs = Math.min(nextWakeMs, this.retryBackoffMs);
        continue;
      }
      const batch = this.accumulator.drain(tp.topic, tp.partition, s.mergeBytesMax)!;
      this.partitioner.onBatchSent(tp.topic, tp.partition);
      if (this.idempotent) {
        batch.baseSequence = s.nextSequence;
        batch.producerId = this.producerId;
        batch.producerEpoch = this.producerEpoch;
        s.nextSequence += batch.count;
      }
      toSend.push(batch);
    }
    if (toSend.length > 0) {
      await this.ship(toSend);
      // More may be ready behind what was just drained.
      this.senderAgain = true;
    }
    this.wakeIn(nextWakeMs);
  }

  /**
   * Brings each partition's sequences to the topic id the metadata shows now. A partition seen for
   * the first time takes it; one whose topic was created again (another id) starts over at 0 and
   * renumbers its retries, once nothing of the old incarnation is in flight. Returns the
   * partitions still waiting for those answers: nothing is sent for them this pass.
   */
  private followTopicIds(): Set<PartitionState> {
    const waiting = new Set<PartitionState>();
    for (const s of this.partitions.values()) {
      const now = this.cluster.topicIdOf(s.topic);
      if (now === '' || now === s.topicId) continue;
      if (s.topicId === '') {
        s.topicId = now;
        continue;
      }
      if (s.inflight.length > 0) {
        waiting.add(s);
        continue;
      }
      this.logger.info({ topic: s.topic, partition: s.partition, from: s.topicId, to: now }, 'topic created again: its sequences start over');
      s.topicId = now;
      s.nextSequence = 0;
      s.confirmedNext = 0;
      for (const b of s.retries) {
        if (this.idempotent) {
          b.baseSequence = s.nextSequence;
          s.nextSequence += b.count;
        }
        b.bytes = null;
      }
    }
    return waiting;
  }

  /**
   * Fails batches waiting to be sent or retried past `deliveryTimeoutMs` since their `send`
   * (Kafka's delivery.timeout.ms): a batch stuck behind an unreachable leader or an epoch bump the
   * arbiter cannot grant fails in bounded time instead of waiting forever. In-flight batches end
   * with their answer or request timeout.
   */
  private expireWaiting(now: number): void {
    // A cutoff, not a predicate closure: this runs on every wake of the sender, and tsx's keepNames
    // makes creating a named closure an Object.defineProperty call.
    const cutoff = now - this.deliveryTimeoutMs;
    for (const s of this.partitions.values()) {
      if (s.retries.length === 0) continue;
      const dead = s.retries.filter((b) => b.createdMs <= cutoff);
      if (dead.length === 0) continue;
      s.retries = s.retries.filter((b) => b.createdMs > cutoff);
      for (const b of dead) {
        // A batch that went out may have been written: later sequences must start over.
        if (this.idempotent && b.attempts > 0) this.epochResetNeeded = true;
        this.finish(b, this.expiredError(b, s.leaderError), -1);
      }
    }
    for (const b of this.accumulator.removeExpired(cutoff)) {
      this.finish(b, this.expiredError(b, this.partitions.get(`${b.topic}\u0000${b.partition}`)?.leaderError ?? null), -1);
    }
  }

  /**
   * The error a batch fails with at its delivery timeout. One that no attempt can have written
   * fails with the typed reason it could not be (the last refusal, or why its partition has no
   * leader: ARBITER_UNAVAILABLE while the cell cannot confirm a leader, say) and `written: false`,
   * so a caller knows a retry cannot duplicate it; one that may have been written is
   * REQUEST_TIMED_OUT, indeterminate, with its last error beside it.
   */
  private expiredError(b: ProducerBatch, leaderError: EdgeqError | null): EdgeqError {
    const details = { topic: b.topic, partition: b.partition };
    const last = leaderError ?? b.lastError;
    if (!b.maybeWritten && last !== null) {
      return new EdgeqError(last.code, `${b.topic}/${b.partition}: not written within deliveryTimeoutMs ${this.deliveryTimeoutMs}: ${last.message}`, { details: { ...details, written: false } });
    }
    const why = b.attempts === 0 ? 'not sent' : 'not acknowledged';
    return new EdgeqError('REQUEST_TIMED_OUT', `${b.topic}/${b.partition}: ${why} within deliveryTimeoutMs ${this.deliveryTimeoutMs}${last ? ` (last: ${last.code})` : ''}`, {
      details: { ...details, ...(last ? { lastError: last.code } : {}), ...(b.maybeWritten ? {} : { written: false }) },
    });
  }

  private hasLeader(topic: string, partition: number): boolean {
    const s = this.stateOf(topic, partition);
    try {
      this.cluster.leaderOf(topic, partition);
      s.leaderError = null;
      return true;
    } catch (err) {
      this.cluster.markStale(err);
      s.leaderError = toEdgeqError(err);
      return false;
    }
  }

  /** Builds the batches' bytes and sends them, one request per leader. */
  private async ship(batches: ProducerBatch[]): Promise<void> {
    await Promise.all(
      batches.map(async (b) => {
        if (b.bytes) return;
        if (b.sealed) {
          const stamp = { producerId: b.producerId, producerEpoch: b.producerEpoch, baseSequence: b.baseSequence };
          // A merged batch is ours alone: stamp it where it is. A caller's batch is copied first.
          b.bytes = b.parts ? stampProducerInPlace(b.sealed.bytes, stamp) : stampProducer(b.sealed.bytes, stamp);
          return;
        }
        b.bytes = await buildBatch(b.records, {
          codec: this.codec,
          producerId: b.producerId,
          producerEpoch: b.producerEpoch,
          baseSequence: b.baseSequence,
          nowMs: this.clock.nowMs(),
        });
      }),
    );
    const byLeader = new Map<number, { batch: ProducerBatch; leaderEpoch: number }[]>();
    for (const b of batches) {
      const leader = this.cluster.leaderOf(b.topic, b.partition);
      const list = byLeader.get(leader.leaderId) ?? [];
      list.push({ batch: b, leaderEpoch: leader.leaderEpoch });
      byLeader.set(leader.leaderId, list);
    }
    const now = this.clock.monotonicMs();
    for (const b of batches) {
      b.attempts++;
      if (b.firstSendMs < 0) b.firstSendMs = now;
      const s = this.stateOf(b.topic, b.partition);
      insertSorted(s.inflight, b, this.idempotent);
    }
    for (const [leaderId, entries] of byLeader) {
      const request: ProduceRequest = { acks: toAcks(this.acks), timeoutMs: this.requestTimeoutMs, topics: [] };
      for (const { batch, leaderEpoch } of entries) {
        // The id the batch's sequences count for: a broker holding another incarnation refuses it.
        const topicId = this.stateOf(batch.topic, batch.partition).topicId;
        let topic = request.topics.find((t) => t.name === batch.topic && (t.topicId ?? '') === topicId);
        if (!topic) {
          topic = { name: batch.topic, topicId, partitions: [] };
          request.topics.push(topic);
        }
        topic.partitions.push({ partition: batch.partition, records: batch.bytes!, leaderEpoch });
      }
      const list = entries.map((e) => e.batch);
      // Not awaited: a leader whose handshake hangs (a frozen broker accepts the connection and
      // answers nothing) must not hold the sender, and with it the batches of every other leader.
      // Chained per leader, so requests to one broker still leave in the order they were made.
      const previous = this.dispatchTails.get(leaderId) ?? Promise.resolve();
      const mine = previous.then(() => this.dispatch(leaderId, request, list)).catch((err: unknown) => this.logger.error({ err }, 'dispatching a produce request failed'));
      this.dispatchTails.set(leaderId, mine);
      void mine.finally(() => {
        if (this.dispatchTails.get(leaderId) === mine) this.dispatchTails.delete(leaderId);
      });
    }
  }

  /**
   * Sends one Produce request to a leader. Its connect and its answer are both bounded by what is
   * left of the batches' `deliveryTimeoutMs`, so a frozen leader holds a batch no longer than its
   * own deadline (before, an in-flight batch could outlive it by the request timeout).
   */
  private async dispatch(leaderId: number, request: ProduceRequest, list: ProducerBatch[]): Promise<void> {
    const leftMs = () => Math.max(1, Math.min(...list.map((b) => b.createdMs + this.deliveryTimeoutMs - this.clock.monotonicMs())));
    if (this.throttles && !this.throttles.admit(leaderId)) {
      const err = locallyThrottled(leaderId);
      for (const b of list) this.onBatchError(b, err, false);
      return;
    }
    let conn;
    try {
      conn = await this.cluster.connectionTo(leaderId, { timeoutMs: leftMs() });
    } catch (err) {
      for (const b of list) this.onBatchError(b, toEdgeqError(err), false);
      return;
    }
    if (this.acks === 0) {
      conn.requestNoResponse('Produce', request).then(
        () => list.forEach((b) => this.onBatchSuccess(b, -1)),
        (err) => list.forEach((b) => this.onBatchError(b, toEdgeqError(err))),
      );
      return;
    }
    // Not awaited: requests to one broker are pipelined; the connection keeps their order.
    conn.request('Produce', request, { timeoutMs: Math.min(this.requestTimeoutMs + 5_000, leftMs()) }).then(
      (res) => this.onResponse(leaderId, list, res),
      (err) => list.forEach((b) => this.onBatchError(b, toEdgeqError(err))),
    );
  }

  private onResponse(leaderId: number, batches: ProducerBatch[], res: ProduceResponse): void {
    let overloaded = false;
    const outcomes = batches.map((b) => {
      let r: ProduceResponse['topics'][number]['partitions'][number] | undefined;
      for (const t of res.topics) if (t.name === b.topic) r ??= t.partitions.find((p) => p.partition === b.partition);
      if (!r) return { b, err: new EdgeqError('UNKNOWN', `Produce answer lacks ${b.topic}/${b.partition}`, { retriable: true }), offset: -1 };
      // The throttle is the request's (KIP-219): each refused batch waits it out.
      const err = errorOf(r.error, { topic: b.topic, partition: b.partition, throttleMs: res.throttleMs ?? 0 });
      if (err && isOverloadError(err)) overloaded = true;
      return { b, err, offset: r.baseOffset };
    });
    // Counted before the batches move on, so their retries see the accept.
    if (!overloaded) this.throttles?.accepted(leaderId);
    for (const o of outcomes) {
      if (o.err) this.onBatchError(o.b, o.err);
      else this.onBatchSuccess(o.b, o.offset);
    }
  }

  private removeInflight(b: ProducerBatch): PartitionState {
    const s = this.stateOf(b.topic, b.partition);
    const i = s.inflight.indexOf(b);
    if (i >= 0) s.inflight.splice(i, 1);
    return s;
  }

  private onBatchSuccess(b: ProducerBatch, baseOffset: number): void {
    const s = this.removeInflight(b);
    if (this.idempotent) s.confirmedNext = Math.max(s.confirmedNext, b.baseSequence + b.count);
    this.finish(b, null, baseOffset);
  }

  /** `sent`: false when the request never left (no connection, throttled here): it wrote nothing. */
  private onBatchError(b: ProducerBatch, err: EdgeqError, sent = true): void {
    const s = this.removeInflight(b);
    b.lastError = err;
    if (sent && !REFUSED_BEFORE_APPEND.has(err.code) && !isOverloadError(err)) b.maybeWritten = true;
    if (isStaleMetadataError(err)) this.cluster.markStale(err);
    const timedOut = this.clock.monotonicMs() - b.createdMs >= this.deliveryTimeoutMs;
    const expired = timedOut || b.attempts > this.retriesMax;
    if (this.idempotent) {
      if (err.code === 'DUPLICATE_SEQUENCE') return this.onBatchSuccess(b, -1);
      if (err.code === 'OUT_OF_ORDER_SEQUENCE' && b.producerEpoch === this.producerEpoch) {
        if (b.baseSequence < s.confirmedNext) {
          // A later batch was confirmed, so this one was written too; the broker just forgot it.
          return this.onBatchSuccess(b, -1);
        }
        if (b.baseSequence > s.confirmedNext && !expired) {
          // An earlier batch of the partition is still pending: the gap is ours, not the broker's.
          return this.requeue(s, b, 0);
        }
      }
      if (err.code === 'UNKNOWN_PRODUCER_ID' || (b.producerEpoch !== this.producerEpoch && !expired)) {
        // The broker lost our id, or the batch predates an epoch bump: renumber and send again.
        this.epochResetNeeded = true;
        return this.requeue(s, b, 0);
      }
      if (this.epochResetNeeded && !expired && err.code === 'OUT_OF_ORDER_SEQUENCE') return this.requeue(s, b, 0);
    }
    if (err.code === 'MESSAGE_TOO_LARGE' && (b.parts || (!b.sealed && b.count > 1)) && !expired && !this.closed) {
      // The topic takes smaller batches than ours (its max.message.bytes) and nothing was written.
      // A merged batch goes again as its parts, and later merges for the partition stay under
      // half its size; a batch of records goes again in two halves, as Kafka's producer does. In
      // order, in its sequence range; the refused attempt does not count against retriesMax
      // (halving 1 MiB down to 1 KiB takes 10).
      if (b.parts) s.mergeBytesMax = Math.max(1, Math.floor((b.sealed?.bytes.length ?? 0) / 2));
      const parts = b.parts ? b.unmerge() : b.splitInTwo();
      for (const p of parts) {
        p.attempts = Math.max(0, b.attempts - 1);
        p.retryAtMs = this.clock.monotonicMs();
        insertSorted(s.retries, p, this.idempotent);
      }
      this.logger.debug({ topic: b.topic, partition: b.partition, records: b.count, parts: parts.length, mergeBytesMax: s.mergeBytesMax }, 'batch too large for the topic; sent again in parts');
      this.wake();
      return;
    }
    if (isOverloadError(err) && !timedOut && !this.closed) {
      // Nothing was written (the broker refused the request whole, or it never left): the attempt
      // does not count against retriesMax, and the retry waits out the broker's throttle.
      b.attempts = Math.max(0, b.attempts - 1);
      const throttleMs = typeof err.details['throttleMs'] === 'number' ? err.details['throttleMs'] : 0;
      const backoff = backoffDelayMs(b.attempts, { retryBackoffMs: this.retryBackoffMs, retryBackoffMsMax: this.retryBackoffMsMax, random: this.random });
      this.logger.debug({ topic: b.topic, partition: b.partition, err: err.code, throttleMs }, 'overloaded: retrying after the throttle');
      // At least a millisecond: a retry refused here again must wait on a timer, never spin.
      return this.requeue(s, b, Math.max(1, throttleMs, backoff));
    }
    if (err.retriable && !expired && !this.closed) {
      this.logger.debug({ topic: b.topic, partition: b.partition, err: err.code, attempt: b.attempts }, 'retrying batch');
      return this.requeue(s, b, backoffDelayMs(b.attempts - 1, { retryBackoffMs: this.retryBackoffMs, retryBackoffMsMax: this.retryBackoffMsMax, random: this.random }));
    }
    if (this.idempotent) this.epochResetNeeded = true;
    // Out of retries, or not retriable: no attempt wrote it if every one was refused before an append.
    this.finish(b, b.maybeWritten ? err : new EdgeqError(err.code, err.message, { retriable: err.retriable, cause: err, details: { ...err.details, written: false } }), -1);
  }

  private requeue(s: PartitionState, b: ProducerBatch, delayMs: number): void {
    b.retryAtMs = this.clock.monotonicMs() + delayMs;
    insertSorted(s.retries, b, this.idempotent);
    this.wake();
  }

  private finish(b: ProducerBatch, err: EdgeqError | null, baseOffset: number): void {
    if (err) b.fail(err);
    else b.complete(baseOffset);
    this.budget.release(b.sizeBytes);
    this.wake();
  }

  /** Bumps the epoch and renumbers every queued batch from 0 (see the file comment). */
  private async resetEpoch(): Promise<void> {
    try {
      await this.initProducerId(true);
    } catch (err) {
      this.logger.warn({ err }, 'producer epoch reset failed; will retry');
      this.wakeIn(this.retryBackoffMsMax);
      throw err;
    }
    this.epochResetNeeded = false;
    for (const s of this.partitions.values()) {
      s.nextSequence = 0;
      s.confirmedNext = 0;
      // A retry that an earlier attempt may have written cannot go out again under the new
      // epoch: the broker would take it as new and write it twice (found by the arbiter-loss
      // drill: acknowledged records duplicated). It ends indeterminate, as its attempt did.
      const unsure = s.retries.filter((b) => b.maybeWritten);
      if (unsure.length > 0) {
        s.retries = s.retries.filter((b) => !b.maybeWritten);
        for (const b of unsure) {
          const last = b.lastError?.code;
          this.finish(b, new EdgeqError('REQUEST_TIMED_OUT', `${b.topic}/${b.partition}: may have been written by an attempt (${last ?? 'no answer'}); not sent again under a new producer epoch, where it could be written twice`, { details: { topic: b.topic, partition: b.partition, ...(last ? { lastError: last } : {}) } }), -1);
        }
      }
      for (const b of s.retries) {
        b.baseSequence = s.nextSequence;
        b.producerId = this.producerId;
        b.producerEpoch = this.producerEpoch;
        b.bytes = null;
        s.nextSequence += b.count;
      }
    }
  }
}

/** Inserts in sequence order (idempotent) or creation order. */
function insertSorted(list: ProducerBatch[], b: ProducerBatch, bySequence: boolean): void {
  const key = (x: ProducerBatch) => (bySequence ? x.baseSequence : x.seq);
  let i = list.length;
  while (i > 0 && key(list[i - 1]!) > key(b)) i--;
  list.splice(i, 0, b);
}

/** Creates a producer with its own cluster connections. */
export function createProducer(cluster: ClusterOptions, options: ProducerOptions = {}): Producer {
  return new Producer(new Cluster(cluster), options, { ownsCluster: true, logger: cluster.logger });
}
