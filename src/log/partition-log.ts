/**
 * The log of one partition: a folder of segments that batches are appended to and read from as
 * stored bytes. This is the facade the broker uses; the work is done by its parts:
 *
 * - `log-writer.ts`: the single writer, group commit and the flush policies;
 * - `log-reader.ts`: reads of stored batches and the timestamp lookup;
 * - `log-retention.ts`: retention, truncation and reset;
 * - `log-recovery.ts`: opening the folder and crash recovery;
 * - `log-state.ts`: the segments and durable state they share.
 */
import { join } from 'node:path';
import { EdgeqError, toEdgeqError } from '../core/errors.ts';
import { CHECKPOINT_FILE } from './checkpoint.ts';
import { resolveLogConfig, type LogConfig } from './log-config.ts';
import { LogReader } from './log-reader.ts';
import { LogRecovery } from './log-recovery.ts';
import { LogRetention } from './log-retention.ts';
import { LogState } from './log-state.ts';
import type {
  AppendGuard,
  AppendOptions,
  AppendResult,
  LogDeps,
  LogObserver,
  LogRecoveryReport,
  ReadOptions,
  ReadResult,
} from './log-types.ts';
import { LogWriter } from './log-writer.ts';
import type { Storage } from './storage.ts';

export type {
  AppendGuard,
  AppendOptions,
  AppendResult,
  LogDeps,
  LogObserver,
  LogRecoveryReport,
  ReadOptions,
  ReadResult,
} from './log-types.ts';

export class PartitionLog {
  readonly config: LogConfig;
  private readonly state: LogState;
  /** The observer the parts report to (tests swap its hooks). */
  private readonly observer: LogObserver;
  private readonly writer: LogWriter;
  private readonly reader: LogReader;
  private readonly retention: LogRetention;

  private constructor(
    readonly dir: string,
    config: LogConfig,
    deps: LogDeps,
  ) {
    this.config = config;
    this.state = new LogState(dir, config, deps);
    this.observer = this.state.observer;
    this.writer = new LogWriter(this.state);
    this.reader = new LogReader(this.state);
    this.retention = new LogRetention(this.state, this.writer);
  }

  /** Installs the append guard (one per log; the partition's producer state). */
  setAppendGuard(guard: AppendGuard | null): void {
    this.writer.setGuard(guard);
  }

  /** Opens (creating when absent) the log in `dir`, recovering from a crash when needed. */
  static async open(dir: string, config: Partial<LogConfig>, deps: LogDeps): Promise<PartitionLog> {
    const log = new PartitionLog(dir, resolveLogConfig(config), deps);
    await new LogRecovery(log.state).run();
    log.writer.scheduleFlush();
    return log;
  }

  // ---------------------------------------------------------------------------------------------
  // State

  /** First offset still held. */
  get logStartOffset(): number {
    return this.state.logStartOffset;
  }

  /** Offset after the last batch readers may see (durable under the flush policy). */
  get logEndOffset(): number {
    return this.state.visibleEndOffset;
  }

  /** Bytes held by all segments. */
  get sizeBytes(): number {
    return this.state.segments.reduce((n, s) => n + s.size, 0);
  }

  get segmentCount(): number {
    return this.state.segments.length;
  }

  /** Base offsets of the segments, oldest first. */
  segmentBaseOffsets(): number[] {
    return this.state.segments.map((s) => s.baseOffset);
  }

  /**
   * What the open found: whether the last shutdown was clean and on this boot, what recovery cut
   * or moved aside, and whether the log may lack writes it once accepted (then this replica must
   * catch up from a leader before it may lead).
   */
  get recovery(): LogRecoveryReport {
    return this.state.recovery!;
  }

  /** Calls `listener` with the new log end offset after each append becomes visible. */
  onAppend(listener: (logEndOffset: number) => void): () => void {
    this.writer.appendListeners.add(listener);
    return () => this.writer.appendListeners.delete(listener);
  }

  // ---------------------------------------------------------------------------------------------
  // Append and flush

  /**
   * Appends one batch. The log takes ownership of `batch` (it writes the base offset and leader
   * epoch into it). Resolves once the batch is durable under the flush policy; rejects with
   * CORRUPT_BATCH or MESSAGE_TOO_LARGE (nothing written), QUEUE_FULL, STORAGE_FULL or STORAGE_ERROR.
   */
  append(batch: Buffer, options: AppendOptions = {}): Promise<AppendResult> {
    return this.writer.append(batch, options);
  }

  /** Forces an fdatasync of the active segment (any policy). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  // ---------------------------------------------------------------------------------------------
  // Read

  /**
   * Reads stored batches starting with the one that holds `offset`, up to `maxBytes` of whole
   * batches (always at least one, so a reader can make progress past a large batch), from one
   * segment. Offsets below the log start or past the log end give OFFSET_OUT_OF_RANGE.
   */
  read(offset: number, maxBytes: number, options: ReadOptions = {}): Promise<ReadResult> {
    return this.reader.read(offset, maxBytes, options);
  }

  /**
   * The first offset whose record timestamp is at or after `timestampMs`, or null when every
   * record is older.
   */
  offsetForTimestamp(timestampMs: number): Promise<number | null> {
    return this.reader.offsetForTimestamp(timestampMs);
  }

  // ---------------------------------------------------------------------------------------------
  // Retention and truncation

  /**
   * Deletes whole segments past the retention time or size, never the active one. Returns how
   * many were deleted; the log start offset moves to the first remaining segment.
   */
  applyRetention(): Promise<number> {
    return this.retention.applyRetention();
  }

  /** Starts a periodic retention check. */
  scheduleRetention(intervalMs: number): void {
    this.retention.scheduleRetention(intervalMs);
  }

  /**
   * Removes every batch that does not end below `offset` (so the log ends at the last batch
   * boundary at or below it), as a follower does with a divergent tail. The log end offset
   * becomes `offset`.
   */
  truncateTo(offset: number): Promise<void> {
    return this.retention.truncateTo(offset);
  }

  /**
   * Drops every segment and starts empty at `offset`: what a replica does when it fell so far
   * behind that its leader no longer holds the offsets in between (below the leader's log start).
   */
  resetTo(offset: number): Promise<void> {
    return this.retention.resetTo(offset);
  }

  // ---------------------------------------------------------------------------------------------
  // Close

  /** Waits for queued appends, syncs, writes indexes and a clean checkpoint, and closes. */
  async close(): Promise<void> {
    const s = this.state;
    if (s.closed) return;
    // Refuse new work at once; what is queued still gets written.
    s.closed = true;
    this.writer.stopFlushTimer();
    this.retention.stopTimer();
    await this.writer.idle();
    await Promise.all(s.pendingDeletes);
    if (!s.failure) {
      try {
        await s.pool.with(s.active.logPath, (f) => f.datasync());
        await s.checkpoint(true);
      } catch (err) {
        s.logger.warn({ err: toEdgeqError(err) }, 'clean close failed; the next open will recover');
      }
    }
    await s.pool.retirePrefix(join(this.dir, '/'));
  }

  /**
   * Stops at once, as a crash would: pending appends fail, handles close, nothing is synced and no
   * clean checkpoint is written, so the next open recovers.
   */
  async abort(): Promise<void> {
    const s = this.state;
    if (s.closed) return;
    s.closed = true;
    this.writer.stopFlushTimer();
    this.retention.stopTimer();
    this.writer.failQueued(new EdgeqError('LOG_CLOSED', `log ${this.dir} was aborted`));
    await this.writer.idle();
    await Promise.all(s.pendingDeletes);
    await s.pool.retirePrefix(join(this.dir, '/'));
  }

  /** Deletes the log's folder; the log must be closed. */
  static async destroy(dir: string, storage: Storage): Promise<void> {
    await storage.rmdir(dir);
  }

  /** @internal the checkpoint file name, for tests that damage it. */
  static readonly checkpointFile = CHECKPOINT_FILE;
}
