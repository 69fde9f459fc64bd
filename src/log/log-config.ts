/**
 * Per-log settings (a topic's storage settings) and their defaults. The arithmetic behind each
 * default is in its comment.
 */
import { EdgeqError } from '../core/errors.ts';

/** When an append counts as durable. */
export type FlushPolicy = 'sync' | 'interval' | 'os';
export const FLUSH_POLICIES: readonly FlushPolicy[] = ['sync', 'interval', 'os'];

export interface LogConfig {
  /** Roll to a new segment before this size. 256 MiB keeps crash recovery of one active segment
   * under ~0.3 s at ~1 GB/s of read + CRC32C. Must stay below 4 GiB (32-bit index positions). */
  segmentBytesMax: number;
  /** Roll a segment older than this, so time retention can free it. */
  segmentMsMax: number;
  /** One offset/time index entry per this many bytes of log. */
  indexIntervalBytes: number;
  /** Largest batch accepted (header included). */
  messageBytesMax: number;
  flushPolicy: FlushPolicy;
  /** fdatasync period for the `interval` policy. */
  flushIntervalMs: number;
  /** Delete segments whose newest record is older than this; -1 keeps forever. */
  retentionMs: number;
  /** Delete oldest segments while the log is larger than this; -1 means no size limit. */
  retentionBytes: number;
  /** Write a recovery checkpoint (synced position and active indexes) at most this often. */
  checkpointIntervalMs: number;
  /** Bytes of appends waiting for the writer before new appends are refused with QUEUE_FULL. */
  appendQueueBytesMax: number;
  /** Bytes per write call; batches beyond wait for the next call. */
  writeGroupBytesMax: number;
  /** Batches per write call; Linux's IOV_MAX is 1024, so one writev carries at most that many. */
  writeGroupBatchesMax: number;
  /** Walk every record of an appended batch (decompressing) to check framing and count. */
  validateRecords: boolean;
  /** Bytes of the newest batches kept in memory for tail reads (followers, caught-up consumers);
   * 0 turns it off. 1 MiB covers ~100 ms of a partition taking 10 MB/s, far more than a follower
   * trails by, while a broker with 1000 partitions spends at most 1 GiB on it. */
  tailCacheBytesMax: number;
}

export const LOG_DEFAULTS: Readonly<LogConfig> = Object.freeze({
  segmentBytesMax: 256 * 1024 * 1024,
  segmentMsMax: 7 * 24 * 3600 * 1000,
  indexIntervalBytes: 4096,
  messageBytesMax: 4 * 1024 * 1024,
  flushPolicy: 'interval',
  flushIntervalMs: 200,
  retentionMs: 7 * 24 * 3600 * 1000,
  retentionBytes: -1,
  checkpointIntervalMs: 30_000,
  appendQueueBytesMax: 64 * 1024 * 1024,
  writeGroupBytesMax: 8 * 1024 * 1024,
  writeGroupBatchesMax: 1024,
  validateRecords: true,
  tailCacheBytesMax: 1024 * 1024,
});

/** Fills defaults and checks every field and the relations between them. */
export function resolveLogConfig(partial: Partial<LogConfig> = {}): LogConfig {
  const c: LogConfig = { ...LOG_DEFAULTS, ...partial };
  const integer = (key: keyof LogConfig, min: number, max: number): void => {
    const v = c[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new EdgeqError('INVALID_CONFIG', `log.${key} must be an integer in [${min}, ${max}], got ${String(v)}`, {
        details: { key: `log.${key}` },
      });
    }
  };
  const positive = (key: keyof LogConfig, max = Number.MAX_SAFE_INTEGER): void => integer(key, 1, max);
  positive('segmentBytesMax', 2 ** 32 - 1);
  positive('segmentMsMax');
  positive('indexIntervalBytes');
  positive('messageBytesMax', 2 ** 31 - 1);
  positive('flushIntervalMs');
  positive('checkpointIntervalMs');
  positive('appendQueueBytesMax');
  positive('writeGroupBytesMax');
  positive('writeGroupBatchesMax', 1024);
  integer('tailCacheBytesMax', 0, 2 ** 31 - 1);
  for (const key of ['retentionMs', 'retentionBytes'] as const) {
    if (!Number.isInteger(c[key]) || (c[key] < 1 && c[key] !== -1)) {
      throw new EdgeqError('INVALID_CONFIG', `log.${key} must be a positive integer or -1, got ${c[key]}`, {
        details: { key: `log.${key}` },
      });
    }
  }
  if (!FLUSH_POLICIES.includes(c.flushPolicy)) {
    throw new EdgeqError('INVALID_CONFIG', `log.flushPolicy must be one of ${FLUSH_POLICIES.join(', ')}`, {
      details: { key: 'log.flushPolicy' },
    });
  }
  // A batch must fit in a segment and in the append queue, or it could never be written.
  if (c.messageBytesMax > c.segmentBytesMax || c.messageBytesMax > c.appendQueueBytesMax) {
    throw new EdgeqError('INVALID_CONFIG', 'log.messageBytesMax must not exceed log.segmentBytesMax or log.appendQueueBytesMax', {
      details: { key: 'log.messageBytesMax' },
    });
  }
  return c;
}
