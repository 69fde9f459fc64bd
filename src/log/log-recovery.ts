/**
 * Opening a partition log: loading its segments and recovering from a crash.
 *
 * Segments before the checkpoint's segment were sealed (synced, indexed) before the checkpoint
 * was written, so their indexes are loaded and checked rather than their batches scanned; from
 * the checkpoint on, batches are scanned one by one and a torn tail is cut off. A segment that
 * fails in the middle of the log cannot be a torn write (it was synced before the next one
 * began): its cut-off bytes and every later segment are kept aside (`corrupt-aside.ts`), never
 * deleted. What the open found is summed up in a `LogRecoveryReport`.
 */
import { basename, join } from 'node:path';
import { LOG_OVERHEAD } from './batch-format.ts';
import { readCheckpoint, type RecoveryCheckpoint } from './checkpoint.ts';
import { copyAside, moveAside } from './corrupt-aside.ts';
import { syncedStateOf, type LogState } from './log-state.ts';
import type { LogRecoveryReport } from './log-types.ts';
import { OffsetIndex } from './offset-index.ts';
import { parseSegmentName, scanBatches, Segment } from './segment.ts';
import { isDiskFull } from './storage.ts';
import { TimeIndex } from './time-index.ts';
import { readInt64 } from './varint.ts';

export class LogRecovery {
  private truncatedBytes = 0;
  private readonly corruptSegments: string[] = [];
  private shortOfCheckpoint = false;

  constructor(private readonly s: LogState) {}

  /** Loads (creating when absent) the log's folder into the state, recovering it when needed. */
  async run(): Promise<LogRecoveryReport> {
    const s = this.s;
    s.bootId = await s.storage.bootId();
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
    // The checkpoint promises `position` durable bytes in its segment; a missing segment broke it.
    if (cp !== null && cp.position > 0 && !bases.includes(cp.segmentBaseOffset)) this.shortOfCheckpoint = true;
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
          s.logger.warn({ base, expected }, 'segment does not start where the previous one ends; moving it and later ones aside');
          await this.moveSegmentsAside(bases.slice(i), `the log before it ends at offset ${expected}`);
          break;
        }
        const isLast = i === bases.length - 1;
        let ok: boolean;
        if (base < firstUntrusted) ok = await this.loadSealed(seg, bases[i + 1] ?? null);
        else ok = await this.recoverSegment(seg, cp !== null && cp.segmentBaseOffset === base ? cp : null, isLast);
        s.segments.push(seg);
        expected = seg.nextOffset;
        if (!ok) {
          await this.moveSegmentsAside(bases.slice(i + 1), `segment ${base} before it is corrupt or short`);
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
    const report = this.report(bases.length === 0 && cp === null, cp);
    s.recovery = report;
    const fields = { segments: s.segments.length, logStartOffset: s.logStartOffset, logEndOffset: s.visibleEndOffset, recovery: report };
    if (report.mayHaveLostWrites) s.logger.warn(fields, 'log opened; it may lack writes it once accepted');
    else s.logger.info(fields, 'log opened');
    return report;
  }

  private report(fresh: boolean, cp: RecoveryCheckpoint | null): LogRecoveryReport {
    // A new folder lost nothing; otherwise only the checkpoint can vouch for a clean close or a boot.
    const cleanShutdown = fresh || cp?.clean === true;
    const sameBoot = fresh || (cp !== null && cp.bootId !== null && cp.bootId === this.s.bootId);
    const mayHaveLostWrites =
      (!cleanShutdown && !sameBoot) || this.truncatedBytes > 0 || this.corruptSegments.length > 0 || this.shortOfCheckpoint;
    return Object.freeze({
      cleanShutdown,
      sameBoot,
      truncatedBytes: this.truncatedBytes,
      corruptSegments: Object.freeze([...this.corruptSegments]),
      shortOfCheckpoint: this.shortOfCheckpoint,
      mayHaveLostWrites,
    });
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
        this.shortOfCheckpoint = true;
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
        const fields = { segment: seg.logPath, scannedFrom: start, validEnd: r.validEnd, droppedBytes: dropped, reason: r.stoppedBecause };
        if (isLast) {
          // The end of the log: a write the crash tore, never acknowledged under `sync`.
          s.logger.warn(fields, 'truncated a torn or corrupt tail');
        } else {
          // Later segments exist, so this one was synced before they began: this is corruption
          // of durable data, and the cut bytes may be the only copy of acknowledged writes.
          const aside = await copyAside(s.storage, file, { start: r.validEnd, end: fileSize }, s.dir, `${basename(seg.logPath)}.from-${r.validEnd}`);
          this.noteAside(aside, dropped, { ...fields, movedTo: aside }, 'cut a corrupt segment at its last valid batch; the cut bytes are kept aside');
        }
        this.truncatedBytes += dropped;
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

  /**
   * Moves the segments at `bases` (and their index files) aside: offsets must stay contiguous, so
   * the log cannot keep them, but they may hold the only copy of acknowledged writes.
   */
  private async moveSegmentsAside(bases: number[], reason: string): Promise<void> {
    if (bases.length === 0) return;
    const s = this.s;
    for (const base of bases) {
      const seg = new Segment(s.dir, base, 0);
      const bytes = await s.pool.with(seg.logPath, (f) => f.size());
      for (const p of [seg.logPath, seg.indexPath, seg.timeIndexPath]) await s.pool.retire(p);
      const moved = await moveAside(s.storage, s.dir, [seg.logPath, seg.indexPath, seg.timeIndexPath].map((p) => basename(p)));
      const log = moved.find((m) => m.from === basename(seg.logPath));
      if (log) {
        this.noteAside(log.to, bytes, { segment: seg.logPath, movedTo: moved.map((m) => m.to), bytes, reason }, 'moved a segment recovery cannot keep aside');
      }
    }
    await s.storage.syncDir(s.dir);
  }

  /** Reports a file kept aside: the report, the observer, and an error line (an operator must look). */
  private noteAside(file: string, bytes: number, fields: Record<string, unknown>, message: string): void {
    this.corruptSegments.push(file);
    this.s.observer.onCorruptSegment?.(file, bytes);
    this.s.logger.error(fields, `${message}; this replica may lack writes it acknowledged`);
  }
}
