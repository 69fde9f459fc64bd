/**
 * The state one partition log's parts share (writer, reader, retention, recovery): its segments,
 * how far it is visible and durable, and the steps that keep the files and the checkpoint in
 * agreement (index files, checkpoint, segment deletion). Only the log's own parts touch it.
 */
import { EdgeqError } from '../core/errors.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { writeCheckpoint, type RecoveryCheckpoint } from './checkpoint.ts';
import { FilePool } from './file-pool.ts';
import type { LogConfig } from './log-config.ts';
import type { LogDeps, LogObserver, LogRecoveryReport } from './log-types.ts';
import type { Segment } from './segment.ts';
import { isDiskFull, type Storage } from './storage.ts';
import { TailCache } from './tail-cache.ts';
import { TimeIndex } from './time-index.ts';

/** Handles of a log's private pool when the broker shares none. */
const PRIVATE_POOL_FILES = 64;

/** A position of the active segment and the log state there. */
export interface SyncedState {
  position: number;
  nextOffset: number;
  maxTimestamp: number;
}

/** The state of the active segment as it is now (everything written so far). */
export function syncedStateOf(seg: Segment): SyncedState {
  return { position: seg.size, nextOffset: seg.nextOffset, maxTimestamp: seg.maxTimestamp };
}

export class LogState {
  readonly storage: Storage;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly pool: FilePool;
  readonly observer: LogObserver;
  readonly tail: TailCache;
  /** Oldest first; never empty once opened; the last one is the active segment. */
  segments: Segment[] = [];
  closed = false;
  /** Set after an fsync failure: the page cache may have dropped our writes, so stop. */
  failure: EdgeqError | null = null;
  /** Offset after the last batch readers may see (durable under the flush policy). */
  visibleEndOffset = 0;
  /** How much of the active segment is known to be fdatasync'd, and the log state there. */
  synced: SyncedState = { position: 0, nextOffset: 0, maxTimestamp: -1 };
  lastCheckpointMs = 0;
  /** The storage's boot id, read at open and written into every checkpoint. */
  bootId: string | null = null;
  /** What the open found; set by recovery before the log is handed out. */
  recovery: LogRecoveryReport | null = null;
  /** Deletions still waiting for readers to release a handle (close waits for them). */
  readonly pendingDeletes = new Set<Promise<void>>();

  constructor(
    readonly dir: string,
    readonly config: LogConfig,
    deps: LogDeps,
  ) {
    this.storage = deps.storage;
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ log: dir });
    this.pool = deps.filePool ?? new FilePool(deps.storage, PRIVATE_POOL_FILES);
    this.observer = deps.observer ?? {};
    this.tail = new TailCache(config.tailCacheBytesMax);
  }

  get active(): Segment {
    return this.segments[this.segments.length - 1]!;
  }

  get logStartOffset(): number {
    return this.segments[0]!.baseOffset;
  }

  /** The typed error for a failed storage operation (`what` the log was doing). */
  storageError(err: unknown, what: string): EdgeqError {
    if (err instanceof EdgeqError) return err;
    if (isDiskFull(err)) {
      return new EdgeqError('STORAGE_FULL', `disk full: could not ${what} in ${this.dir}`, { cause: err });
    }
    return new EdgeqError('STORAGE_ERROR', `could not ${what} in ${this.dir}: ${(err as Error).message}`, { cause: err });
  }

  /** Records a failed fdatasync: from now on the log refuses appends until it is reopened. */
  failSync(err: unknown): EdgeqError {
    this.failure = this.storageError(err, 'fdatasync');
    this.logger.error({ err }, 'fdatasync failed; the log refuses appends until reopened');
    return this.failure;
  }

  async writeIndexes(seg: Segment, seal: boolean): Promise<void> {
    const time = seal ? cloneSealed(seg) : seg.timeIndex;
    await this.storage.writeFileAtomic(seg.indexPath, seg.offsetIndex.serialize());
    await this.storage.writeFileAtomic(seg.timeIndexPath, time.serialize());
    if (seal) seg.timeIndex = time;
  }

  async checkpoint(clean: boolean): Promise<void> {
    const seg = this.active;
    const at = clean ? syncedStateOf(seg) : this.synced;
    const cp: RecoveryCheckpoint = { segmentBaseOffset: seg.baseOffset, ...at, clean, bootId: this.bootId };
    // The index files must cover at least the checkpointed prefix, so they are written first.
    await this.writeIndexes(seg, clean);
    await writeCheckpoint(this.storage, this.dir, cp);
    this.lastCheckpointMs = this.clock.monotonicMs();
  }

  async maybeCheckpoint(): Promise<void> {
    if (this.clock.monotonicMs() - this.lastCheckpointMs < this.config.checkpointIntervalMs) return;
    await this.checkpoint(false).catch((err: unknown) => this.logger.warn({ err }, 'recovery checkpoint failed'));
  }

  /** Deletes a segment's files once no reader holds its handle; resolves when they are gone. */
  deleteSegmentFiles(seg: Segment): Promise<void> {
    // Readers may still hold the handle; the pool closes it once idle, then the files go.
    const p = this.pool
      .retire(seg.logPath)
      .then(async () => {
        for (const path of [seg.logPath, seg.indexPath, seg.timeIndexPath]) await this.storage.unlink(path).catch(() => undefined);
      })
      .finally(() => this.pendingDeletes.delete(p));
    this.pendingDeletes.add(p);
    return p;
  }
}

/** The time index of `seg` with its seal entry: (max timestamp, relative end offset). */
function cloneSealed(seg: Segment): TimeIndex {
  const copy = TimeIndex.parse(seg.timeIndex.serialize(), Number.MAX_SAFE_INTEGER)!;
  copy.append(Math.max(seg.maxTimestamp, copy.last()?.timestamp ?? 0, 0), seg.nextOffset - seg.baseOffset);
  return copy;
}
