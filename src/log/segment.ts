/**
 * One segment of a partition log: a `.log` file of batches named by its base offset, with its
 * sparse offset and time indexes, and the scan that validates or re-indexes its batches.
 */
import { join } from 'node:path';
import {
  BATCH_HEADER_BYTES_MIN,
  BATCH_MAGIC,
  LOG_OVERHEAD,
  OFFSET_ATTRIBUTES,
  OFFSET_BATCH_LENGTH,
  OFFSET_CRC,
  OFFSET_LAST_OFFSET_DELTA,
  OFFSET_LEADER_EPOCH,
  OFFSET_MAGIC,
  OFFSET_MAX_TIMESTAMP,
  OFFSET_RECORD_COUNT,
  ATTR_KNOWN_BITS,
} from './batch-format.ts';
import { crc32c } from '../core/crc32c.ts';
import { OffsetIndex } from './offset-index.ts';
import type { StorageFile } from './storage.ts';
import { TimeIndex } from './time-index.ts';
import { readInt64 } from './varint.ts';

/** Digits in a segment file name: enough for any int64 offset. */
const NAME_DIGITS = 20;
/** Bytes read per call while scanning a segment. */
export const SCAN_CHUNK_BYTES = 1024 * 1024;
/** Header bytes a scan needs to see for each batch (through recordCount). */
const SCAN_HEADER_BYTES = OFFSET_RECORD_COUNT + 4;

/** File name stem of the segment with `baseOffset`, e.g. `00000000000000000042`. */
export function segmentStem(baseOffset: number): string {
  return String(baseOffset).padStart(NAME_DIGITS, '0');
}

/** Base offset named by a `.log` file name, or null when the name is not a segment's. */
export function parseSegmentName(name: string): number | null {
  const m = /^(\d{20})\.log$/.exec(name);
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/** In-memory state of one segment. */
export class Segment {
  readonly logPath: string;
  readonly indexPath: string;
  readonly timeIndexPath: string;
  /** Bytes of valid batches in the file. */
  size = 0;
  /** Offset after the last batch in this segment. */
  nextOffset: number;
  /** Running maximum of batch max timestamps; -1 while empty. */
  maxTimestamp = -1;
  /** Wall time this segment started (for roll on age). */
  createdAtMs: number;
  offsetIndex = new OffsetIndex();
  timeIndex = new TimeIndex();
  /** Log bytes appended since the last index entry. */
  bytesSinceIndexEntry = 0;

  constructor(
    dir: string,
    readonly baseOffset: number,
    createdAtMs: number,
  ) {
    const stem = segmentStem(baseOffset);
    this.logPath = join(dir, `${stem}.log`);
    this.indexPath = join(dir, `${stem}.index`);
    this.timeIndexPath = join(dir, `${stem}.timeindex`);
    this.nextOffset = baseOffset;
    this.createdAtMs = createdAtMs;
  }

  /**
   * Accounts for a batch that now sits at `position`, adding index entries every
   * `indexIntervalBytes`. Batches must be noted in order.
   */
  noteBatch(b: ScannedBatch, indexIntervalBytes: number): void {
    if (this.bytesSinceIndexEntry >= indexIntervalBytes) {
      const rel = b.baseOffset - this.baseOffset;
      this.offsetIndex.append(rel, b.position);
      if (this.maxTimestamp >= 0) this.timeIndex.append(this.maxTimestamp, rel);
      this.bytesSinceIndexEntry = 0;
    }
    this.bytesSinceIndexEntry += b.sizeBytes;
    if (b.maxTimestamp > this.maxTimestamp) this.maxTimestamp = b.maxTimestamp;
    this.size = b.position + b.sizeBytes;
    this.nextOffset = b.baseOffset + b.lastOffsetDelta + 1;
  }

  /** Clears the in-memory state back to an empty segment. */
  reset(): void {
    this.size = 0;
    this.nextOffset = this.baseOffset;
    this.maxTimestamp = -1;
    this.offsetIndex = new OffsetIndex();
    this.timeIndex = new TimeIndex();
    this.bytesSinceIndexEntry = 0;
  }
}

/** What a scan learns about one batch without decoding its records. */
export interface ScannedBatch {
  position: number;
  sizeBytes: number;
  baseOffset: number;
  lastOffsetDelta: number;
  maxTimestamp: number;
  leaderEpoch: number;
}

/** How a scan ended. */
export interface ScanResult {
  /** Position after the last valid batch. */
  validEnd: number;
  /** Offset after the last valid batch (or the expected first offset when none). */
  nextOffset: number;
  /** Why the scan stopped before the end, when it did. */
  stoppedBecause: string | null;
}

/**
 * Walks the batches of `file` from `start` to `end`. Each batch must start at `expectedOffset`
 * (offsets are contiguous), have a sane header and, with `verifyCrc`, a matching CRC32C. Stops at
 * the first batch that fails; everything before it is reported through `onBatch`.
 */
export async function scanBatches(
  file: StorageFile,
  range: { start: number; end: number; expectedOffset: number },
  options: { verifyCrc: boolean },
  onBatch: (b: ScannedBatch) => void,
): Promise<ScanResult> {
  const chunk = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
  let chunkStart = 0;
  let chunkLen = 0;
  let pos = range.start;
  let expected = range.expectedOffset;
  let lastEpoch = -1;
  const load = async (at: number, need: number): Promise<boolean> => {
    if (at >= chunkStart && at + need <= chunkStart + chunkLen) return true;
    const len = Math.min(SCAN_CHUNK_BYTES, range.end - at);
    if (len < need) return false;
    chunkLen = await file.read(chunk, 0, len, at);
    chunkStart = at;
    return chunkLen >= need;
  };
  const stop = (why: string): ScanResult => ({ validEnd: pos, nextOffset: expected, stoppedBecause: why });

  while (pos < range.end) {
    if (range.end - pos < BATCH_HEADER_BYTES_MIN) return stop(`${range.end - pos} trailing bytes, shorter than a header`);
    if (!(await load(pos, SCAN_HEADER_BYTES))) return stop('short read of a batch header');
    const h = pos - chunkStart;
    const sizeBytes = chunk.readInt32BE(h + OFFSET_BATCH_LENGTH) + LOG_OVERHEAD;
    if (sizeBytes < BATCH_HEADER_BYTES_MIN) return stop(`batch length ${sizeBytes} is shorter than a header`);
    if (pos + sizeBytes > range.end) return stop(`batch of ${sizeBytes} bytes runs past the end (torn write)`);
    if (chunk.readInt8(h + OFFSET_MAGIC) !== BATCH_MAGIC) return stop('bad magic');
    if ((chunk.readInt16BE(h + OFFSET_ATTRIBUTES) & ~ATTR_KNOWN_BITS) !== 0) return stop('unknown attribute bits');
    const baseOffset = readInt64(chunk, h);
    const lastOffsetDelta = chunk.readInt32BE(h + OFFSET_LAST_OFFSET_DELTA);
    const recordCount = chunk.readInt32BE(h + OFFSET_RECORD_COUNT);
    if (baseOffset !== expected) return stop(`batch at offset ${baseOffset}, expected ${expected}`);
    if (recordCount < 1 || lastOffsetDelta !== recordCount - 1) return stop('record count and last offset delta disagree');
    const leaderEpoch = chunk.readInt32BE(h + OFFSET_LEADER_EPOCH);
    if (leaderEpoch < lastEpoch) return stop(`leader epoch went back from ${lastEpoch} to ${leaderEpoch}`);
    const maxTimestamp = readInt64(chunk, h + OFFSET_MAX_TIMESTAMP);
    if (options.verifyCrc) {
      const stored = chunk.readUInt32BE(h + OFFSET_CRC);
      let crc = 0;
      // CRC32C chains across chunks, so a batch of any size is checked with bounded memory.
      for (let at = pos + OFFSET_ATTRIBUTES; at < pos + sizeBytes; ) {
        const n = Math.min(SCAN_CHUNK_BYTES, pos + sizeBytes - at);
        if (!(await load(at, n))) return stop('short read of a batch body');
        crc = crc32c(chunk.subarray(at - chunkStart, at - chunkStart + n), crc);
        at += n;
      }
      if (crc !== stored) return stop(`CRC32C mismatch at offset ${baseOffset}`);
    }
    onBatch({ position: pos, sizeBytes, baseOffset, lastOffsetDelta, maxTimestamp, leaderEpoch });
    lastEpoch = leaderEpoch;
    expected = baseOffset + lastOffsetDelta + 1;
    pos += sizeBytes;
  }
  return { validEnd: pos, nextOffset: expected, stoppedBecause: null };
}
