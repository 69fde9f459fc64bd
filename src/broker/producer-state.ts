/**
 * The idempotent producer's state for one partition: for each producer id, its epoch, the last
 * sequence written and the last few batches (to answer retries with their original offsets).
 *
 * It is the partition log's append guard, so every check runs on the log's writer in append order
 * and sees each earlier batch, including ones staged in the same write group. State is rebuilt at
 * open from a snapshot plus the batch headers written after it, so it survives restarts and
 * crashes (the log, not the snapshot, is the truth: a snapshot ahead of the recovered log is
 * discarded).
 */
import { join } from 'node:path';
import { EdgeqError, systemClock, type Clock } from '../core/index.ts';
import {
  scanBatchHeaders,
  type AppendGuard,
  type AppendResult,
  type BatchHeader,
  type PartitionLog,
  type Storage,
} from '../log/index.ts';

/**
 * Batches remembered per producer for duplicate detection. The client keeps at most this many
 * requests in flight per partition with idempotence on, so any retry it can send is among them.
 */
export const PRODUCER_RECENT_BATCHES_MAX = 5;
export const PRODUCER_STATE_FILE = 'producer-state.json';
const SNAPSHOT_VERSION = 1;

interface BatchMeta {
  firstSeq: number;
  lastSeq: number;
  baseOffset: number;
  lastOffset: number;
  appendTimeMs: number;
}

interface ProducerEntry {
  producerId: number;
  epoch: number;
  lastSeq: number;
  lastWriteMs: number;
  recent: BatchMeta[];
}

interface Snapshot {
  version: number;
  /** The log end offset the snapshot covers. */
  offset: number;
  producers: ProducerEntry[];
}

/** Limits and hooks of a ProducerState. */
export interface ProducerStateOptions {
  /** Producers remembered per partition; the least recently writing is forgotten first. */
  producersMax?: number;
  /** Producers idle longer than this are forgotten at snapshot time (Kafka's 7 days). */
  producerIdleMsMax?: number;
  /** The latest epoch the broker handed out for an id (InitProducerId), to fence old instances. */
  currentEpoch?: (producerId: number) => number | undefined;
  clock?: Clock;
}

/** Producer state of one partition; install with `log.setAppendGuard(state)`. */
export class ProducerState implements AppendGuard {
  private committed = new Map<number, ProducerEntry>();
  private staged = new Map<number, ProducerEntry>();
  private readonly producersMax: number;
  private readonly producerIdleMsMax: number;
  private readonly currentEpoch: (producerId: number) => number | undefined;
  private readonly clock: Clock;

  constructor(options: ProducerStateOptions = {}) {
    this.producersMax = options.producersMax ?? 10_000;
    this.producerIdleMsMax = options.producerIdleMsMax ?? 7 * 24 * 3600 * 1000;
    this.currentEpoch = options.currentEpoch ?? (() => undefined);
    this.clock = options.clock ?? systemClock;
  }

  /** Number of producers remembered. */
  get size(): number {
    return this.committed.size;
  }

  check(h: BatchHeader, placement: { baseOffset: number; leaderAppend: boolean }): AppendResult | null {
    // A batch applied from another region carries the producer fields of a producer of *that*
    // region, whose ids may collide with this region's: it is deduplicated on its origin offsets
    // (origin-state.ts), never on them.
    if (h.producerId < 0 || h.originRegion !== null) return null;
    const now = this.clock.nowMs();
    const entry = this.staged.get(h.producerId) ?? this.committed.get(h.producerId);
    const lastSeq = h.baseSequence + h.recordCount - 1;
    const meta: BatchMeta = {
      firstSeq: h.baseSequence,
      lastSeq,
      baseOffset: placement.baseOffset,
      lastOffset: placement.baseOffset + h.lastOffsetDelta,
      appendTimeMs: now,
    };
    if (!placement.leaderAppend) {
      // A copy of the leader's log: record, never refuse.
      this.stage(h.producerId, h.producerEpoch, entry, meta, now);
      return null;
    }
    const fenced = this.currentEpoch(h.producerId);
    if (fenced !== undefined && h.producerEpoch < fenced) {
      throw epochError(h, fenced);
    }
    if (h.baseSequence < 0) {
      throw new EdgeqError('OUT_OF_ORDER_SEQUENCE', `idempotent batch of producer ${h.producerId} has no sequence`, {
        details: { producerId: h.producerId },
      });
    }
    if (!entry || h.producerEpoch > entry.epoch) {
      // A producer (or a new epoch of one) starts at sequence 0.
      if (h.baseSequence !== 0) {
        throw new EdgeqError(
          'OUT_OF_ORDER_SEQUENCE',
          `producer ${h.producerId} epoch ${h.producerEpoch} must start at sequence 0, got ${h.baseSequence}`,
          { details: { producerId: h.producerId, expectedSequence: 0, baseSequence: h.baseSequence } },
        );
      }
      this.stage(h.producerId, h.producerEpoch, undefined, meta, now);
      return null;
    }
    if (h.producerEpoch < entry.epoch) throw epochError(h, entry.epoch);
    const dup = entry.recent.find((b) => b.firstSeq === h.baseSequence && b.lastSeq === lastSeq);
    if (dup) return { baseOffset: dup.baseOffset, lastOffset: dup.lastOffset, appendTimeMs: dup.appendTimeMs };
    const expected = entry.lastSeq + 1;
    if (h.baseSequence !== expected) {
      if (h.baseSequence < expected) {
        throw new EdgeqError(
          'DUPLICATE_SEQUENCE',
          `producer ${h.producerId} sequence ${h.baseSequence} was written before and is older than the last ${PRODUCER_RECENT_BATCHES_MAX} batches`,
          { details: { producerId: h.producerId, expectedSequence: expected, baseSequence: h.baseSequence } },
        );
      }
      throw new EdgeqError(
        'OUT_OF_ORDER_SEQUENCE',
        `producer ${h.producerId} sent sequence ${h.baseSequence}, expected ${expected}: batches are missing`,
        { details: { producerId: h.producerId, expectedSequence: expected, baseSequence: h.baseSequence } },
      );
    }
    this.stage(h.producerId, h.producerEpoch, entry, meta, now);
    return null;
  }

  commit(): void {
    for (const [id, e] of this.staged) {
      this.committed.delete(id); // re-insert: the map's order is least recently written first
      this.committed.set(id, e);
    }
    this.staged.clear();
    while (this.committed.size > this.producersMax) {
      const oldest = this.committed.keys().next().value as number;
      this.committed.delete(oldest);
    }
  }

  abort(): void {
    this.staged.clear();
  }

  private stage(producerId: number, epoch: number, prev: ProducerEntry | undefined, meta: BatchMeta, now: number): void {
    const sameEpoch = prev !== undefined && prev.epoch === epoch;
    const recent = sameEpoch ? [...prev.recent, meta].slice(-PRODUCER_RECENT_BATCHES_MAX) : [meta];
    this.staged.set(producerId, { producerId, epoch, lastSeq: meta.lastSeq, lastWriteMs: now, recent });
  }

  /** Records a batch already in the log (rebuild): no checks. */
  private observe(h: BatchHeader, baseOffset: number, appendTimeMs: number): void {
    if (h.producerId < 0 || h.originRegion !== null) return;
    const prev = this.committed.get(h.producerId);
    if (prev && h.producerEpoch < prev.epoch) return;
    const meta: BatchMeta = {
      firstSeq: h.baseSequence,
      lastSeq: h.baseSequence + h.recordCount - 1,
      baseOffset,
      lastOffset: baseOffset + h.lastOffsetDelta,
      appendTimeMs,
    };
    this.stage(h.producerId, h.producerEpoch, prev, meta, appendTimeMs);
    this.commit();
  }

  /** Writes the snapshot of the committed state, covering the log up to `offset`. */
  async snapshot(storage: Storage, dir: string, offset: number): Promise<void> {
    const now = this.clock.nowMs();
    for (const [id, e] of this.committed) {
      if (now - e.lastWriteMs > this.producerIdleMsMax) this.committed.delete(id);
    }
    const snap: Snapshot = { version: SNAPSHOT_VERSION, offset, producers: [...this.committed.values()] };
    await storage.writeFileAtomic(join(dir, PRODUCER_STATE_FILE), Buffer.from(JSON.stringify(snap)));
  }

  /**
   * Rebuilds the state of `log`: the snapshot in its folder when it is usable, then every batch
   * header after it. Returns how many batches were scanned.
   */
  async rebuild(log: PartitionLog, storage: Storage): Promise<number> {
    this.committed.clear();
    this.staged.clear();
    let from = log.logStartOffset;
    const snap = await readSnapshot(storage, log.dir);
    if (snap && snap.offset <= log.logEndOffset && snap.offset >= log.logStartOffset) {
      for (const p of snap.producers) this.committed.set(p.producerId, p);
      from = snap.offset;
    }
    return scanBatchHeaders(log, from, (h) => this.observe(h, h.baseOffset, h.maxTimestamp));
  }
}

function epochError(h: BatchHeader, current: number): EdgeqError {
  return new EdgeqError(
    'INVALID_PRODUCER_EPOCH',
    `producer ${h.producerId} epoch ${h.producerEpoch} is fenced by epoch ${current}`,
    { details: { producerId: h.producerId, producerEpoch: h.producerEpoch, currentEpoch: current } },
  );
}

async function readSnapshot(storage: Storage, dir: string): Promise<Snapshot | null> {
  const path = join(dir, PRODUCER_STATE_FILE);
  if (!(await storage.exists(path))) return null;
  try {
    const snap = JSON.parse((await storage.readFile(path)).toString('utf8')) as Snapshot;
    if (snap.version !== SNAPSHOT_VERSION || !Number.isSafeInteger(snap.offset) || !Array.isArray(snap.producers)) return null;
    return snap;
  } catch {
    // A damaged snapshot is only a shortcut lost: the log rebuilds everything.
    return null;
  }
}
