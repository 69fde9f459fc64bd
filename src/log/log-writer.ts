/**
 * The single writer of a partition log, and its group commit.
 *
 * Concurrent appends queue, and each turn of the writer takes every queued batch (up to the group
 * bounds) and writes them with one writev. Under the `sync` policy the writer then runs one
 * fdatasync that covers the whole group before answering any of them (group commit), and appends
 * that arrive meanwhile form the next group. Operations that change the segments (retention,
 * truncation, reset, flush) run on the same queue through `exclusive`, so they see a quiet log.
 *
 * Readers see batches up to `visibleEndOffset`, which moves only after the policy's durability
 * holds, so a failed or torn write is never visible.
 */
import { EdgeqError } from '../core/errors.ts';
import type { TimerHandle } from '../core/clock.ts';
import { assert } from '../core/assert.ts';
import { validateBatchHeader, validateBatchRecords } from './batch.ts';
import { OFFSET_LEADER_EPOCH, setBaseOffset, setLeaderEpoch, type BatchHeader } from './batch-format.ts';
import { syncedStateOf, type LogState } from './log-state.ts';
import type { AppendGuard, AppendOptions, AppendResult } from './log-types.ts';
import { Segment, type ScannedBatch } from './segment.ts';

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

export class LogWriter {
  private queue: (PendingAppend | PendingOp)[] = [];
  private queuedBytes = 0;
  private draining = false;
  private drained: (() => void)[] = [];
  private flushTimer: TimerHandle | null = null;
  private guard: AppendGuard | null = null;
  readonly appendListeners = new Set<(logEndOffset: number) => void>();

  constructor(private readonly s: LogState) {}

  setGuard(guard: AppendGuard | null): void {
    this.guard = guard;
  }

  /** See `PartitionLog.append`. */
  append(batch: Buffer, options: AppendOptions): Promise<AppendResult> {
    const s = this.s;
    if (s.closed) return Promise.reject(new EdgeqError('LOG_CLOSED', `log ${s.dir} is closed`));
    if (s.failure) return Promise.reject(s.failure);
    let header: BatchHeader;
    try {
      header = validateBatchHeader(batch, s.config);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.queuedBytes + batch.length > s.config.appendQueueBytesMax) {
      return Promise.reject(
        new EdgeqError('QUEUE_FULL', `append queue holds ${this.queuedBytes} bytes, limit ${s.config.appendQueueBytesMax}`),
      );
    }
    // Uncompressed batches are walked here, synchronously; compressed ones decompress off-thread
    // while they wait in the queue, which keeps append order.
    let validated: Promise<BatchHeader> | null = null;
    if (s.config.validateRecords && options.validateRecords !== false) {
      try {
        const pending = validateBatchRecords(batch, header, s.config);
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

  /** Runs `fn` on the writer, after every append queued before it. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.s.closed) {
        reject(new EdgeqError('LOG_CLOSED', `log ${this.s.dir} is closed`));
        return;
      }
      this.queue.push({ kind: 'op', run: () => fn().then(resolve, reject), fail: reject });
      this.kick();
    });
  }

  /** Resolves once the writer has nothing queued or running. */
  async idle(): Promise<void> {
    if (this.draining || this.queue.length > 0) await new Promise<void>((r) => this.drained.push(r));
  }

  /** Fails everything still queued with `err` (a crash-like stop). */
  failQueued(err: EdgeqError): void {
    for (const p of this.queue.splice(0)) (p.kind === 'append' ? p.reject : p.fail)(err);
    this.queuedBytes = 0;
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    const config = this.s.config;
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
        while (group.length < config.writeGroupBatchesMax) {
          const next = this.queue[0];
          if (next === undefined || next.kind !== 'append') break;
          if (group.length > 0 && bytes + next.batch.length > config.writeGroupBytesMax) break;
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

  private async writeGroup(group: PendingAppend[]): Promise<void> {
    const s = this.s;
    if (s.failure) {
      for (const p of group) p.reject(s.failure);
      return;
    }
    let rest = group;
    while (rest.length > 0) {
      let seg = s.active;
      if (this.shouldRoll(seg, rest[0]!.batch.length)) {
        try {
          seg = await this.roll();
        } catch (err) {
          const e = s.storageError(err, 'roll a segment');
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
        const fits = seg.size + bytes + b.batch.length <= s.config.segmentBytesMax;
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
    const s = this.s;
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
          earlier = guard.check(h, {
            baseOffset: p.options.assignOffsets === false ? h.baseOffset : next,
            leaderAppend: p.options.assignOffsets !== false,
            ...(p.options.originCursorExpected !== undefined ? { originCursorExpected: p.options.originCursorExpected } : {}),
          });
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

    const lease = await s.pool.acquire(seg.logPath, { create: true }).catch((err: unknown) => err as Error);
    if (lease instanceof Error) {
      const e = s.storageError(lease, 'open the active segment');
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
        const e = s.storageError(err, 'write batches');
        guard?.abort();
        for (const p of accepted) p.reject(e);
        for (const d of duplicates) d.p.reject(e);
        return;
      }
      const appendTimeMs = s.clock.nowMs();
      for (const b of placed) seg.noteBatch(b, s.config.indexIntervalBytes);
      if (s.config.flushPolicy === 'sync') {
        const t0 = s.clock.monotonicMs();
        try {
          await lease.file.datasync();
        } catch (err) {
          const failure = s.failSync(err);
          guard?.abort();
          for (const p of accepted) p.reject(failure);
          for (const d of duplicates) d.p.reject(failure);
          return;
        }
        s.observer.onFsync?.(s.clock.monotonicMs() - t0);
        s.synced = syncedStateOf(seg);
        await s.maybeCheckpoint();
      }
      s.visibleEndOffset = seg.nextOffset;
      s.tail.add(buffers);
      guard?.commit();
      s.observer.onAppend?.(accepted.length, total);
      for (let i = 0; i < accepted.length; i++) {
        const b = placed[i]!;
        accepted[i]!.resolve({ baseOffset: b.baseOffset, lastOffset: b.baseOffset + b.lastOffsetDelta, appendTimeMs });
      }
      for (const d of duplicates) d.p.resolve(d.result);
      for (const l of this.appendListeners) l(s.visibleEndOffset);
    } finally {
      lease.release();
    }
  }

  private shouldRoll(seg: Segment, nextBatchBytes: number): boolean {
    if (seg.size === 0) return false;
    if (seg.size + nextBatchBytes > this.s.config.segmentBytesMax) return true;
    return this.s.clock.nowMs() - seg.createdAtMs >= this.s.config.segmentMsMax;
  }

  /** Seals the active segment (synced, indexes written) and starts a new one at the log end. */
  private async roll(): Promise<Segment> {
    const s = this.s;
    const old = s.active;
    await s.pool.with(old.logPath, (f) => f.datasync());
    await s.writeIndexes(old, true);
    const seg = new Segment(s.dir, old.nextOffset, s.clock.nowMs());
    await s.pool.with(seg.logPath, async () => undefined, { create: true });
    await s.storage.syncDir(s.dir);
    s.segments.push(seg);
    // A file read stops at a segment's end; so does the cache, by starting again with the new one.
    s.tail.clear();
    s.synced = syncedStateOf(seg);
    await s.checkpoint(false);
    s.logger.debug({ baseOffset: seg.baseOffset }, 'rolled segment');
    return seg;
  }

  /** Forces an fdatasync of the active segment (any policy), after every queued append. */
  flush(): Promise<void> {
    return this.exclusive(() => this.syncActive());
  }

  private async syncActive(): Promise<void> {
    const s = this.s;
    const seg = s.active;
    const target = syncedStateOf(seg);
    if (target.position === s.synced.position) return;
    const t0 = s.clock.monotonicMs();
    try {
      await s.pool.with(seg.logPath, (f) => f.datasync());
    } catch (err) {
      throw s.failSync(err);
    }
    s.observer.onFsync?.(s.clock.monotonicMs() - t0);
    if (s.active === seg && target.position > s.synced.position) s.synced = target;
    await s.maybeCheckpoint();
  }

  /** Starts the `interval` policy's fdatasync timer (nothing under other policies). */
  scheduleFlush(): void {
    const s = this.s;
    if (s.closed || s.config.flushPolicy !== 'interval') return;
    this.flushTimer = s.clock.setTimeout(() => {
      // Runs beside the writer: an fdatasync may overlap a write, which only makes it cover more.
      void this.syncActive()
        .catch(() => undefined)
        .finally(() => this.scheduleFlush());
    }, s.config.flushIntervalMs);
  }

  stopFlushTimer(): void {
    this.flushTimer?.cancel();
  }
}
