/**
 * The sparse time index of a segment. An entry (T, r) says: every record before relative offset r
 * has a timestamp ≤ T. Timestamps need not grow with offsets, so T is the running maximum. To find
 * the first record at or after time t, start at the r of the last entry with T < t: nothing before
 * it can qualify.
 *
 * On disk: 12 bytes an entry, big-endian int64 timestamp then uint32 relative offset. The segment
 * is sealed with a final entry (segment max timestamp, relative end offset), which also tells the
 * segment's end on open without a scan.
 */
import { readInt64, writeInt64 } from './varint.ts';

export const TIME_INDEX_ENTRY_BYTES = 12;

export class TimeIndex {
  private ts: number[] = [];
  private rel: number[] = [];

  get entries(): number {
    return this.ts.length;
  }

  /** Adds an entry if it says something new (a later timestamp or offset). */
  append(maxTimestamp: number, relOffset: number): void {
    const n = this.ts.length;
    if (n > 0 && (maxTimestamp < this.ts[n - 1]! || relOffset < this.rel[n - 1]!)) return;
    if (n > 0 && maxTimestamp === this.ts[n - 1]! && relOffset === this.rel[n - 1]!) return;
    this.ts.push(maxTimestamp);
    this.rel.push(relOffset);
  }

  /** Relative offset from which to scan for the first record with timestamp ≥ `timestamp`. */
  lookup(timestamp: number): number {
    let lo = 0;
    let hi = this.ts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ts[mid]! < timestamp) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? 0 : this.rel[found]!;
  }

  last(): { timestamp: number; relOffset: number } | null {
    const n = this.ts.length;
    return n === 0 ? null : { timestamp: this.ts[n - 1]!, relOffset: this.rel[n - 1]! };
  }

  /** Drops entries that describe offsets at or past `relOffset` (after a truncation). */
  truncateToRelOffset(relOffset: number): void {
    let n = this.rel.length;
    while (n > 0 && this.rel[n - 1]! > relOffset) n--;
    this.ts.length = n;
    this.rel.length = n;
  }

  serialize(): Buffer {
    const out = Buffer.allocUnsafe(this.ts.length * TIME_INDEX_ENTRY_BYTES);
    for (let i = 0; i < this.ts.length; i++) {
      writeInt64(out, i * TIME_INDEX_ENTRY_BYTES, this.ts[i]!);
      out.writeUInt32BE(this.rel[i]!, i * TIME_INDEX_ENTRY_BYTES + 8);
    }
    return out;
  }

  /** Parses a time index file, or returns null when it is damaged. */
  static parse(buf: Buffer, relOffsetEnd: number): TimeIndex | null {
    if (buf.length % TIME_INDEX_ENTRY_BYTES !== 0) return null;
    const idx = new TimeIndex();
    for (let p = 0; p < buf.length; p += TIME_INDEX_ENTRY_BYTES) {
      const ts = readInt64(buf, p);
      const rel = buf.readUInt32BE(p + 8);
      const last = idx.last();
      if (rel > relOffsetEnd || ts < 0) return null;
      if (last && (ts < last.timestamp || rel < last.relOffset)) return null;
      idx.ts.push(ts);
      idx.rel.push(rel);
    }
    return idx;
  }
}
