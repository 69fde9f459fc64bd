/**
 * The types a partition log shares with its callers: what it needs (deps, observer), what an
 * append and a read take and give, and the append guard of the idempotent producer.
 */
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { BatchHeader } from './batch-format.ts';
import type { FilePool } from './file-pool.ts';
import type { Storage } from './storage.ts';

/** Hooks for metrics; all optional. */
export interface LogObserver {
  onFsync?(durationMs: number): void;
  onAppend?(batches: number, bytes: number): void;
  /** A read that returned data, answered from the tail cache or from the segment file. */
  onRead?(source: 'cache' | 'file', bytes: number): void;
  /**
   * Recovery at open moved a file aside instead of deleting it: a segment it could not keep, or
   * the cut-off tail of one (`file` is its new name in the log's folder, ending in `.corrupt`).
   */
  onCorruptSegment?(file: string, bytes: number): void;
}

/**
 * What the last open found, for deciding whether this replica may lead (a replica that may lack
 * writes it once acknowledged must catch up from a leader first). Read-only.
 */
export interface LogRecoveryReport {
  /** The last close was clean (its checkpoint says so), or the folder was new. */
  readonly cleanShutdown: boolean;
  /** The machine did not restart since the last checkpoint (same `Storage.bootId`), or the folder was new. */
  readonly sameBoot: boolean;
  /** Bytes recovery cut off the end of segments it kept (torn or corrupt tails). */
  readonly truncatedBytes: number;
  /** Files moved aside (`*.corrupt`, in the log's folder): dropped segments and cut-off corrupt tails. */
  readonly corruptSegments: readonly string[];
  /** The folder holds less than its checkpoint says was durable: its segment is shorter or gone. */
  readonly shortOfCheckpoint: boolean;
  /**
   * True when the log may lack writes it once accepted: an unclean shutdown on a new boot (the
   * OS may have dropped unsynced pages), or recovery cut bytes, moved segments aside or found
   * less than its checkpoint. A SIGKILL on the same boot keeps the page cache and reports false.
   */
  readonly mayHaveLostWrites: boolean;
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
  /** Passed to the append guard: the origin cursor an applied batch requires (see OriginState). */
  originCursorExpected?: number;
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
  check(header: BatchHeader, placement: { baseOffset: number; leaderAppend: boolean; originCursorExpected?: number }): AppendResult | null;
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
