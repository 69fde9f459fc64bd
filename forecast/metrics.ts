/**
 * The metrics of PROTOCOL.md §6, on the original scale: MASE against the in-sample daily
 * seasonal-naive MAE of the training part, sMAPE (0–200), peak capture with its under/over
 * split, and MASE per horizon. Forecasts are fed one origin at a time to an accumulator so that
 * a backtest of thousands of origins never holds them all.
 */
import { EdgeqError } from '../src/core/index.ts';

/** A forecast peak within this fraction of the actual peak is captured (PROTOCOL.md §6). */
export const PEAK_TOLERANCE = 0.1;

/** Everything §6 reports for one series and one method. */
export interface ForecastMetrics {
  /** Mean absolute error over all origins and horizons, divided by the scale Q. */
  readonly mase: number;
  /** Symmetric MAPE in percent, 0–200; a term with a = f = 0 counts 0. */
  readonly smape: number;
  /** Fraction of origins whose forecast peak is within ±10 % of the actual peak. */
  readonly peakCapture: number;
  /** Fraction of origins whose forecast peak is more than 10 % below the actual one. */
  readonly peakUnder: number;
  /** Fraction of origins whose forecast peak is more than 10 % above the actual one. */
  readonly peakOver: number;
  /** MASE of each horizon h = 1..H. */
  readonly maseByHorizon: number[];
  /** K, the number of origins scored. */
  readonly origins: number;
  /** Fraction of actual values at or below the P90 band (a calibration check; 1 − it is the breach rate). */
  readonly p90Coverage: number;
}

/**
 * Q = mean |y[t] − y[t−m]| over t ∈ [m, n_train): the in-sample MAE of the daily seasonal-naive
 * forecast on the training part only (`train` must be y[0 .. n_train−1]).
 */
export function seasonalNaiveScale(train: ArrayLike<number>, season: number): number {
  const n = train.length;
  if (!Number.isInteger(season) || season < 1) throw new EdgeqError('INVALID_ARGUMENT', `season must be a positive integer, got ${season}`, { details: { season } });
  if (n <= season) {
    throw new EdgeqError('INVALID_DATA', `too few rows for the MASE scale: the training part has ${n} rows, need more than one season (${season})`, {
      details: { rows: n, season },
    });
  }
  let sum = 0;
  for (let t = season; t < n; t++) sum += Math.abs((train[t] as number) - (train[t - season] as number));
  const q = sum / (n - season);
  if (!(q > 0)) {
    // A training part that repeats itself exactly every day has no scale: MASE would be infinite.
    throw new EdgeqError('INVALID_DATA', `the MASE scale is ${q}: the training part repeats itself exactly every ${season} steps`, { details: { season, scale: q } });
  }
  return q;
}

/** One sMAPE term in percent: 200·|a − f| / (|a| + |f|), and 0 when a = f = 0. */
export function smapeTerm(actual: number, forecast: number): number {
  const denom = Math.abs(actual) + Math.abs(forecast);
  return denom === 0 ? 0 : (200 * Math.abs(actual - forecast)) / denom;
}

/** Where a forecast peak F falls against the actual peak A. */
export type PeakOutcome = 'captured' | 'under' | 'over';

/**
 * Classifies one origin by its peaks. Captured is |F − A| ≤ 0.1·A (with A = 0 captured only when
 * F = 0); the rest is under when F is below A and over otherwise. Splitting the rest by the side of
 * A rather than by re-testing 0.9·A and 1.1·A keeps captured + under + over = 1 exactly even where
 * floating point rounds the two boundary tests differently.
 */
export function peakOutcome(actualPeak: number, forecastPeak: number): PeakOutcome {
  if (actualPeak === 0) return forecastPeak === 0 ? 'captured' : 'over';
  if (Math.abs(forecastPeak - actualPeak) <= PEAK_TOLERANCE * actualPeak) return 'captured';
  return forecastPeak < actualPeak ? 'under' : 'over';
}

/** Accumulates §6 over origins fed one by one; `result()` gives the metrics so far. */
export class MetricsAccumulator {
  private readonly absByHorizon: Float64Array;
  private smapeSum = 0;
  private count = 0;
  private captured = 0;
  private under = 0;
  private over = 0;
  private covered = 0;

  /** `scale` is Q from `seasonalNaiveScale`, fixed per series. */
  constructor(
    readonly horizon: number,
    readonly scale: number,
  ) {
    this.absByHorizon = new Float64Array(horizon);
  }

  /** Adds one origin: `actual` is y[o .. o+H−1], `forecast` the point forecast (and its P90 band). */
  add(actual: ArrayLike<number>, forecast: ArrayLike<number>, p90?: ArrayLike<number>): void {
    const h = this.horizon;
    if (actual.length < h || forecast.length < h) {
      throw new EdgeqError('INVALID_ARGUMENT', `an origin needs ${h} actual and forecast values, got ${actual.length} and ${forecast.length}`, {
        details: { horizon: h, actual: actual.length, forecast: forecast.length },
      });
    }
    let aPeak = -Infinity;
    let fPeak = -Infinity;
    for (let i = 0; i < h; i++) {
      const a = actual[i] as number;
      const f = forecast[i] as number;
      this.absByHorizon[i] = (this.absByHorizon[i] as number) + Math.abs(a - f);
      this.smapeSum += smapeTerm(a, f);
      if (a > aPeak) aPeak = a;
      if (f > fPeak) fPeak = f;
      if (a <= (p90 === undefined ? f : (p90[i] as number))) this.covered++;
    }
    const outcome = peakOutcome(aPeak, fPeak);
    if (outcome === 'captured') this.captured++;
    else if (outcome === 'under') this.under++;
    else this.over++;
    this.count++;
  }

  /** The metrics over the origins added so far (NaN everywhere when none were). */
  result(): ForecastMetrics {
    const k = this.count;
    const h = this.horizon;
    let abs = 0;
    for (let i = 0; i < h; i++) abs += this.absByHorizon[i] as number;
    return {
      mase: abs / (k * h * this.scale),
      smape: this.smapeSum / (k * h),
      peakCapture: this.captured / k,
      peakUnder: this.under / k,
      peakOver: this.over / k,
      maseByHorizon: Array.from(this.absByHorizon, (s) => s / (k * this.scale)),
      origins: k,
      p90Coverage: this.covered / (k * h),
    };
  }
}

/**
 * Scores point forecasts made at `origins` against `values` (the whole series): forecasts[i] is
 * for y[origins[i] .. origins[i]+H−1]. A convenience over MetricsAccumulator for small inputs.
 */
export function scoreForecasts(
  values: ArrayLike<number>,
  origins: readonly number[],
  forecasts: readonly ArrayLike<number>[],
  horizon: number,
  scale: number,
): ForecastMetrics {
  const acc = new MetricsAccumulator(horizon, scale);
  origins.forEach((o, i) => {
    if (!Number.isInteger(o) || o < 0 || o + horizon > values.length) {
      throw new EdgeqError('INVALID_ARGUMENT', `origin ${o} has no full window of ${horizon} actual values in ${values.length} rows`, { details: { origin: o, horizon } });
    }
    const actual = Array.from({ length: horizon }, (_, h) => values[o + h] as number);
    acc.add(actual, forecasts[i] as ArrayLike<number>);
  });
  return acc.result();
}
