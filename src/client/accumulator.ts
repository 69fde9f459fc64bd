/**
 * The producer's record accumulator: per partition, a queue of batches being filled. A record
 * joins the partition's last batch unless that would pass `batchBytesMax`, in which case a new
 * batch starts. A partition's head batch is ready to send when it is full (another batch queues
 * behind it or it reached `batchBytesMax`), when it has waited `lingerMs`, or when the producer
 * flushes. Lingering trades a few ms of latency for fewer, larger requests.
 */
import { EdgeqError, type Clock } from '../core/index.ts';
import { batchAttributes, mergeable, mergeBatches, type RecordInput } from '../log/index.ts';

/** Where a produced record landed. offset is -1 when unknown (acks 0, or a duplicate the broker no longer remembers). */
export interface RecordMetadata {
  topic: string;
  partition: number;
  offset: number;
}

interface RecordCallback {
  resolve: (m: RecordMetadata) => void;
  reject: (err: EdgeqError) => void;
}

/** A batch of records for one partition, from its first append to its final answer. */
export class ProducerBatch {
  readonly records: RecordInput[] = [];
  private readonly callbacks: RecordCallback[] = [];
  /** Estimated bytes of the records, as charged to the buffer budget. */
  sizeBytes = 0;
  /** Send attempts so far. */
  attempts = 0;
  /**
   * True once an attempt ended in a way that may have written it (no answer in time, a connection
   * lost after the request left, an error the broker gives after appending); false while every
   * attempt was refused before any byte reached a log (never sent, or NOT_LEADER and the like).
   */
  maybeWritten = false;
  /** The last error of an attempt, or of the wait for a leader; null: none yet. */
  lastError: EdgeqError | null = null;
  /** Monotonic time of the first send; -1 before it. */
  firstSendMs = -1;
  /** Monotonic time before which a retry must not go out. */
  retryAtMs = 0;
  /** Idempotence: assigned when first drained, kept on retries so the broker can deduplicate. */
  baseSequence = -1;
  producerId = -1;
  producerEpoch = -1;
  /** The encoded batch, kept so a retry sends the very same bytes; null until built or after a resequence. */
  bytes: Buffer | null = null;
  /**
   * A batch that arrived already encoded (`Producer.sendBatch`): its bytes and record count. It is
   * sent as it is, with only the producer id, epoch and base sequence stamped in, and takes no
   * more records.
   */
  sealed: { bytes: Buffer; count: number } | null = null;
  /**
   * Set on a batch merged from sealed ones (`RecordAccumulator` with `mergeSealed`): they are
   * answered through it, each from its first record's offset, and are sent again on their own if
   * the broker refuses the merged batch as too large.
   */
  parts: ProducerBatch[] | null = null;
  /** Order of creation across the producer; sorts non-idempotent retries (halves of a split share it). */
  readonly seq: number;
  private settled = false;
  private readonly donePromise: Promise<void>;
  private markDone!: () => void;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly createdMs: number,
    seq: number,
  ) {
    this.seq = seq;
    this.donePromise = new Promise((resolve) => (this.markDone = resolve));
  }

  /** Adds a record; the returned promise settles with the batch. */
  add(record: RecordInput, sizeBytes: number): Promise<RecordMetadata> {
    this.records.push(record);
    this.sizeBytes += sizeBytes;
    return new Promise((resolve, reject) => this.callbacks.push({ resolve, reject }));
  }

  /** Wraps an encoded batch of `count` records; the promise settles with its base offset. */
  seal(bytes: Buffer, count: number): Promise<RecordMetadata> {
    this.sealed = { bytes, count };
    this.sizeBytes = bytes.length;
    return new Promise((resolve, reject) => this.callbacks.push({ resolve, reject }));
  }

  /** Number of records. */
  get count(): number {
    return this.sealed ? this.sealed.count : this.records.length;
  }

  /** True once resolved or failed. */
  get isDone(): boolean {
    return this.settled;
  }

  /** Resolves when the batch was answered or failed. */
  get done(): Promise<void> {
    return this.donePromise;
  }

  /** Merges sealed batches of one partition, in order, into one batch that answers for them. */
  static merged(parts: readonly ProducerBatch[], seq: number): ProducerBatch {
    const first = parts[0]!;
    const m = new ProducerBatch(first.topic, first.partition, Math.min(...parts.map((p) => p.createdMs)), seq);
    m.sealed = { bytes: mergeBatches(parts.map((p) => p.sealed!.bytes)), count: parts.reduce((n, p) => n + p.count, 0) };
    m.sizeBytes = parts.reduce((n, p) => n + p.sizeBytes, 0);
    m.parts = [...parts];
    return m;
  }

  /** Answers every record: offsets follow `baseOffset` (or are all -1 when it is -1). */
  complete(baseOffset: number): void {
    if (this.settled) return;
    this.settled = true;
    if (this.parts) {
      let at = 0;
      for (const p of this.parts) {
        p.complete(baseOffset < 0 ? -1 : baseOffset + at);
        at += p.count;
      }
    }
    this.callbacks.forEach((cb, i) => cb.resolve({ topic: this.topic, partition: this.partition, offset: baseOffset < 0 ? -1 : baseOffset + i }));
    this.markDone();
  }

  /**
   * Splits a batch of two or more records, not yet answered, into two halves that take over its
   * records, their answers and its budget share: what the producer does when a broker refuses the
   * batch as too large for the topic (nothing of it was written). The halves keep its creation
   * time and order; with idempotence they take its sequence range in two parts, so batches after
   * it keep theirs.
   */
  splitInTwo(): [ProducerBatch, ProducerBatch] {
    if (this.sealed || this.records.length < 2 || this.settled) throw new EdgeqError('INVALID_ARGUMENT', 'only an open batch of two or more records can be split');
    const n = this.records.length;
    const cut = Math.ceil(n / 2);
    const halves = [new ProducerBatch(this.topic, this.partition, this.createdMs, this.seq), new ProducerBatch(this.topic, this.partition, this.createdMs, this.seq)];
    const firstBytes = Math.round((this.sizeBytes * cut) / n);
    halves.forEach((h, i) => {
      const from = i === 0 ? 0 : cut;
      const to = i === 0 ? cut : n;
      h.records.push(...this.records.slice(from, to));
      h.callbacks.push(...this.callbacks.slice(from, to));
      h.sizeBytes = i === 0 ? firstBytes : this.sizeBytes - firstBytes;
    });
    return this.handOver(halves) as [ProducerBatch, ProducerBatch];
  }

  /**
   * Hands back the parts of a merged batch, unanswered, to be sent on their own (the broker
   * refused the merged batch as too large), with its producer, attempts and sequence range.
   */
  unmerge(): ProducerBatch[] {
    if (!this.parts || this.settled) throw new EdgeqError('INVALID_ARGUMENT', 'only an unanswered merged batch can be unmerged');
    const parts = this.parts;
    this.parts = null;
    return this.handOver(parts);
  }

  /**
   * Gives `parts` (this batch's records, in order) its producer identity, attempts and, with
   * idempotence, its sequence range in order, so batches after it keep theirs. This batch then
   * answers no one itself, and is done (for a flush waiting on it) once all of them are.
   */
  private handOver(parts: readonly ProducerBatch[]): ProducerBatch[] {
    let sequence = this.baseSequence;
    for (const p of parts) {
      p.attempts = this.attempts;
      p.producerId = this.producerId;
      p.producerEpoch = this.producerEpoch;
      p.baseSequence = sequence;
      if (sequence >= 0) sequence += p.count;
      p.bytes = null;
    }
    this.settled = true;
    void Promise.all(parts.map((p) => p.done)).then(() => this.markDone());
    return [...parts];
  }

  /** Fails every record. */
  fail(err: EdgeqError): void {
    if (this.settled) return;
    this.settled = true;
    for (const p of this.parts ?? []) p.fail(err);
    for (const cb of this.callbacks) cb.reject(err);
    this.markDone();
  }
}

/** Options of an accumulator. */
export interface AccumulatorOptions {
  lingerMs: number;
  batchBytesMax: number;
  clock: Clock;
  /**
   * Drain consecutive sealed batches of a partition as one merged batch when they are
   * uncompressed and alike (`mergeable`), up to the bound `drain` is given: what a gateway
   * forwarding its clients' batches does, so the cell appends and replicates one batch, not many.
   */
  mergeSealed?: boolean;
}

interface PartitionQueue {
  topic: string;
  partition: number;
  batches: ProducerBatch[];
}

/** Per-partition queues of batches being filled. */
export class RecordAccumulator {
  private readonly lingerMs: number;
  private readonly batchBytesMax: number;
  private readonly clock: Clock;
  private readonly mergeSealed: boolean;
  private readonly queues = new Map<string, PartitionQueue>();
  private nextSeq = 0;
  private batchCount = 0;

  constructor(options: AccumulatorOptions) {
    this.lingerMs = options.lingerMs;
    this.batchBytesMax = options.batchBytesMax;
    this.clock = options.clock;
    this.mergeSealed = options.mergeSealed ?? false;
  }

  /** Batches not yet drained. */
  get size(): number {
    return this.batchCount;
  }

  private queueOf(topic: string, partition: number): PartitionQueue {
    const key = `${topic}\u0000${partition}`;
    let q = this.queues.get(key);
    if (!q) {
      q = { topic, partition, batches: [] };
      this.queues.set(key, q);
    }
    return q;
  }

  /** Appends a record to its partition's open batch (or a new one); returns the batch and the record's promise. */
  append(topic: string, partition: number, record: RecordInput, sizeBytes: number): { batch: ProducerBatch; result: Promise<RecordMetadata> } {
    const q = this.queueOf(topic, partition);
    let batch = q.batches[q.batches.length - 1];
    // One oversized record still gets a batch of its own: batchBytesMax is a target, not a limit.
    if (!batch || batch.sealed || (batch.count > 0 && batch.sizeBytes + sizeBytes > this.batchBytesMax)) {
      batch = new ProducerBatch(topic, partition, this.clock.monotonicMs(), this.nextSeq++);
      q.batches.push(batch);
      this.batchCount++;
    }
    return { batch, result: batch.add(record, sizeBytes) };
  }

  /**
   * Queues an encoded batch behind the partition's open one (which is then full: nothing may
   * join it after a later batch, or order would break). It is ready at once: it cannot grow.
   */
  appendSealed(topic: string, partition: number, bytes: Buffer, count: number): { batch: ProducerBatch; result: Promise<RecordMetadata> } {
    const q = this.queueOf(topic, partition);
    const batch = new ProducerBatch(topic, partition, this.clock.monotonicMs(), this.nextSeq++);
    q.batches.push(batch);
    this.batchCount++;
    return { batch, result: batch.seal(bytes, count) };
  }

  /**
   * The partitions whose head batch may be sent now (`flushing` makes every head ready), and the
   * ms until the next lingering head becomes ready (Infinity when none).
   */
  ready(flushing: boolean): { ready: { topic: string; partition: number }[]; nextReadyMs: number } {
    const now = this.clock.monotonicMs();
    const ready: { topic: string; partition: number }[] = [];
    let nextReadyMs = Infinity;
    for (const q of this.queues.values()) {
      const head = q.batches[0];
      if (!head) continue;
      const waited = now - head.createdMs;
      if (flushing || q.batches.length > 1 || head.sealed || head.sizeBytes >= this.batchBytesMax || waited >= this.lingerMs) {
        ready.push({ topic: q.topic, partition: q.partition });
      } else {
        nextReadyMs = Math.min(nextReadyMs, this.lingerMs - waited);
      }
    }
    return { ready, nextReadyMs };
  }

  /**
   * Removes and returns the head batch of a partition. With `mergeSealed`, a sealed mergeable head
   * takes the sealed batches behind it that are alike while the merged batch stays within
   * `mergeBytesMax` (the batch bound unless given), and they go as one.
   */
  drain(topic: string, partition: number, mergeBytesMax = this.batchBytesMax): ProducerBatch | undefined {
    const key = `${topic}\u0000${partition}`;
    const q = this.queues.get(key);
    const head = q?.batches.shift();
    if (!q || !head) return undefined;
    this.batchCount--;
    let out = head;
    if (this.mergeSealed && head.sealed && mergeable(head.sealed.bytes)) {
      const attributes = batchAttributes(head.sealed.bytes);
      const parts = [head];
      let bytes = head.sealed.bytes.length;
      for (;;) {
        const next = q.batches[0];
        if (!next?.sealed || !mergeable(next.sealed.bytes) || batchAttributes(next.sealed.bytes) !== attributes) break;
        if (bytes + next.sealed.bytes.length > mergeBytesMax) break;
        q.batches.shift();
        this.batchCount--;
        parts.push(next);
        bytes += next.sealed.bytes.length;
      }
      if (parts.length > 1) out = ProducerBatch.merged(parts, head.seq);
    }
    if (q.batches.length === 0) this.queues.delete(key);
    return out;
  }

  /**
   * Removes and returns the batches `expired` says are past their time. Batches of a partition
   * queue in creation order, so each queue is read from its head only until the first one still
   * in time: the sender calls this on every turn, and it must not walk every queued batch.
   */
  removeExpired(createdAtOrBeforeMs: number): ProducerBatch[] {
    const out: ProducerBatch[] = [];
    if (this.batchCount === 0) return out;
    for (const [key, q] of this.queues) {
      while (q.batches.length > 0 && q.batches[0]!.createdMs <= createdAtOrBeforeMs) {
        out.push(q.batches.shift()!);
        this.batchCount--;
      }
      if (q.batches.length === 0) this.queues.delete(key);
    }
    return out;
  }

  /** Every batch not yet drained. */
  all(): ProducerBatch[] {
    return [...this.queues.values()].flatMap((q) => q.batches);
  }

  /** Removes every batch (the producer failed them). */
  clear(): ProducerBatch[] {
    const out = this.all();
    this.queues.clear();
    this.batchCount = 0;
    return out;
  }
}

/** Estimated bytes a record takes in a batch: its payload plus the varint framing (≤ 5 bytes per field). */
export function estimateRecordBytes(record: RecordInput): number {
  let headers = 0;
  if (record.headers) {
    const pairs = Array.isArray(record.headers) ? record.headers.map((h) => [h.key, h.value] as const) : Object.entries(record.headers);
    for (const [k, v] of pairs) headers += Buffer.byteLength(k, 'utf8') + valueBytes(v) + 10;
  }
  return 21 + valueBytes(record.key) + valueBytes(record.value) + headers;
}

// At module level, not a closure in estimateRecordBytes: tsx compiles with esbuild's keepNames,
// which names every named closure with Object.defineProperty each time it is created, and
// estimateRecordBytes runs once per record sent.
function valueBytes(v: Buffer | string | null | undefined): number {
  return v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length;
}
