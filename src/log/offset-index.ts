/**
 * The sparse offset index of a segment: (relative offset → file position) pairs, one every
 * `indexIntervalBytes` of log. A lookup gives the position of a batch at or before the wanted
 * offset; the reader scans forward at most about one interval from there.
 *
 * On disk: 8 bytes an entry, big-endian uint32 relative offset then uint32 position. Segments are
 * capped below 4 GiB and 2^31 offsets, so both fit.
 */
export const OFFSET_INDEX_ENTRY_BYTES = 8;

export class OffsetIndex {
  private rel: number[] = [];
  private pos: number[] = [];

  get entries(): number {
    return this.rel.length;
  }

  /** Adds an entry; entries must grow strictly in both offset and position. */
  append(relOffset: number, position: number): void {
    const n = this.rel.length;
    if (n > 0 && (relOffset <= this.rel[n - 1]! || position <= this.pos[n - 1]!)) return;
    this.rel.push(relOffset);
    this.pos.push(position);
  }

  /** Position of the last indexed batch whose relative offset is ≤ `relOffset` (0 when none). */
  lookup(relOffset: number): number {
    let lo = 0;
    let hi = this.rel.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.rel[mid]! <= relOffset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? 0 : this.pos[found]!;
  }

  /** The last entry, if any. */
  last(): { relOffset: number; position: number } | null {
    const n = this.rel.length;
    return n === 0 ? null : { relOffset: this.rel[n - 1]!, position: this.pos[n - 1]! };
  }

  /** Drops entries at or beyond `position` (after a truncation). */
  truncateToPosition(position: number): void {
    let n = this.pos.length;
    while (n > 0 && this.pos[n - 1]! >= position) n--;
    this.rel.length = n;
    this.pos.length = n;
  }

  serialize(): Buffer {
    const out = Buffer.allocUnsafe(this.rel.length * OFFSET_INDEX_ENTRY_BYTES);
    for (let i = 0; i < this.rel.length; i++) {
      out.writeUInt32BE(this.rel[i]!, i * OFFSET_INDEX_ENTRY_BYTES);
      out.writeUInt32BE(this.pos[i]!, i * OFFSET_INDEX_ENTRY_BYTES + 4);
    }
    return out;
  }

  /**
   * Parses an index file, or returns null when it is damaged: a size that is not a whole number
   * of entries, entries that do not grow, or a position or offset past the segment.
   */
  static parse(buf: Buffer, segmentBytes: number, relOffsetEnd: number): OffsetIndex | null {
    if (buf.length % OFFSET_INDEX_ENTRY_BYTES !== 0) return null;
    const idx = new OffsetIndex();
    for (let p = 0; p < buf.length; p += OFFSET_INDEX_ENTRY_BYTES) {
      const rel = buf.readUInt32BE(p);
      const pos = buf.readUInt32BE(p + 4);
      const last = idx.last();
      if (pos >= segmentBytes || rel >= relOffsetEnd) return null;
      if (last && (rel <= last.relOffset || pos <= last.position)) return null;
      idx.rel.push(rel);
      idx.pos.push(pos);
    }
    return idx;
  }
}
