/**
 * The P10–P90 band of the baselines: the 10th and 90th percentiles of their in-sample h-step errors
 * (actual − forecast) per horizon, measured at fit time on the training part only, added to the
 * point forecast. It gives the planner an upper band (what it provisions for) and the dashboard a
 * lower one from every model, not just the LSTM.
 */

/** At most this many in-sample origins feed the band (the latest ones): bounds memory and time. */
export const RESIDUAL_ORIGINS_MAX = 20_000;

/** The quantile the upper band reports. */
export const BAND_QUANTILE = 0.9;

/** The quantile the lower band reports. */
export const LOWER_BAND_QUANTILE = 0.1;

/** The offsets added to the point forecast per horizon: upper (≥ 0) and lower (≤ 0). */
export interface BandOffsets {
  readonly upper: Float64Array;
  readonly lower: Float64Array;
}

/** The quantile `p` of sorted values, interpolated linearly between order statistics (R type 7). */
export function quantileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const pos = (n - 1) * p;
  const lo = Math.floor(pos);
  const hi = Math.min(n - 1, lo + 1);
  const frac = pos - lo;
  return (sorted[lo] as number) + frac * ((sorted[hi] as number) - (sorted[lo] as number));
}

/** The first in-sample origin to use so that at most RESIDUAL_ORIGINS_MAX origins end by `lastOrigin`. */
export function firstResidualOrigin(earliest: number, lastOrigin: number): number {
  return Math.max(earliest, lastOrigin - RESIDUAL_ORIGINS_MAX + 1);
}

/** Collects h-step errors per horizon, then gives the band's offset per horizon. */
export class ResidualBand {
  private readonly errors: Float64Array[];
  private count = 0;

  constructor(readonly horizon: number) {
    this.errors = Array.from({ length: horizon }, () => new Float64Array(RESIDUAL_ORIGINS_MAX));
  }

  /** Adds one in-sample origin: `actual` is y[t .. t+H−1], `forecast` the clipped point forecast. */
  add(actual: ArrayLike<number>, forecast: ArrayLike<number>): void {
    // Extra origins beyond the cap are dropped: callers start at firstResidualOrigin, so none are.
    if (this.count >= RESIDUAL_ORIGINS_MAX) return;
    for (let h = 0; h < this.horizon; h++) this.errors[h]![this.count] = (actual[h] as number) - (forecast[h] as number);
    this.count++;
  }

  /**
   * The offsets added to the point forecast at each horizon: the error quantiles, the upper never
   * below 0 and the lower never above 0, because the band brackets the point (a model biased high
   * does not get a P90 under its point, nor one biased low a P10 over it). With no in-sample origin
   * at all, the offsets are 0 and both bands are the point forecast.
   */
  bands(): BandOffsets {
    const upper = new Float64Array(this.horizon);
    const lower = new Float64Array(this.horizon);
    if (this.count === 0) return { upper, lower };
    for (let h = 0; h < this.horizon; h++) {
      const sorted = this.errors[h]!.slice(0, this.count).sort();
      upper[h] = Math.max(0, quantileSorted(sorted, BAND_QUANTILE));
      lower[h] = Math.min(0, quantileSorted(sorted, LOWER_BAND_QUANTILE));
    }
    return { upper, lower };
  }

  /** The upper offsets alone (P90 − point per horizon). */
  offsets(): Float64Array {
    return this.bands().upper;
  }
}

/** Band = max(0, point + offset[h]); horizons past the fitted ones reuse the last offset. */
export function applyBand(point: Float64Array, offsets: Float64Array): Float64Array {
  const out = new Float64Array(point.length);
  const last = offsets.length > 0 ? (offsets[offsets.length - 1] as number) : 0;
  for (let h = 0; h < point.length; h++) out[h] = Math.max(0, (point[h] as number) + (h < offsets.length ? (offsets[h] as number) : last));
  return out;
}

/** Both bands of a point forecast: `{ p90, p10 }` to spread into a `Forecast`. */
export function applyBands(point: Float64Array, bands: BandOffsets): { p90: Float64Array; p10: Float64Array } {
  return { p90: applyBand(point, bands.upper), p10: applyBand(point, bands.lower) };
}
