/**
 * Opening a partition log: loading its segments and recovering from a crash.
 *
 * Segments before the checkpoint's segment were sealed (synced, indexed) before the checkpoint
 * was written, so their indexes are loaded and checked rather than their batches scanned; from
 * the checkpoint on, batches are scanned one by one and a torn or corrupt tail is cut off.
 */
import { join } from 'node:path';
import { LOG_OVERHEAD } from './batch-format.ts';
import { readCheckpoint, type RecoveryCheckpoint } from './checkpoint.ts';
import { syncedStateOf, type LogState } from './log-state.ts';
import { OffsetIndex } from './offset-index.ts';
import { parseSegmentName, scanBatches, Segment } from './segment.ts';
import { isDiskFull } from './storage.ts';
import { TimeIndex } from './time-index.ts';
import { readInt64 } from './varint.ts';

export class LogRecovery {
  constructor(private readonly s: LogState) {}

  /** Loads (creating when absent) the log's folder into the state, recovering it when needed. */
  async run(): Promise<void> {
    const s = this.s;
    await s.storage.mkdir(s.dir);
    const names = await s.storage.readdir(s.dir);
    const bases = names
      .map(parseSegmentName)
      .filter((b): b is number => b !== null)
      .sort((a, b) => a - b);
    for (const name of names) {
      if (name.endsWith('.tmp')) await s.storage.unlink(join(s.dir, name)).catch(() => undefined);
    }
    const cp = await readCheckpoint(s.storage, s.dir);
    const now = s.clock.nowMs();
    if (bases.length === 0) {
      const seg = new Segment(s.dir, cp?.nextOffset ?? 0, now);
      await s.pool.with(seg.logPath, async () => undefined, { create: true });
      await s.storage.syncDir(s.dir);
      s.segments = [seg];
    } else {
      // Segments before the checkpoint's segment were sealed (synced, indexed) before it was
      // written; from it on, anything may be torn. No checkpoint at all: trust nothing.
      const firstUntrusted = cp === null ? bases[0]! : cp.segmentBaseOffset;
      let expected = bases[0]!;
      for (let i = 0; i < bases.length; i++) {
        const base = bases[i]!;
        const seg = new Segment(s.dir, base, now);
        if (base !== expected) {
          s.logger.warn({ base, expected }, 'segment does not start where the previous one ends; dropping it and later ones');
          await this.dropSegmentsFrom(bases.slice(i));
          break;
        }
        const isLast = i === bases.length - 1;
        let ok: boolean;
        if (base < firstUntrusted) ok = await this.loadSealed(seg, bases[i + 1] ?? null);
        else ok = await this.recoverSegment(seg, cp !== null && cp.segmentBaseOffset === base ? cp : null, isLast);
        s.segments.push(seg);
        expected = seg.nextOffset;
        if (!ok) {
          await this.dropSegmentsFrom(bases.slice(i + 1));
          break;
        }
      }
    }
    const seg = s.active;
    s.visibleEndOffset = seg.nextOffset;
    // Make what recovery kept durable, then record a checkpoint that says "not clean": if we crash
    // from here on, the next open scans again from this point. A full disk must not stop the
    // log from opening: without the checkpoint the next open only scans more.
    await s.pool.with(seg.logPath, (f) => f.datasync());
    s.synced = syncedStateOf(seg);
    try {
      await s.checkpoint(false);
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      s.logger.warn({ err }, 'disk full: could not write the recovery checkpoint at open');
    }
    s.logger.info({ segments: s.segments.length, logStartOffset: s.logStartOffset, logEndOffset: s.visibleEndOffset }, 'log opened');
  }

  /** Loads a sealed segment from its index files, rebuilding them when damaged. */
  private async loadSealed(seg: Segment, nextBase: number | null): Promise<boolean> {
    const s = this.s;
    const size = await s.pool.with(seg.logPath, (f) => f.size());
    const offsetIdx = await s.storage.readFile(seg.indexPath).catch(() => null);
    const timeIdx = await s.storage.readFile(seg.timeIndexPath).catch(() => null);
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
    s.logger.warn({ segment: seg.logPath }, 'index missing or damaged; rebuilding it from the segment');
    const ok = await this.recoverSegment(seg, null, nextBase === null);
    if (ok && nextBase !== null && seg.nextOffset === nextBase) await s.writeIndexes(seg, true);
    return ok && (nextBase === null || seg.nextOffset === nextBase);
  }

  /** Checks that the last index entry points at a batch header with the offset it claims. */
  private async indexPointsAtBatch(seg: Segment, idx: OffsetIndex, size: number): Promise<boolean> {
    const last = idx.last();
    if (!last) return true;
    if (last.position + LOG_OVERHEAD > size) return false;
    const buf = Buffer.alloc(8);
    await this.s.pool.with(seg.logPath, (f) => f.read(buf, 0, 8, last.position));
    return readInt64(buf, 0) === seg.baseOffset + last.relOffset;
  }

  /**
   * Scans a segment batch by batch (from the checkpoint when it names this segment), truncating a
   * torn or corrupt tail. Returns false when the segment ended early, so later ones are invalid.
   */
  private async recoverSegment(seg: Segment, cp: RecoveryCheckpoint | null, isLast: boolean): Promise<boolean> {
    const s = this.s;
    return s.pool.with(seg.logPath, async (file) => {
      const fileSize = await file.size();
      let start = 0;
      if (cp && cp.position <= fileSize && (await this.loadActiveIndexes(seg, cp))) {
        start = cp.position;
        if (cp.clean && cp.position === fileSize) return true;
      } else if (cp && cp.position > fileSize) {
        s.logger.warn({ segment: seg.logPath, checkpoint: cp.position, fileSize }, 'segment shorter than its checkpoint; scanning it all');
      }
      const r = await scanBatches(
        file,
        { start, end: fileSize, expectedOffset: start === 0 ? seg.baseOffset : seg.nextOffset },
        { verifyCrc: true },
        (b) => seg.noteBatch(b, s.config.indexIntervalBytes),
      );
      if (r.stoppedBecause !== null) {
        const dropped = fileSize - r.validEnd;
        s.logger.warn(
          { segment: seg.logPath, scannedFrom: start, validEnd: r.validEnd, droppedBytes: dropped, reason: r.stoppedBecause },
          'truncated a torn or corrupt tail',
        );
        await file.truncate(r.validEnd);
        return isLast;
      }
      s.logger.info({ segment: seg.logPath, scannedBytes: fileSize - start }, 'recovered segment');
      return true;
    });
  }

  /** Loads the index files as they were at checkpoint `cp`, keeping only the trusted prefix. */
  private async loadActiveIndexes(seg: Segment, cp: RecoveryCheckpoint): Promise<boolean> {
    if (cp.position === 0) return cp.nextOffset === seg.baseOffset;
    const s = this.s;
    const offsetIdx = await s.storage.readFile(seg.indexPath).catch(() => null);
    const timeIdx = await s.storage.readFile(seg.timeIndexPath).catch(() => null);
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
    seg.bytesSinceIndexEntry = s.config.indexIntervalBytes;
    return true;
  }

  private async dropSegmentsFrom(bases: number[]): Promise<void> {
    const s = this.s;
    for (const base of bases) {
      const seg = new Segment(s.dir, base, 0);
      s.logger.warn({ segment: seg.logPath }, 'deleting segment after a corrupt one');
      for (const p of [seg.logPath, seg.indexPath, seg.timeIndexPath]) {
        await s.pool.retire(p);
        await s.storage.unlink(p).catch(() => undefined);
      }
    }
  }
}
