/**
 * The log of one partition: a folder of segments that batches are appended to and read from as
 * stored bytes.
 *
 * Appends go through one writer: concurrent appends queue, and each turn of the writer takes every
 * queued batch (up to the group bounds) and writes them with one writev. Under the `sync` policy
 * the writer then runs one fdatasync that covers the whole group before answering any of them
 * (group commit), and appends that arrive meanwhile form the next group.
 *
 * Readers see batches up to `logEndOffset`, which moves only after the policy's durability holds,
 * so a failed or torn write is never visible.
 */
import { join } from 'node:path';
import { EdgeqError, toEdgeqError } from '../core/errors.ts';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { assert } from '../core/assert.ts';
import { validateBatchHeader, validateBatchRecords, decodeBatch } from './batch.ts';
import {
  LOG_OVERHEAD,
  OFFSET_BATCH_LENGTH,
  OFFSET_LAST_OFFSET_DELTA,
  OFFSET_LEADER_EPOCH,
  OFFSET_MAX_TIMESTAMP,
  setBaseOffset,
  setLeaderEpoch,
  type BatchHeader,
} from './batch-format.ts';
import { readCheckpoint, writeCheckpoint, CHECKPOINT_FILE, type RecoveryCheckpoint } from './checkpoint.ts';
import { FilePool } from './file-pool.ts';
import { resolveLogConfig, type LogConfig } from './log-config.ts';
import { OffsetIndex } from './offset-index.ts';
import { parseSegmentName, scanBatches, Segment, type ScannedBatch } from './segment.ts';
import { isDiskFull, type Storage } from './storage.ts';
import { TailCache } from './tail-cache.ts';
import { TimeIndex } from './time-index.ts';
import { readInt64 } from './varint.ts';

/** Hooks for metrics; all optional. */
export interface LogObserver {
  onFsync?(durationMs: number): void;
  onAppend?(batches: number, bytes: number): void;
  /** A read that returned data, answered from the tail cache or from the segment file. */
  onRead?(source: 'cache' | 'file', bytes: number): void;
}

/** What a log needs from its surroundings. */
export interface LogDeps {
  storage: Storage;
  clock?: Clock;
  logger?: Logger;
  /** Shared by the logs of a broker; a private pool of 64 handles when absent. */
  filePool?: FilePool;
  observer?: LogObserver;
}

/** Options of one append. */
export interface AppendOptions {
  /** Stamp this leader epoch into the batch. */
  leaderEpoch?: number;
  /**
   * When false the batch keeps its base offset, which must equal the log end offset (a follower
   * copying its leader). Default true: the log assigns offsets.
   */
  assignOffsets?: boolean;
  /**
   * False skips the record walk of `LogConfig.validateRecords` for this batch: for a follower
   * copying its leader, which walked the records before it accepted the batch. The header and
   * the CRC, which covers every record, are still checked, so the bytes are the ones it walked.
   */
  validateRecords?: boolean;
}

/** Where an appended batch landed. */
export interface AppendResult {
  baseOffset: number;
  lastOffset: number;
  /** Wall time at which the append was written. */
  appendTimeMs: number;
  /** True when the guard recognised a retry of a batch already written: nothing new was written. */
  duplicate?: boolean;
}

/**
 * Decides, on the writer and in append order, whether a batch may be written: the hook for the
 * idempotent producer, whose sequence checks must see every earlier batch of the same partition.
 * `check` runs for each batch as it is placed (offsets known, nothing written yet) and either
 * stages it (returns null), answers with an earlier result (a duplicate: not written) or throws a
 * typed error (that batch alone is refused). After the placed group is written (and synced under
 * `sync`), `commit` is called; if the write fails, `abort` drops what was staged since the last
 * commit.
 */
export interface AppendGuard {
  check(header: BatchHeader, placement: { baseOffset: number; leaderAppend: boolean }): AppendResult | null;
  commit(): void;
  abort(): void;
}

/** Stored batch bytes returned by a read. */
export interface ReadResult {
  /** Whole batches as stored; the first may start before the requested offset. */
  bytes: Buffer;
  /** Offset after the last returned batch (the next offset to ask for). */
  nextOffset: number;
  logStartOffset: number;
  logEndOffset: number;
}

/** Options of a read. */
export interface ReadOptions {
  /** Return only batches that end below this offset (a high watermark). */
  maxOffset?: number;
}

interface PendingAppend {
  kind: 'append';
  batch: Buffer;
  header: BatchHeader | null;
  validated: Promise<BatchHeader> | null;
  options: AppendOptions;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
}

interface PendingOp {
  kind: 'op';
  run: () => Promise<void>;
  fail: (e: unknown) => void;
}

const PRIVATE_POOL_FILES = 64;

export class PartitionLog {
  readonly config: LogConfig;
  private readonly storage: Storage;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly pool: FilePool;
  private readonly observer: LogObserver;
  private segments: Segment[] = [];
  private queue: (PendingAppend | PendingOp)[] = [];
  private queuedBytes = 0;
  private draining = false;
  private drained: (() => void)[] = [];
  private closed = false;
  /** Set after an fsync failure: the page cache may have dropped our writes, so stop. */
  private failure: EdgeqError | null = null;
  private visibleEndOffset = 0;
  /** How much of the active segment is known to be fdatasync'd, and the log state there. */
  private synced: SyncedState = { position: 0, nextOffset: 0, maxTimestamp: -1 };
  private lastCheckpointMs = 0;
  private flushTimer: TimerHandle | null = null;
  private retentionTimer: TimerHandle | null = null;
  private readonly appendListeners = new Set<(logEndOffset: number) => void>();
  private readonly pendingDeletes = new Set<Promise<void>>();
  private guard: AppendGuard | null = null;
  private readonly tail: TailCache;

  private constructor(
    readonly dir: string,
    config: LogConfig,
    deps: LogDeps,
  ) {
    this.config = config;
    this.storage = deps.storage;
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ log: dir });
    this.pool = deps.filePool ?? new FilePool(deps.storage, PRIVATE_POOL_FILES);
    this.observer = deps.observer ?? {};
    this.tail = new TailCache(config.tailCacheBytesMax);
  }

  /** Installs the append guard (one per log; the partition's producer state). */
  setAppendGuard(guard: AppendGuard | null): void {
    this.guard = guard;
  }

  /** Opens (creating when absent) the log in `dir`, recovering from a crash when needed. */
  static async open(dir: string, config: Partial<LogConfig>, deps: LogDeps): Promise<PartitionLog> {
    const log = new PartitionLog(dir, resolveLogConfig(config), deps);
    await log.load();
    log.scheduleFlush();
    return log;
  }

  // ---------------------------------------------------------------------------------------------
  // State

  /** First offset still held. */
  get logStartOffset(): number {
    return this.segments[0]!.baseOffset;
  }

  /** Offset after the last batch readers may see (durable under the flush policy). */
  get logEndOffset(): number {
    return this.visibleEndOffset;
  }

  /** Bytes held by all segments. */
  get sizeBytes(): number {
    return this.segments.reduce((n, s) => n + s.size, 0);
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  /** Base offsets of the segments, oldest first. */
  segmentBaseOffsets(): number[] {
    return this.segments.map((s) => s.baseOffset);
  }

  /** Calls `listener` with the new log end offset after each append becomes visible. */
  onAppend(listener: (logEndOffset: number) => void): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  // ---------------------------------------------------------------------------------------------
  // Append

  /**
   * Appends one batch. The log takes ownership of `batch` (it writes the base offset and leader
   * epoch into it). Resolves once the batch is durable under the flush policy; rejects with
   * CORRUPT_BATCH or MESSAGE_TOO_LARGE (nothing written), QUEUE_FULL, STORAGE_FULL or STORAGE_ERROR.
   */
  append(batch: Buffer, options: AppendOptions = {}): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new EdgeqError('LOG_CLOSED', `log ${this.dir} is closed`));
    if (this.failure) return Promise.reject(this.failure);
    let header: BatchHeader;
    try {
      header = validateBatchHeader(batch, this.config);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.queuedBytes + batch.length > this.config.appendQueueBytesMax) {
      return Promise.reject(
        new EdgeqError('QUEUE_FULL', `append queue holds ${this.queuedBytes} bytes, limit ${this.config.appendQueueBytesMax}`),
      );
    }
    // Uncompressed batches are walked here, synchronously; compressed ones decompress off-thread
    // while they wait in the queue, which keeps append order.
    let validated: Promise<BatchHeader> | null = null;
    if (this.config.validateRecords && options.validateRecords !== false) {
      try {
        const pending = validateBatchRecords(batch, header, this.config);
        if (pending) {
          validated = pending.then(() => header);
          validated.catch(() => undefined);
        }
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ kind: 'append', batch, header, validated, options, resolve, reject });
      this.queuedBytes += batch.length;
      this.kick();
    });
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        if (head.kind === 'op') {
          this.queue.shift();
          await head.run();
          continue;
        }
        const group: PendingAppend[] = [];
        let bytes = 0;
        while (group.length < this.config.writeGroupBatchesMax) {
          const next = this.queue[0];
          if (next === undefined || next.kind !== 'append') break;
          if (group.length > 0 && bytes + next.batch.length > this.config.writeGroupBytesMax) break;
          this.queue.shift();
          this.queuedBytes -= next.batch.length;
          bytes += next.batch.length;
          group.push(next);
        }
        const valid: PendingAppend[] = [];
        for (const p of group) {
          if (p.validated) {
            try {
              p.header = await p.validated;
            } catch (err) {
              p.reject(err);
              continue;
            }
          }
          valid.push(p);
        }
        if (valid.length > 0) await this.writeGroup(valid);
      }
    } finally {
      this.draining = false;
      for (const d of this.drained.splice(0)) d();
    }
  }

  /** Runs `fn` on the writer, after every append queued before it. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) {
        reject(new EdgeqError('LOG_CLOSED', `log ${this.dir} is closed`));
        return;
      }
      this.queue.push({ kind: 'op', run: () => fn().then(resolve, reject), fail: reject });
      this.kick();
    });
  }

  private async writeGroup(group: PendingAppend[]): Promise<void> {
    if (this.failure) {
      for (const p of group) p.reject(this.failure);
      return;
    }
    let rest = group;
    while (rest.length > 0) {
      let seg = this.active;
      if (this.shouldRoll(seg, rest[0]!.batch.length)) {
        try {
          seg = await this.roll();
        } catch (err) {
          const e = this.storageError(err, 'roll a segment');
          for (const p of rest) p.reject(e);
          return;
        }
      }
      // Take the batches that fit in this segment (at least one: a fresh segment takes anything).
      let n = 0;
      let bytes = 0;
      let next = seg.nextOffset;
      while (n < rest.length) {
        const b = rest[n]!;
        const count = b.header!.recordCount;
        const fits = seg.size + bytes + b.batch.length <= this.config.segmentBytesMax;
        const relFits = next + count - seg.baseOffset < 2 ** 31;
        if (n > 0 && (!fits || !relFits)) break;
        bytes += b.batch.length;
        next += count;
        n++;
      }
      await this.writeToSegment(seg, rest.slice(0, n), bytes);
      rest = rest.slice(n);
    }
  }

  private async writeToSegment(seg: Segment, group: PendingAppend[], bytes: number): Promise<void> {
    const startPos = seg.size;
    let next = seg.nextOffset;
    const placed: ScannedBatch[] = [];
    const buffers: Buffer[] = [];
    const accepted: PendingAppend[] = [];
    const duplicates: { p: PendingAppend; result: AppendResult }[] = [];
    const guard = this.guard;
    let pos = startPos;
    for (const p of group) {
      const h = p.header!;
      if (guard) {
        let earlier: AppendResult | null;
        try {
          earlier = guard.check(h, { baseOffset: p.options.assignOffsets === false ? h.baseOffset : next, leaderAppend: p.options.assignOffsets !== false });
        } catch (err) {
          p.reject(err);
          continue;
        }
        if (earlier) {
          duplicates.push({ p, result: { ...earlier, duplicate: true } });
          continue;
        }
      }
      if (p.options.assignOffsets === false) {
        if (h.baseOffset !== next) {
          p.reject(
            new EdgeqError('INVALID_ARGUMENT', `batch starts at offset ${h.baseOffset}, log ends at ${next}`, {
              details: { baseOffset: h.baseOffset, logEndOffset: next },
            }),
          );
          continue;
        }
      } else {
        setBaseOffset(p.batch, next);
      }
      if (p.options.leaderEpoch !== undefined) setLeaderEpoch(p.batch, p.options.leaderEpoch);
      const epoch = p.batch.readInt32BE(OFFSET_LEADER_EPOCH);
      placed.push({
        position: pos,
        sizeBytes: p.batch.length,
        baseOffset: next,
        lastOffsetDelta: h.lastOffsetDelta,
        maxTimestamp: h.maxTimestamp,
        leaderEpoch: epoch,
      });
      buffers.push(p.batch);
      accepted.push(p);
      pos += p.batch.length;
      next += h.recordCount;
    }
    if (accepted.length === 0) {
      // Only duplicates (or refusals): their originals were acknowledged, so answer at once.
      guard?.commit();
      for (const d of duplicates) d.p.resolve(d.result);
      return;
    }
    const total = pos - startPos;
    assert(total <= bytes, 'group grew while being placed');

    const lease = await this.pool.acquire(seg.logPath, { create: true }).catch((err: unknown) => err as Error);
    if (lease instanceof Error) {
      const e = this.storageError(lease, 'open the active segment');
      guard?.abort();
      for (const p of accepted) p.reject(e);
      for (const d of duplicates) d.p.reject(e);
      return;
    }
    try {
      let written: number;
      try {
        written = await lease.file.writev(buffers, startPos);
        if (written !== total) throw Object.assign(new Error(`short write: ${written} of ${total} bytes`), { code: 'ENOSPC' });
      } catch (err) {
        // Cut the partial write off so the file ends where the valid batches end. Even if this
        // fails, the next write goes to `startPos` and recovery drops any leftover tail.
        await lease.file.truncate(startPos).catch(() => undefined);
        const e = this.storageError(err, 'write batches');
        guard?.abort();
        for (const p of accepted) p.reject(e);
        for (const d of duplicates) d.p.reject(e);
        return;
      }
      const appendTimeMs = this.clock.nowMs();
      for (const b of placed) seg.noteBatch(b, this.config.indexIntervalBytes);
      if (this.config.flushPolicy === 'sync') {
        const t0 = this.clock.monotonicMs();
        try {
          await lease.file.datasync();
        } catch (err) {
          this.failure = this.storageError(err, 'fdatasync');
          this.logger.error({ err }, 'fdatasync failed; the log refuses appends until reopened');
          guard?.abort();
          for (const p of accepted) p.reject(this.failure);
          for (const d of duplicates) d.p.reject(this.failure);
          return;
        }
        this.observer.onFsync?.(this.clock.monotonicMs() - t0);
        this.synced = syncedStateOf(seg);
        await this.maybeCheckpoint();
      }
      this.visibleEndOffset = seg.nextOffset;
      this.tail.add(buffers);
      guard?.commit();
      this.observer.onAppend?.(accepted.length, total);
      for (let i = 0; i < accepted.length; i++) {
        const b = placed[i]!;
        accepted[i]!.resolve({ baseOffset: b.baseOffset, lastOffset: b.baseOffset + b.lastOffsetDelta, appendTimeMs });
      }
      for (const d of duplicates) d.p.resolve(d.result);
      for (const l of this.appendListeners) l(this.visibleEndOffset);
    } finally {
      lease.release();
    }
  }

  private storageError(err: unknown, what: string): EdgeqError {
    if (err instanceof EdgeqError) return err;
    if (isDiskFull(err)) {
      return new EdgeqError('STORAGE_FULL', `disk full: could not ${what} in ${this.dir}`, { cause: err });
    }
    return new EdgeqError('STORAGE_ERROR', `could not ${what} in ${this.dir}: ${(err as Error).message}`, { cause: err });
  }

  private shouldRoll(seg: Segment, nextBatchBytes: number): boolean {
    if (seg.size === 0) return false;
    if (seg.size + nextBatchBytes > this.config.segmentBytesMax) return true;
    return this.clock.nowMs() - seg.createdAtMs >= this.config.segmentMsMax;
  }

  /** Seals the active segment (synced, indexes written) and starts a new one at the log end. */
  private async roll(): Promise<Segment> {
    const old = this.active;
    await this.pool.with(old.logPath, (f) => f.datasync());
    await this.writeIndexes(old, true);
    const seg = new Segment(this.dir, old.nextOffset, this.clock.nowMs());
    await this.pool.with(seg.logPath, async () => undefined, { create: true });
    await this.storage.syncDir(this.dir);
    this.segments.push(seg);
    // A file read stops at a segment's end; so does the cache, by starting again with the new one.
    this.tail.clear();
    this.synced = syncedStateOf(seg);
    await this.checkpoint(false);
    this.logger.debug({ baseOffset: seg.baseOffset }, 'rolled segment');
    return seg;
  }

  private async writeIndexes(seg: Segment, seal: boolean): Promise<void> {
    const time = seal ? cloneSealed(seg) : seg.timeIndex;
    await this.storage.writeFileAtomic(seg.indexPath, seg.offsetIndex.serialize());
    await this.storage.writeFileAtomic(seg.timeIndexPath, time.serialize());
    if (seal) seg.timeIndex = time;
  }

  private async checkpoint(clean: boolean): Promise<void> {
    const seg = this.active;
    const at = clean ? syncedStateOf(seg) : this.synced;
    const cp: RecoveryCheckpoint = { segmentBaseOffset: seg.baseOffset, ...at, clean };
    // The index files must cover at least the checkpointed prefix, so they are written first.
    await this.writeIndexes(seg, clean);
    await writeCheckpoint(this.storage, this.dir, cp);
    this.lastCheckpointMs = this.clock.monotonicMs();
  }

  private async maybeCheckpoint(): Promise<void> {
    if (this.clock.monotonicMs() - this.lastCheckpointMs < this.config.checkpointIntervalMs) return;
    await this.checkpoint(false).catch((err: unknown) => this.logger.warn({ err }, 'recovery checkpoint failed'));
  }

  /** Forces an fdatasync of the active segment (any policy). */
  flush(): Promise<void> {
    return this.exclusive(() => this.syncActive());
  }

  private async syncActive(): Promise<void> {
    const seg = this.active;
    const target = syncedStateOf(seg);
    if (target.position === this.synced.position) return;
    const t0 = this.clock.monotonicMs();
    try {
      await this.pool.with(seg.logPath, (f) => f.datasync());
    } catch (err) {
      this.failure = this.storageError(err, 'fdatasync');
      this.logger.error({ err }, 'fdatasync failed; the log refuses appends until reopened');
      throw this.failure;
    }
    this.observer.onFsync?.(this.clock.monotonicMs() - t0);
    if (this.active === seg && target.position > this.synced.position) this.synced = target;
    await this.maybeCheckpoint();
  }

  private scheduleFlush(): void {
    if (this.closed || this.config.flushPolicy !== 'interval') return;
    this.flushTimer = this.clock.setTimeout(() => {
      // Runs beside the writer: an fdatasync may overlap a write, which only makes it cover more.
      void this.syncActive()
        .catch(() => undefined)
        .finally(() => this.scheduleFlush());
    }, this.config.flushIntervalMs);
  }

  // ---------------------------------------------------------------------------------------------
  // Read

  private segmentFor(offset: number): Segment {
    let lo = 0;
    let hi = this.segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.segments[mid]!.baseOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    return this.segments[lo]!;
  }

  /**
   * Reads stored batches starting with the one that holds `offset`, up to `maxBytes` of whole
   * batches (always at least one, so a reader can make progress past a large batch), from one
   * segment. Offsets below the log start or past the log end give OFFSET_OUT_OF_RANGE.
   */
  async read(offset: number, maxBytes: number, options: ReadOptions = {}): Promise<ReadResult> {
    if (this.closed) throw new EdgeqError('LOG_CLOSED', `log ${this.dir} is closed`);
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new EdgeqError('INVALID_ARGUMENT', `bad read arguments offset=${offset} maxBytes=${maxBytes}`);
    }
    const logStartOffset = this.logStartOffset;
    const logEndOffset = this.visibleEndOffset;
    if (offset < logStartOffset || offset > logEndOffset) {
      throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${offset} is outside [${logStartOffset}, ${logEndOffset}]`, {
        details: { offset, logStartOffset, logEndOffset },
      });
    }
    const end = Math.min(options.maxOffset ?? logEndOffset, logEndOffset);
    const empty = { bytes: Buffer.alloc(0), nextOffset: offset, logStartOffset, logEndOffset };
    if (offset >= end) return empty;
    const cached = this.tail.read(offset, maxBytes, end);
    if (cached !== null) {
      if (cached.bytes.length === 0) return empty;
      this.observer.onRead?.('cache', cached.bytes.length);
      return { bytes: cached.bytes, nextOffset: cached.nextOffset, logStartOffset, logEndOffset };
    }
    const seg = this.segmentFor(offset);
    const segEnd = seg.size;
    const lease = await this.pool.acquire(seg.logPath);
    try {
      const reader = new ChunkReader(lease.file, segEnd);
      // Find the batch that holds `offset`, starting from the index entry at or before it.
      let pos = seg.offsetIndex.lookup(offset - seg.baseOffset);
      const window = this.config.indexIntervalBytes + maxBytes;
      for (;;) {
        if (pos >= segEnd) return empty;
        const hdr = await reader.view(pos, OFFSET_MAX_TIMESTAMP + 8, window);
        const base = readInt64(hdr, 0);
        const last = base + hdr.readInt32BE(OFFSET_LAST_OFFSET_DELTA);
        if (base >= end) return empty;
        if (last >= offset) break;
        pos += hdr.readInt32BE(OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
      }
      // Take whole batches from `pos` while they fit in maxBytes and end below `end`.
      const start = pos;
      let nextOffset = offset;
      while (pos < segEnd) {
        const hdr = await reader.view(pos, OFFSET_MAX_TIMESTAMP + 8, maxBytes);
        const base = readInt64(hdr, 0);
        const size = hdr.readInt32BE(OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
        const last = base + hdr.readInt32BE(OFFSET_LAST_OFFSET_DELTA);
        if (last >= end) break;
        if (pos > start && pos + size - start > maxBytes) break;
        pos += size;
        nextOffset = last + 1;
      }
      if (pos === start) return empty;
      const bytes = await reader.slice(start, pos);
      this.observer.onRead?.('file', bytes.length);
      return { bytes, nextOffset, logStartOffset, logEndOffset };
    } finally {
      lease.release();
    }
  }

  /**
   * The first offset whose record timestamp is at or after `timestampMs`, or null when every
   * record is older.
   */
  async offsetForTimestamp(timestampMs: number): Promise<number | null> {
    const end = this.visibleEndOffset;
    for (const seg of this.segments.slice()) {
      if (seg.maxTimestamp < timestampMs || seg.baseOffset >= end) continue;
      let offset = seg.baseOffset + seg.timeIndex.lookup(timestampMs);
      while (offset < Math.min(end, seg.nextOffset)) {
        const r = await this.read(offset, 1, { maxOffset: end });
        if (r.bytes.length === 0) break;
        const maxTs = readInt64(r.bytes, OFFSET_MAX_TIMESTAMP);
        if (maxTs >= timestampMs) {
          const { records } = await decodeBatch(r.bytes);
          const hit = records.find((rec) => rec.timestamp >= timestampMs && rec.offset >= offset);
          if (hit) return hit.offset;
        }
        offset = r.nextOffset;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // Retention and truncation

  /**
   * Deletes whole segments past the retention time or size, never the active one. Returns how
   * many were deleted; the log start offset moves to the first remaining segment.
   */
  applyRetention(): Promise<number> {
    return this.exclusive(async () => {
      const now = this.clock.nowMs();
      let total = this.sizeBytes;
      let remove = 0;
      while (remove < this.segments.length - 1) {
        const seg = this.segments[remove]!;
        const expired = this.config.retentionMs >= 0 && seg.maxTimestamp >= 0 && seg.maxTimestamp < now - this.config.retentionMs;
        const oversize = this.config.retentionBytes >= 0 && total - seg.size >= this.config.retentionBytes;
        const tooBig = this.config.retentionBytes >= 0 && total > this.config.retentionBytes;
        if (!expired && !(tooBig && oversize)) break;
        total -= seg.size;
        remove++;
      }
      if (remove === 0) return 0;
      const gone = this.segments.splice(0, remove);
      this.logger.info(
        { segments: gone.map((s) => s.baseOffset), logStartOffset: this.logStartOffset },
        'retention deleted segments',
      );
      for (const seg of gone) this.deleteSegmentFiles(seg);
      return remove;
    });
  }

  /** Starts a periodic retention check. */
  scheduleRetention(intervalMs: number): void {
    if (this.closed) return;
    this.retentionTimer = this.clock.setTimeout(() => {
      void this.applyRetention()
        .catch((err: unknown) => this.logger.warn({ err }, 'retention failed'))
        .finally(() => this.scheduleRetention(intervalMs));
    }, intervalMs);
  }

  private deleteSegmentFiles(seg: Segment): void {
    // Readers may still hold the handle; the pool closes it once idle, then the files go.
    const p = this.pool
      .retire(seg.logPath)
      .then(async () => {
        for (const path of [seg.logPath, seg.indexPath, seg.timeIndexPath]) await this.storage.unlink(path).catch(() => undefined);
      })
      .finally(() => this.pendingDeletes.delete(p));
    this.pendingDeletes.add(p);
  }

  /**
   * Removes every batch that does not end below `offset` (so the log ends at the last batch
   * boundary at or below it), as
   * a follower does with a divergent tail. The log end offset becomes `offset`.
   */
  truncateTo(offset: number): Promise<void> {
    return this.exclusive(async () => {
      if (offset >= this.active.nextOffset) return;
      this.tail.clear();
      if (offset < this.logStartOffset) {
        throw new EdgeqError('OFFSET_OUT_OF_RANGE', `cannot truncate to ${offset}, below log start ${this.logStartOffset}`);
      }
      while (this.segments.length > 1 && this.active.baseOffset >= offset && this.active.baseOffset > this.logStartOffset) {
        const seg = this.segments.pop()!;
        this.deleteSegmentFiles(seg);
      }
      const seg = this.active;
      const rebuilt = new Segment(this.dir, seg.baseOffset, seg.createdAtMs);
      await this.pool.with(seg.logPath, async (file) => {
        // Keep whole batches that end below `offset`: a replica truncating to an offset inside a
        // batch keeps less and fetches the rest again.
        const r = await scanBatches(file, { start: 0, end: seg.size, expectedOffset: seg.baseOffset }, { verifyCrc: false }, (b) => {
          if (b.baseOffset + b.lastOffsetDelta < offset && rebuilt.nextOffset === b.baseOffset) rebuilt.noteBatch(b, this.config.indexIntervalBytes);
        });
        assert(r.stoppedBecause === null, `segment ${seg.logPath} failed its scan during truncation: ${r.stoppedBecause}`);
        await file.truncate(rebuilt.size);
        await file.datasync();
      });
      this.segments[this.segments.length - 1] = rebuilt;
      this.visibleEndOffset = Math.min(this.visibleEndOffset, rebuilt.nextOffset);
      this.synced = syncedStateOf(rebuilt);
      await this.checkpoint(false);
      this.logger.info({ offset }, 'truncated log');
    });
  }
  /**
   * Drops every segment and starts empty at `offset`: what a replica does when it fell so far
   * behind that its leader no longer holds the offsets in between (below the leader's log start).
   */
  resetTo(offset: number): Promise<void> {
    return this.exclusive(async () => {
      if (!Number.isSafeInteger(offset) || offset < 0) throw new EdgeqError('INVALID_ARGUMENT', `bad reset offset ${offset}`);
      this.tail.clear();
      const old = this.segments;
      const clash = old.find((o) => o.baseOffset === offset);
      if (clash) await this.pool.with(clash.logPath, (f) => f.truncate(0));
      const seg = new Segment(this.dir, offset, this.clock.nowMs());
      await this.pool.with(seg.logPath, async () => undefined, { create: true });
      await this.storage.syncDir(this.dir);
      this.segments = [seg];
      for (const o of old) if (o.baseOffset !== offset) this.deleteSegmentFiles(o);
      this.visibleEndOffset = offset;
      this.synced = syncedStateOf(seg);
      await this.checkpoint(false);
      this.logger.info({ offset }, 'reset the log to start at a new offset');
    });
  }


  // ---------------------------------------------------------------------------------------------
  // Open and close

  private async load(): Promise<void> {
    await this.storage.mkdir(this.dir);
    const names = await this.storage.readdir(this.dir);
    const bases = names
      .map(parseSegmentName)
      .filter((b): b is number => b !== null)
      .sort((a, b) => a - b);
    for (const name of names) {
      if (name.endsWith('.tmp')) await this.storage.unlink(join(this.dir, name)).catch(() => undefined);
    }
    const cp = await readCheckpoint(this.storage, this.dir);
    const now = this.clock.nowMs();
    if (bases.length === 0) {
      const seg = new Segment(this.dir, cp?.nextOffset ?? 0, now);
      await this.pool.with(seg.logPath, async () => undefined, { create: true });
      await this.storage.syncDir(this.dir);
      this.segments = [seg];
    } else {
      // Segments before the checkpoint's segment were sealed (synced, indexed) before it was
      // written; from it on, anything may be torn. No checkpoint at all: trust nothing.
      const firstUntrusted = cp === null ? bases[0]! : cp.segmentBaseOffset;
      let expected = bases[0]!;
      for (let i = 0; i < bases.length; i++) {
        const base = bases[i]!;
        const seg = new Segment(this.dir, base, now);
        if (base !== expected) {
          this.logger.warn({ base, expected }, 'segment does not start where the previous one ends; dropping it and later ones');
          await this.dropSegmentsFrom(bases.slice(i));
          break;
        }
        const isLast = i === bases.length - 1;
        let ok: boolean;
        if (base < firstUntrusted) ok = await this.loadSealed(seg, bases[i + 1] ?? null);
        else ok = await this.recoverSegment(seg, cp !== null && cp.segmentBaseOffset === base ? cp : null, isLast);
        this.segments.push(seg);
        expected = seg.nextOffset;
        if (!ok) {
          await this.dropSegmentsFrom(bases.slice(i + 1));
          break;
        }
      }
    }
    const seg = this.active;
    this.visibleEndOffset = seg.nextOffset;
    // Make what recovery kept durable, then record a checkpoint that says "not clean": if we crash
    // from here on, the next open scans again from this point. A full disk must not stop the
    // log from opening: without the checkpoint the next open only scans more.
    await this.pool.with(seg.logPath, (f) => f.datasync());
    this.synced = syncedStateOf(seg);
    try {
      await this.checkpoint(false);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      this.logger.warn({ err }, 'disk full: could not write the recovery checkpoint at open');
    }
    this.logger.info(
      { segments: this.segments.length, logStartOffset: this.logStartOffset, logEndOffset: this.logEndOffset },
      'log opened',
    );
  }

  /** Loads a sealed segment from its index files, rebuilding them when damaged. */
  private async loadSealed(seg: Segment, nextBase: number | null): Promise<boolean> {
    const size = await this.pool.with(seg.logPath, (f) => f.size());
    const offsetIdx = await this.storage.readFile(seg.indexPath).catch(() => null);
    const timeIdx = await this.storage.readFile(seg.timeIndexPath).catch(() => null);
    const relEnd = nextBase === null ? Number.MAX_SAFE_INTEGER : nextBase - seg.baseOffset;
    const oi = offsetIdx && OffsetIndex.parse(offsetIdx, size, relEnd);
    const ti = timeIdx && TimeIndex.parse(timeIdx, relEnd);
    const seal = ti?.last();
    if (oi && ti && seal && (nextBase === null || seal.relOffset === relEnd) && (await this.indexPointsAtBatch(seg, oi, size))) {
      seg.offsetIndex = oi;
      seg.timeIndex = ti;
      seg.size = size;
      seg.nextOffset = seg.baseOffset + seal.relOffset;
      seg.maxTimestamp = seal.timestamp;
      return true;
    }
    this.logger.warn({ segment: seg.logPath }, 'index missing or damaged; rebuilding it from the segment');
    const ok = await this.recoverSegment(seg, null, nextBase === null);
    if (ok && nextBase !== null && seg.nextOffset === nextBase) await this.writeIndexes(seg, true);
    return ok && (nextBase === null || seg.nextOffset === nextBase);
  }

  /** Checks that the last index entry points at a batch header with the offset it claims. */
  private async indexPointsAtBatch(seg: Segment, idx: OffsetIndex, size: number): Promise<boolean> {
    const last = idx.last();
    if (!last) return true;
    if (last.position + LOG_OVERHEAD > size) return false;
    const buf = Buffer.alloc(8);
    await this.pool.with(seg.logPath, (f) => f.read(buf, 0, 8, last.position));
    return readInt64(buf, 0) === seg.baseOffset + last.relOffset;
  }

  /**
   * Scans a segment batch by batch (from the checkpoint when it names this segment), truncating a
   * torn or corrupt tail. Returns false when the segment ended early, so later ones are invalid.
   */
  private async recoverSegment(seg: Segment, cp: RecoveryCheckpoint | null, isLast: boolean): Promise<boolean> {
    return this.pool.with(seg.logPath, async (file) => {
      const fileSize = await file.size();
      let start = 0;
      if (cp && cp.position <= fileSize && (await this.loadActiveIndexes(seg, cp))) {
        start = cp.position;
        if (cp.clean && cp.position === fileSize) return true;
      } else if (cp && cp.position > fileSize) {
        this.logger.warn({ segment: seg.logPath, checkpoint: cp.position, fileSize }, 'segment shorter than its checkpoint; scanning it all');
      }
      const r = await scanBatches(
        file,
        { start, end: fileSize, expectedOffset: start === 0 ? seg.baseOffset : seg.nextOffset },
        { verifyCrc: true },
        (b) => seg.noteBatch(b, this.config.indexIntervalBytes),
      );
      if (r.stoppedBecause !== null) {
        const dropped = fileSize - r.validEnd;
        this.logger.warn(
          { segment: seg.logPath, scannedFrom: start, validEnd: r.validEnd, droppedBytes: dropped, reason: r.stoppedBecause },
          'truncated a torn or corrupt tail',
        );
        await file.truncate(r.validEnd);
        return isLast;
      }
      this.logger.info({ segment: seg.logPath, scannedBytes: fileSize - start }, 'recovered segment');
      return true;
    });
  }

  /** Loads the index files as they were at checkpoint `cp`, keeping only the trusted prefix. */
  private async loadActiveIndexes(seg: Segment, cp: RecoveryCheckpoint): Promise<boolean> {
    if (cp.position === 0) return cp.nextOffset === seg.baseOffset;
    const offsetIdx = await this.storage.readFile(seg.indexPath).catch(() => null);
    const timeIdx = await this.storage.readFile(seg.timeIndexPath).catch(() => null);
    const oi = offsetIdx && OffsetIndex.parse(offsetIdx, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    const ti = timeIdx && TimeIndex.parse(timeIdx, Number.MAX_SAFE_INTEGER);
    if (!oi || !ti) return false;
    // The files may describe batches written after the checkpoint; keep the trusted prefix only.
    oi.truncateToPosition(cp.position);
    ti.truncateToRelOffset(cp.nextOffset - seg.baseOffset);
    if (!(await this.indexPointsAtBatch(seg, oi, cp.position))) return false;
    seg.offsetIndex = oi;
    seg.timeIndex = ti;
    seg.size = cp.position;
    seg.nextOffset = cp.nextOffset;
    seg.maxTimestamp = cp.maxTimestamp;
    // Bytes since the last entry are unknown; index the next batch scanned.
    seg.bytesSinceIndexEntry = this.config.indexIntervalBytes;
    return true;
  }

  private async dropSegmentsFrom(bases: number[]): Promise<void> {
    for (const base of bases) {
      const seg = new Segment(this.dir, base, 0);
      this.logger.warn({ segment: seg.logPath }, 'deleting segment after a corrupt one');
      for (const p of [seg.logPath, seg.indexPath, seg.timeIndexPath]) {
        await this.pool.retire(p);
        await this.storage.unlink(p).catch(() => undefined);
      }
    }
  }

  /** Waits for queued appends, syncs, writes indexes and a clean checkpoint, and closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    // Refuse new work at once; what is queued still gets written.
    this.closed = true;
    this.flushTimer?.cancel();
    this.retentionTimer?.cancel();
    if (this.draining || this.queue.length > 0) await new Promise<void>((r) => this.drained.push(r));
    await Promise.all(this.pendingDeletes);
    if (!this.failure) {
      try {
        await this.pool.with(this.active.logPath, (f) => f.datasync());
        await this.checkpoint(true);
      } catch (err) {
        this.logger.warn({ err: toEdgeqError(err) }, 'clean close failed; the next open will recover');
      }
    }
    await this.pool.retirePrefix(join(this.dir, '/'));
  }

  /**
   * Stops at once, as a crash would: pending appends fail, handles close, nothing is synced and no
   * clean checkpoint is written, so the next open recovers.
   */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flushTimer?.cancel();
    this.retentionTimer?.cancel();
    const err = new EdgeqError('LOG_CLOSED', `log ${this.dir} was aborted`);
    for (const p of this.queue.splice(0)) (p.kind === 'append' ? p.reject : p.fail)(err);
    this.queuedBytes = 0;
    if (this.draining) await new Promise<void>((r) => this.drained.push(r));
    await Promise.all(this.pendingDeletes);
    await this.pool.retirePrefix(join(this.dir, '/'));
  }

  /** Deletes the log's folder; the log must be closed. */
  static async destroy(dir: string, storage: Storage): Promise<void> {
    await storage.rmdir(dir);
  }

  /** @internal the checkpoint file name, for tests that damage it. */
  static readonly checkpointFile = CHECKPOINT_FILE;
}

/** The time index of `seg` with its seal entry: (max timestamp, relative end offset). */
function cloneSealed(seg: Segment): TimeIndex {
  const copy = TimeIndex.parse(seg.timeIndex.serialize(), Number.MAX_SAFE_INTEGER)!;
  copy.append(Math.max(seg.maxTimestamp, copy.last()?.timestamp ?? 0, 0), seg.nextOffset - seg.baseOffset);
  return copy;
}

/** A position of the active segment and the log state there. */
interface SyncedState {
  position: number;
  nextOffset: number;
  maxTimestamp: number;
}

function syncedStateOf(seg: Segment): SyncedState {
  return { position: seg.size, nextOffset: seg.nextOffset, maxTimestamp: seg.maxTimestamp };
}

/** Reads a segment through one buffer, refilled as a scan moves forward. */
class ChunkReader {
  private buf = Buffer.alloc(0);
  private bufStart = 0;

  constructor(
    private readonly file: { read(buf: Buffer, offset: number, length: number, position: number): Promise<number> },
    private readonly end: number,
  ) {}

  /** A view of at least `need` bytes at `pos`, reading `window` bytes when it must read. */
  async view(pos: number, need: number, window: number): Promise<Buffer> {
    if (pos < this.bufStart || pos + need > this.bufStart + this.buf.length) {
      const len = Math.min(Math.max(need, window), this.end - pos);
      if (len < need) throw new EdgeqError('CORRUPT_LOG', `segment ends inside a batch header at ${pos}`);
      const b = Buffer.allocUnsafe(len);
      const n = await this.file.read(b, 0, len, pos);
      if (n < need) throw new EdgeqError('CORRUPT_LOG', `short read at ${pos}`);
      this.buf = b.subarray(0, n);
      this.bufStart = pos;
    }
    return this.buf.subarray(pos - this.bufStart);
  }

  /** The bytes [start, end), from the buffer when it holds them. */
  async slice(start: number, end: number): Promise<Buffer> {
    if (start >= this.bufStart && end <= this.bufStart + this.buf.length) {
      return this.buf.subarray(start - this.bufStart, end - this.bufStart);
    }
    const b = Buffer.allocUnsafe(end - start);
    const n = await this.file.read(b, 0, end - start, start);
    if (n !== end - start) throw new EdgeqError('CORRUPT_LOG', `short read of ${end - start} bytes at ${start}`);
    return b;
  }
}
