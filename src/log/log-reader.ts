/**
 * The read path of a partition log: whole stored batches from the tail cache or from one segment
 * file (found through the sparse offset index), and the timestamp lookup. Reads never wait for
 * the writer; they see what is visible when they start.
 */
import { EdgeqError } from '../core/errors.ts';
import { decodeBatch } from './batch.ts';
import { LOG_OVERHEAD, OFFSET_BATCH_LENGTH, OFFSET_LAST_OFFSET_DELTA, OFFSET_MAX_TIMESTAMP } from './batch-format.ts';
import type { LogState } from './log-state.ts';
import type { ReadOptions, ReadResult } from './log-types.ts';
import type { Segment } from './segment.ts';
import { readInt64 } from './varint.ts';

export class LogReader {
  constructor(private readonly s: LogState) {}

  /** See `PartitionLog.read`. */
  async read(offset: number, maxBytes: number, options: ReadOptions = {}): Promise<ReadResult> {
    const s = this.s;
    if (s.closed) throw new EdgeqError('LOG_CLOSED', `log ${s.dir} is closed`);
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new EdgeqError('INVALID_ARGUMENT', `bad read arguments offset=${offset} maxBytes=${maxBytes}`);
    }
    const logStartOffset = s.logStartOffset;
    const logEndOffset = s.visibleEndOffset;
    if (offset < logStartOffset || offset > logEndOffset) {
      throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${offset} is outside [${logStartOffset}, ${logEndOffset}]`, {
        details: { offset, logStartOffset, logEndOffset },
      });
    }
    const end = Math.min(options.maxOffset ?? logEndOffset, logEndOffset);
    const empty = { bytes: Buffer.alloc(0), nextOffset: offset, logStartOffset, logEndOffset };
    if (offset >= end) return empty;
    const cached = s.tail.read(offset, maxBytes, end);
    if (cached !== null) {
      if (cached.bytes.length === 0) return empty;
      s.observer.onRead?.('cache', cached.bytes.length);
      return { bytes: cached.bytes, nextOffset: cached.nextOffset, logStartOffset, logEndOffset };
    }
    const seg = this.segmentFor(offset);
    const segEnd = seg.size;
    const lease = await s.pool.acquire(seg.logPath);
    try {
      const reader = new ChunkReader(lease.file, segEnd);
      // Find the batch that holds `offset`, starting from the index entry at or before it.
      let pos = seg.offsetIndex.lookup(offset - seg.baseOffset);
      const window = s.config.indexIntervalBytes + maxBytes;
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
      s.observer.onRead?.('file', bytes.length);
      return { bytes, nextOffset, logStartOffset, logEndOffset };
    } finally {
      lease.release();
    }
  }

  /** See `PartitionLog.offsetForTimestamp`. */
  async offsetForTimestamp(timestampMs: number): Promise<number | null> {
    const end = this.s.visibleEndOffset;
    for (const seg of this.s.segments.slice()) {
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

  private segmentFor(offset: number): Segment {
    const segments = this.s.segments;
    let lo = 0;
    let hi = segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (segments[mid]!.baseOffset <= offset) lo = mid;
      else hi = mid - 1;
    }
    return segments[lo]!;
  }
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
