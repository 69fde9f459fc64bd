/**
 * What shortens a partition log: retention (whole old segments by time and size), truncation of
 * the tail (a follower dropping a divergent suffix) and reset (a replica that fell behind its
 * leader's log start). Each runs on the writer, so no append is in flight while segments change.
 */
import { EdgeqError } from '../core/errors.ts';
import type { TimerHandle } from '../core/clock.ts';
import { assert } from '../core/assert.ts';
import { syncedStateOf, type LogState } from './log-state.ts';
import type { LogWriter } from './log-writer.ts';
import { scanBatches, Segment } from './segment.ts';

export class LogRetention {
  private timer: TimerHandle | null = null;

  constructor(
    private readonly s: LogState,
    private readonly writer: LogWriter,
  ) {}

  /** See `PartitionLog.applyRetention`. */
  applyRetention(): Promise<number> {
    return this.writer.exclusive(async () => {
      const s = this.s;
      const now = s.clock.nowMs();
      let total = s.segments.reduce((n, seg) => n + seg.size, 0);
      let remove = 0;
      while (remove < s.segments.length - 1) {
        const seg = s.segments[remove]!;
        const expired = s.config.retentionMs >= 0 && seg.maxTimestamp >= 0 && seg.maxTimestamp < now - s.config.retentionMs;
        const oversize = s.config.retentionBytes >= 0 && total - seg.size >= s.config.retentionBytes;
        const tooBig = s.config.retentionBytes >= 0 && total > s.config.retentionBytes;
        if (!expired && !(tooBig && oversize)) break;
        total -= seg.size;
        remove++;
      }
      if (remove === 0) return 0;
      const gone = s.segments.splice(0, remove);
      s.logger.info({ segments: gone.map((g) => g.baseOffset), logStartOffset: s.logStartOffset }, 'retention deleted segments');
      for (const seg of gone) s.deleteSegmentFiles(seg);
      return remove;
    });
  }

  /** See `PartitionLog.scheduleRetention`. */
  scheduleRetention(intervalMs: number): void {
    if (this.s.closed) return;
    this.timer = this.s.clock.setTimeout(() => {
      void this.applyRetention()
        .catch((err: unknown) => this.s.logger.warn({ err }, 'retention failed'))
        .finally(() => this.scheduleRetention(intervalMs));
    }, intervalMs);
  }

  stopTimer(): void {
    this.timer?.cancel();
  }

  /** See `PartitionLog.truncateTo`. */
  truncateTo(offset: number): Promise<void> {
    return this.writer.exclusive(async () => {
      const s = this.s;
      if (offset >= s.active.nextOffset) return;
      s.tail.clear();
      if (offset < s.logStartOffset) {
        throw new EdgeqError('OFFSET_OUT_OF_RANGE', `cannot truncate to ${offset}, below log start ${s.logStartOffset}`);
      }
      const deletions: Promise<void>[] = [];
      while (s.segments.length > 1 && s.active.baseOffset >= offset && s.active.baseOffset > s.logStartOffset) {
        deletions.push(s.deleteSegmentFiles(s.segments.pop()!));
      }
      const seg = s.active;
      const rebuilt = new Segment(s.dir, seg.baseOffset, seg.createdAtMs);
      await s.pool.with(seg.logPath, async (file) => {
        // Keep whole batches that end below `offset`: a replica truncating to an offset inside a
        // batch keeps less and fetches the rest again.
        const r = await scanBatches(file, { start: 0, end: seg.size, expectedOffset: seg.baseOffset }, { verifyCrc: false }, (b) => {
          if (b.baseOffset + b.lastOffsetDelta < offset && rebuilt.nextOffset === b.baseOffset) rebuilt.noteBatch(b, s.config.indexIntervalBytes);
        });
        assert(r.stoppedBecause === null, `segment ${seg.logPath} failed its scan during truncation: ${r.stoppedBecause}`);
        await file.truncate(rebuilt.size);
        await file.datasync();
      });
      s.segments[s.segments.length - 1] = rebuilt;
      s.visibleEndOffset = Math.min(s.visibleEndOffset, rebuilt.nextOffset);
      s.synced = syncedStateOf(rebuilt);
      await this.durablyGone(deletions);
      await s.checkpoint(false);
      s.logger.info({ offset }, 'truncated log');
    });
  }

  /**
   * Waits for dropped segments to be unlinked and syncs the folder, before the checkpoint that
   * forgets them: an unlink is durable only with its folder, and a segment that came back after
   * a power loss would be taken up again (a divergent tail, or data below the new start).
   */
  private async durablyGone(deletions: Promise<void>[]): Promise<void> {
    if (deletions.length === 0) return;
    await Promise.all(deletions);
    await this.s.storage.syncDir(this.s.dir);
  }

  /** See `PartitionLog.resetTo`. */
  resetTo(offset: number): Promise<void> {
    return this.writer.exclusive(async () => {
      const s = this.s;
      if (!Number.isSafeInteger(offset) || offset < 0) throw new EdgeqError('INVALID_ARGUMENT', `bad reset offset ${offset}`);
      s.tail.clear();
      const old = s.segments;
      const clash = old.find((o) => o.baseOffset === offset);
      if (clash) {
        // Synced, or a power loss would bring the old batches back under the new segment's name.
        await s.pool.with(clash.logPath, async (f) => {
          await f.truncate(0);
          await f.datasync();
        });
      }
      const seg = new Segment(s.dir, offset, s.clock.nowMs());
      await s.pool.with(seg.logPath, async () => undefined, { create: true });
      await s.storage.syncDir(s.dir);
      s.segments = [seg];
      const deletions = old.filter((o) => o.baseOffset !== offset).map((o) => s.deleteSegmentFiles(o));
      s.visibleEndOffset = offset;
      s.synced = syncedStateOf(seg);
      await this.durablyGone(deletions);
      await s.checkpoint(false);
      s.logger.info({ offset }, 'reset the log to start at a new offset');
    });
  }
}
