/**
 * `seasonal_naive` (PROTOCOL.md §7): ŷ_o[h] = y[o+h−1−k·m] with the smallest k ≥ 1 that puts the
 * index before o; for H ≤ m that is the value one day earlier. P90 adds the in-sample error band.
 */
import type { FitOptions, FitReport, Forecast, Forecaster, SeriesView } from '../forecaster.ts';
import { applyBands, firstResidualOrigin, ResidualBand, type BandOffsets } from './residual-band.ts';
import { checkFitOptions, checkView, notFitted, requirePositiveInteger } from './validate.ts';

/** Writes the seasonal-naive forecast at `origin` from `values` (at least `season` values before it) into `out`. */
export function seasonalNaivePoint(values: ArrayLike<number>, origin: number, season: number, out: Float64Array): void {
  for (let h = 1; h <= out.length; h++) {
    // Smallest k ≥ 1 with o+h−1−k·m < o, i.e. k·m > h−1.
    const k = Math.floor((h - 1) / season) + 1;
    out[h - 1] = Math.max(0, values[origin + h - 1 - k * season] as number);
  }
}

/** The daily seasonal-naive forecaster. */
export class SeasonalNaiveForecaster implements Forecaster {
  readonly name = 'seasonal_naive';
  private season = 0;
  private band: BandOffsets | null = null;

  /** Records the season and measures the P90 band on the training part. */
  async fit(train: SeriesView, options: FitOptions): Promise<FitReport> {
    const t0 = performance.now();
    checkFitOptions(options);
    const { season, horizon } = options;
    checkView(train, season + horizon, this.name, 'one season plus the horizon in the training part');
    const band = new ResidualBand(horizon);
    const point = new Float64Array(horizon);
    const last = train.origin - horizon;
    for (let t = firstResidualOrigin(season, last); t <= last; t++) {
      seasonalNaivePoint(train.values, t, season, point);
      band.add(train.values.subarray(t, t + horizon), point);
    }
    this.season = season;
    this.band = band.bands();
    return { trainMs: performance.now() - t0, backend: 'js', details: { season, p90Offsets: Array.from(this.band.upper), p10Offsets: Array.from(this.band.lower) } };
  }

  /** One forecast per view: the values one season (day) before each step. */
  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    if (this.band === null) throw notFitted(this.name);
    requirePositiveInteger(horizon, 'horizon');
    const band = this.band;
    // Long horizons reach back k whole seasons; every index must stay inside the view.
    const need = (Math.floor((horizon - 1) / this.season) + 1) * this.season;
    return views.map((view) => {
      checkView(view, need, this.name, 'one season of history');
      const point = new Float64Array(horizon);
      seasonalNaivePoint(view.values, view.origin, this.season, point);
      return { point, ...applyBands(point, band) };
    });
  }
}
