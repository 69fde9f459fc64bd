/**
 * The arithmetic of exact consumer failover (docs/geo.md), over batch headers only: a batch of a
 * global topic's log holds consecutive records of one origin, so its header says everything the
 * vector needs (the origin, and the origin offsets of its first and last record).
 *
 *  - The **vector** of a committed offset N: per origin, the highest origin offset among the
 *    records below N.
 *  - Its **translation** into another region's log: `start` is the first local offset whose
 *    record the vector does not cover; `horizon` is the offset after the last covered record at
 *    or after `start` (-1 when there is none): below it the consumer filters covered records out.
 */
import { readBatchHeader, splitBatches } from '../../src/log/index.ts';
import type { GeoVector } from '../../src/client/index.ts';

/** One batch of a log as the vector sees it. */
export interface BatchSpan {
  baseOffset: number;
  /** Offset of the batch's last record. */
  lastOffset: number;
  /** The region that wrote the records (this region for its own writes). */
  origin: string;
  /** Origin offset of the batch's first record (its own offset for this region's writes). */
  originBase: number;
}

/** The spans of a fetch answer's batches; `self` is the origin of batches that carry none. */
export function spansOf(records: Buffer, self: string): BatchSpan[] {
  const out: BatchSpan[] = [];
  for (const b of splitBatches(records)) {
    const h = readBatchHeader(b);
    const own = h.originRegion === null || h.originRegion === '';
    out.push({
      baseOffset: h.baseOffset,
      lastOffset: h.baseOffset + h.lastOffsetDelta,
      origin: own ? self : h.originRegion!,
      originBase: own ? h.baseOffset : h.originOffset,
    });
  }
  return out;
}

/**
 * Raises `v` (in place) by the records of `spans` in [from, to): per origin, the origin offset of
 * the last such record. Returns `v`.
 */
export function advanceVector(v: GeoVector, spans: readonly BatchSpan[], from: number, to: number): GeoVector {
  for (const s of spans) {
    if (s.lastOffset < from || s.baseOffset >= to) continue;
    // Records of a batch have consecutive origin offsets: the last one below `to` is the highest.
    const last = Math.min(s.lastOffset, to - 1);
    const originOffset = s.originBase + (last - s.baseOffset);
    if (originOffset > (v[s.origin] ?? -1)) v[s.origin] = originOffset;
  }
  return v;
}

/** True when `a` covers everything `b` covers (every entry of b at or below a's). */
export function vectorCovers(a: GeoVector, b: GeoVector): boolean {
  return Object.entries(b).every(([origin, n]) => n <= (a[origin] ?? -1));
}

/** The translation of a vector into one log, built batch by batch in log order. */
export class Translation {
  /** First local offset not covered; null until one is seen. */
  start: number | null = null;
  /** Offset after the last covered record at or after `start`; -1 while none. */
  horizon = -1;
  /** Offset after the last record seen. */
  scannedTo: number;
  /** Origins with an uncovered record at or after `start`: their later records are uncovered too (each origin's order is kept). */
  private readonly passed = new Set<string>();

  constructor(
    readonly vector: GeoVector,
    /** Where the scan begins (the log start, or an earlier start when the vector only grew). */
    from: number,
  ) {
    this.scannedTo = from;
  }

  /** Takes the next batches of the log (in order, from `scannedTo`). */
  add(spans: readonly BatchSpan[]): void {
    for (const s of spans) {
      if (s.lastOffset < this.scannedTo) continue;
      const first = Math.max(s.baseOffset, this.scannedTo);
      const records = s.lastOffset - first + 1;
      // Covered records of a batch are a prefix of it: origin offsets grow by one per record.
      const coveredUpTo = (this.vector[s.origin] ?? -1) - (s.originBase + (first - s.baseOffset)) + 1;
      const covered = Math.max(0, Math.min(records, coveredUpTo));
      if (this.start === null) {
        if (covered < records) this.start = first + covered;
      } else if (covered > 0) {
        this.horizon = first + covered;
      }
      if (this.start !== null && covered < records) this.passed.add(s.origin);
      this.scannedTo = s.lastOffset + 1;
    }
  }

  /**
   * True once nothing later in the log can be covered: every origin the vector has passed its
   * entry after the start. An origin whose covered records this log does not hold yet keeps the
   * scan going to the end.
   */
  done(): boolean {
    if (this.start === null) return false;
    return Object.entries(this.vector).every(([origin, n]) => n < 0 || this.passed.has(origin));
  }

  /** The result once the scan reached `end` (the high watermark): start = end when every record is covered. */
  result(end: number): { start: number; horizon: number } {
    return { start: this.start ?? Math.max(end, this.scannedTo), horizon: this.horizon };
  }
}
