/** `last_value` (PROTOCOL.md §7): ŷ_o[h] = y[o−1] for every h. P90 adds the in-sample error band. */
import type { FitOptions, FitReport, Forecast, Forecaster, SeriesView } from '../forecaster.ts';
import { applyBands, firstResidualOrigin, ResidualBand, type BandOffsets } from './residual-band.ts';
import { checkFitOptions, checkView, notFitted, requirePositiveInteger } from './validate.ts';

/** The persistence forecaster: the last observed value, flat over the horizon. */
export class LastValueForecaster implements Forecaster {
  readonly name = 'last_value';
  private band: BandOffsets | null = null;

  /** Measures the P90 band on the training part (there is nothing else to fit). */
  async fit(train: SeriesView, options: FitOptions): Promise<FitReport> {
    const t0 = performance.now();
    checkFitOptions(options);
    const { horizon } = options;
    checkView(train, 1 + horizon, this.name, 'one value plus the horizon in the training part');
    const band = new ResidualBand(horizon);
    const point = new Float64Array(horizon);
    const last = train.origin - horizon;
    for (let t = firstResidualOrigin(1, last); t <= last; t++) {
      point.fill(Math.max(0, train.values[t - 1] as number));
      band.add(train.values.subarray(t, t + horizon), point);
    }
    this.band = band.bands();
    return { trainMs: performance.now() - t0, backend: 'js', details: { p90Offsets: Array.from(this.band.upper), p10Offsets: Array.from(this.band.lower) } };
  }

  /** One forecast per view: its last value repeated `horizon` times. */
  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    if (this.band === null) throw notFitted(this.name);
    requirePositiveInteger(horizon, 'horizon');
    const band = this.band;
    return views.map((view) => {
      checkView(view, 1, this.name, 'one value of history');
      const point = new Float64Array(horizon).fill(Math.max(0, view.values[view.origin - 1] as number));
      return { point, ...applyBands(point, band) };
    });
  }
}
