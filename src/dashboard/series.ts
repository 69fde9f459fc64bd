/**
 * A fixed-size ring of time-series points, columnar (one Float64Array per field), so a day of
 * points for every region is a few hundred kilobytes and reading a range is a copy of slices.
 * Missing values are NaN (null in JSON).
 */

/** The fields of one point of a region's capacity series. */
export const SERIES_FIELDS = ['ingress', 'capacity', 'ceiling', 'p50', 'p10', 'p90', 'brokers', 'gateways'] as const;
export type SeriesField = (typeof SERIES_FIELDS)[number];
export type SeriesPoint = { t: number } & Record<SeriesField, number>;

/** A range of points as JSON sends it: `t` in epoch ms, each field a column (null: no value). */
export type SeriesColumns = { t: number[] } & Record<SeriesField, (number | null)[]>;

export class SeriesRing {
  private readonly t: Float64Array;
  private readonly cols: Record<SeriesField, Float64Array>;
  private next = 0;
  private size = 0;

  constructor(readonly capacity: number) {
    this.t = new Float64Array(capacity);
    this.cols = Object.fromEntries(SERIES_FIELDS.map((f) => [f, new Float64Array(capacity)])) as Record<SeriesField, Float64Array>;
  }

  get length(): number {
    return this.size;
  }

  /** Appends a point; the oldest goes once the ring is full. Points come in time order. */
  push(p: SeriesPoint): void {
    this.t[this.next] = p.t;
    for (const f of SERIES_FIELDS) this.cols[f][this.next] = p[f];
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** The newest point, or null when empty. */
  last(): SeriesPoint | null {
    if (this.size === 0) return null;
    return this.at((this.next - 1 + this.capacity) % this.capacity);
  }

  /** Points with t ≥ `fromMs`, oldest first, as columns. */
  since(fromMs: number): SeriesColumns {
    const out = { t: [] as number[], ...Object.fromEntries(SERIES_FIELDS.map((f) => [f, [] as (number | null)[]])) } as SeriesColumns;
    const first = (this.next - this.size + this.capacity) % this.capacity;
    for (let k = 0; k < this.size; k++) {
      const i = (first + k) % this.capacity;
      if (this.t[i]! < fromMs) continue;
      out.t.push(this.t[i]!);
      for (const f of SERIES_FIELDS) {
        const v = this.cols[f][i]!;
        out[f].push(Number.isFinite(v) ? v : null);
      }
    }
    return out;
  }

  private at(i: number): SeriesPoint {
    const p = { t: this.t[i]! } as SeriesPoint;
    for (const f of SERIES_FIELDS) p[f] = this.cols[f][i]!;
    return p;
  }
}

/** Mean of each field over `points` (NaN where none has a value), stamped `t`. */
export function meanPoint(t: number, points: readonly SeriesPoint[]): SeriesPoint {
  const p = { t } as SeriesPoint;
  for (const f of SERIES_FIELDS) {
    let sum = 0;
    let n = 0;
    for (const q of points) {
      const v = q[f];
      if (Number.isFinite(v)) {
        sum += v;
        n++;
      }
    }
    p[f] = n > 0 ? sum / n : NaN;
  }
  return p;
}
