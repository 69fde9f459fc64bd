/**
 * The newest batches of a log, kept in memory exactly as they were written, so that readers at
 * the tail (followers replicating, consumers that are caught up) are answered without a file
 * read. With replication factor 3 every batch a leader appends is read back twice at once by its
 * followers; through the file, each such read is a thread-pool round trip, a syscall and a fresh
 * buffer, which made those reads one of a leader's largest costs under load.
 *
 * The cache holds a contiguous run of batches that ends at the log's last written batch, bounded
 * by `bytesMax` (oldest dropped first). The log adds each written group and clears the cache when
 * it truncates or resets, so the run never disagrees with the file. A read it cannot answer in
 * full from memory (it starts below the run) returns null and goes to the file.
 */
import { OFFSET_LAST_OFFSET_DELTA } from './batch-format.ts';
import { readInt64 } from './varint.ts';

interface CachedBatch {
  baseOffset: number;
  lastOffset: number;
  bytes: Buffer;
}

export class TailCache {
  private batches: CachedBatch[] = [];
  /** Index of the oldest live entry in `batches` (dropping from the front without shifting). */
  private head = 0;
  private held = 0;

  constructor(private readonly bytesMax: number) {}

  /** Bytes held now. */
  get bytes(): number {
    return this.held;
  }

  /** First offset the cache can answer from, or null when empty. */
  get firstOffset(): number | null {
    return this.head < this.batches.length ? this.batches[this.head]!.baseOffset : null;
  }

  /**
   * Adds batches just written after everything held (stored format, offsets assigned). They are
   * copied into one buffer of their own, so the cache never pins the network buffers they arrived
   * in. A run that does not continue the held one replaces it.
   */
  add(written: readonly Buffer[]): void {
    if (this.bytesMax <= 0 || written.length === 0) return;
    let total = 0;
    for (const b of written) total += b.length;
    if (total > this.bytesMax) {
      // Larger than the whole cache: keep nothing rather than a run with a hole in it.
      this.clear();
      return;
    }
    // Unpooled: a small Buffer.concat would be a slice of Node's shared 8 KiB pool, and each one
    // the cache keeps would keep its whole slab alive, far past `bytesMax`.
    const copy = Buffer.allocUnsafeSlow(total);
    let pos = 0;
    for (const b of written) {
      b.copy(copy, pos);
      const view = copy.subarray(pos, pos + b.length);
      pos += b.length;
      const baseOffset = readInt64(view, 0);
      const tail = this.batches.length > this.head ? this.batches[this.batches.length - 1]! : undefined;
      if (tail !== undefined && tail.lastOffset + 1 !== baseOffset) this.clear();
      this.batches.push({ baseOffset, lastOffset: baseOffset + view.readInt32BE(OFFSET_LAST_OFFSET_DELTA), bytes: view });
      this.held += view.length;
    }
    while (this.held > this.bytesMax) {
      this.held -= this.batches[this.head]!.bytes.length;
      this.batches[this.head] = undefined as unknown as CachedBatch;
      this.head++;
    }
    // Compact now and then so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.batches.length) {
      this.batches = this.batches.slice(this.head);
      this.head = 0;
    }
  }

  clear(): void {
    this.batches = [];
    this.head = 0;
    this.held = 0;
  }

  /**
   * What the file read would return for (`offset`, `maxBytes`, `end`): whole batches starting
   * with the one holding `offset`, at least one, while they fit in `maxBytes` and end below `end`,
   * and the offset after the last of them. Empty bytes when none qualifies; null when the cache
   * does not hold the batch with `offset` (the caller reads the file). The bytes are the cache's
   * own (a single batch is not copied): readers must not write into them.
   */
  read(offset: number, maxBytes: number, end: number): { bytes: Buffer; nextOffset: number } | null {
    const first = this.firstOffset;
    if (first === null || offset < first) return null;
    // Binary search for the batch whose range holds `offset` (or the first after it).
    let lo = this.head;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.batches[mid]!.lastOffset < offset) lo = mid + 1;
      else hi = mid;
    }
    if (lo === this.batches.length) return null;
    const parts: Buffer[] = [];
    let size = 0;
    let nextOffset = offset;
    for (let i = lo; i < this.batches.length; i++) {
      const b = this.batches[i]!;
      if (b.lastOffset >= end) break;
      if (parts.length > 0 && size + b.bytes.length > maxBytes) break;
      parts.push(b.bytes);
      size += b.bytes.length;
      nextOffset = b.lastOffset + 1;
    }
    if (parts.length === 0) return { bytes: EMPTY, nextOffset };
    return { bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), nextOffset };
  }
}

const EMPTY = Buffer.alloc(0);
