/**
 * The rolling-origin backtest of PROTOCOL.md §2–§6: split at n_train = floor(0.8·n), fit on the
 * training part only, forecast at every origin o = n_train, n_train + stride, …, n − H from a view
 * truncated at o (so the future cannot be read), clip at 0, and score with §6's metrics.
 */
import { EdgeqError } from '../src/core/index.ts';
import { lineOfRow } from './csv.ts';
import { viewAt, type FitReport, type Forecaster, type Series } from './forecaster.ts';
import { MetricsAccumulator, seasonalNaiveScale, type ForecastMetrics } from './metrics.ts';

/** Views per forecast call: lets a model batch (one tensor for hundreds of origins) with bounded memory. */
export const FORECAST_CHUNK_VIEWS = 512;
/** The protocol's training fraction. */
export const TRAIN_FRACTION = 0.8;

/** How a backtest runs. */
export interface BacktestOptions {
  /** Season m in steps (one day). */
  readonly season: number;
  /** Horizon H (12 under the protocol). */
  readonly horizon: number;
  /** 1 (primary protocol) or 12 (secondary, non-overlapping windows). */
  readonly stride: 1 | 12;
  /** Fraction of rows in the training part (default TRAIN_FRACTION). */
  readonly trainFraction?: number;
  /** Passed to fit: the training budget of models that train. */
  readonly budgetMs?: number;
  /** Passed to fit: the seed of anything random. */
  readonly seed?: number;
}

/** A method's figures on one series at one stride: §6's metrics (the P90 coverage is in `details`). */
export interface BacktestResult extends Omit<ForecastMetrics, 'p90Coverage'> {
  readonly method: string;
  readonly series: string;
  readonly stride: number;
  readonly trainMs: number;
  readonly backend: string;
  /** The fit's details, plus the split, the scale Q, the P90 coverage and the forecast time. */
  readonly details: Record<string, unknown>;
}

/** The split of PROTOCOL.md §2 and the origins of §3. */
export interface BacktestPlan {
  readonly rows: number;
  readonly nTrain: number;
  readonly origins: number[];
}

function checkOptions(options: BacktestOptions): void {
  const { season, horizon, stride } = options;
  const fraction = options.trainFraction ?? TRAIN_FRACTION;
  for (const [what, v] of [['season', season], ['horizon', horizon], ['stride', stride]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new EdgeqError('INVALID_ARGUMENT', `${what} must be a positive integer, got ${v}`, { details: { [what]: v } });
  }
  if (!(fraction > 0 && fraction < 1)) throw new EdgeqError('INVALID_ARGUMENT', `trainFraction must be in (0, 1), got ${fraction}`, { details: { trainFraction: fraction } });
}

/** n_train = floor(fraction·n) and the origins n_train, n_train + stride, … ≤ n − H. */
export function planBacktest(series: Series, options: BacktestOptions): BacktestPlan {
  checkOptions(options);
  const n = series.values.length;
  const nTrain = Math.floor((options.trainFraction ?? TRAIN_FRACTION) * n);
  // The scale needs more than one season of training rows, and the test part one full window.
  if (nTrain <= options.season || n - options.horizon < nTrain) {
    throw new EdgeqError(
      'INVALID_DATA',
      `${series.name}: too few rows for one window plus the horizon: ${n} rows (up to line ${lineOfRow(n - 1)}) give a training part of ${nTrain} rows (need more than one season, ${options.season}) and a test part of ${n - nTrain} (need at least the horizon, ${options.horizon})`,
      { details: { file: series.name, line: lineOfRow(n - 1), rows: n, nTrain, season: options.season, horizon: options.horizon } },
    );
  }
  const origins: number[] = [];
  // Bounded by n: the loop advances by stride ≥ 1 up to n − H.
  for (let o = nTrain; o <= n - options.horizon; o += options.stride) origins.push(o);
  return { rows: n, nTrain, origins };
}

/** Fits `forecaster` on the training part, then scores it (see `scoreBacktest`). */
export async function backtest(series: Series, forecaster: Forecaster, options: BacktestOptions): Promise<BacktestResult> {
  const plan = planBacktest(series, options);
  const report = await forecaster.fit(viewAt(series, plan.nTrain), {
    season: options.season,
    horizon: options.horizon,
    ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  });
  return scoreBacktest(series, forecaster, options, report);
}

/**
 * Scores an already fitted forecaster (fitted on exactly the training part of `options`), so one
 * training serves both strides. Forecast calls take FORECAST_CHUNK_VIEWS views at a time, in
 * increasing origin order.
 */
export async function scoreBacktest(series: Series, forecaster: Forecaster, options: BacktestOptions, report: FitReport): Promise<BacktestResult> {
  const plan = planBacktest(series, options);
  const { horizon } = options;
  const y = series.values;
  const scale = seasonalNaiveScale(y.subarray(0, plan.nTrain), options.season);
  const acc = new MetricsAccumulator(horizon, scale);
  const point = new Float64Array(horizon);
  const p90 = new Float64Array(horizon);
  const t0 = performance.now();
  for (let start = 0; start < plan.origins.length; start += FORECAST_CHUNK_VIEWS) {
    const chunk = plan.origins.slice(start, start + FORECAST_CHUNK_VIEWS);
    const forecasts = await forecaster.forecast(
      chunk.map((o) => viewAt(series, o)),
      horizon,
    );
    if (forecasts.length !== chunk.length) {
      throw new EdgeqError('INVALID_MODEL', `${forecaster.name}: ${forecasts.length} forecasts for ${chunk.length} views`, { details: { method: forecaster.name } });
    }
    chunk.forEach((o, i) => {
      const f = forecasts[i]!;
      if (f.point.length !== horizon || f.p90.length !== horizon) {
        throw new EdgeqError('INVALID_MODEL', `${forecaster.name}: a forecast at origin ${o} has ${f.point.length} steps, expected ${horizon}`, { details: { method: forecaster.name, origin: o } });
      }
      for (let h = 0; h < horizon; h++) {
        const v = f.point[h] as number;
        if (!Number.isFinite(v)) throw new EdgeqError('INVALID_MODEL', `${forecaster.name}: non-finite forecast ${v} at origin ${o}, step ${h + 1}`, { details: { method: forecaster.name, origin: o } });
        // PROTOCOL.md §5: every forecast is clipped at 0, whatever the model did.
        point[h] = Math.max(0, v);
        p90[h] = Math.max(point[h] as number, f.p90[h] as number);
      }
      acc.add(y.subarray(o, o + horizon), point, p90);
    });
  }
  const forecastMs = performance.now() - t0;
  const { p90Coverage, ...metrics } = acc.result();
  return {
    method: forecaster.name,
    series: series.name,
    stride: options.stride,
    ...metrics,
    trainMs: report.trainMs,
    backend: report.backend,
    details: { ...report.details, rows: plan.rows, nTrain: plan.nTrain, scale: scale, p90Coverage, forecastMs },
  };
}
