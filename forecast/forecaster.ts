/**
 * The one interface every forecaster of edgeq implements: the baselines (seasonal naive, last
 * value, Holt-Winters) and the LSTM. The backtester and the CLI only ever see this interface.
 *
 * Peeking at the future is impossible by construction (PROTOCOL.md §4): a forecast call gets a
 * `SeriesView` whose `values` is a view truncated to y[0 .. origin-1] (a `subarray`, no copy).
 * `timestamps` covers the whole series, past and future, because the calendar is known in advance.
 * Calls take many views at once so that a model can batch them (the LSTM runs one tensor for
 * hundreds of origins); each view is still truncated at its own origin.
 */

/** A whole series as read from a CSV: one row per step, no resampling. */
export interface Series {
  /** Where it came from (a file path or a test name): used in error messages and reports. */
  readonly name: string;
  /** Epoch milliseconds of each row, read as UTC (the traces carry no time zone). */
  readonly timestamps: Float64Array;
  readonly values: Float64Array;
}

/** What a forecaster may see at one origin. */
export interface SeriesView {
  /** Index of the first step to forecast. */
  readonly origin: number;
  /** y[0 .. origin-1]: `values.length === origin`. */
  readonly values: Float64Array;
  /** Timestamps of every row (past and future: the calendar is known in advance). */
  readonly timestamps: Float64Array;
}

/** One forecast of `horizon` steps: y[o], …, y[o+H-1]. Clipped at 0 by the forecaster. */
export interface Forecast {
  /** The point forecast (the median for quantile models). */
  readonly point: Float64Array;
  /** The upper band the planner provisions for (P90); the point forecast when a model has none. */
  readonly p90: Float64Array;
  /** The lower band (P10), when the model has one. */
  readonly p10?: Float64Array;
}

/** Options every fit gets. */
export interface FitOptions {
  /** Season length in steps (one day): 288 for 5-minute series, 48 for 30-minute ones. */
  readonly season: number;
  /** Steps forecast at each origin (12 under the protocol). */
  readonly horizon: number;
  /** Wall-clock budget for training, in ms (models that train respect it). */
  readonly budgetMs?: number;
  /** Seed for anything random, so runs repeat. */
  readonly seed?: number;
}

/** What a fit reports: shown in the backtest table. */
export interface FitReport {
  readonly trainMs: number;
  /** The compute backend (`tensorflow`, `wasm`, `cpu`) or `js` for the closed-form baselines. */
  readonly backend: string;
  /** Anything else worth recording: epochs run, best validation loss, chosen parameters… */
  readonly details?: Record<string, unknown>;
}

export interface Forecaster {
  /** Stable name used in reports and on the CLI: `seasonal_naive`, `last_value`, `holt_winters_add`, `lstm`. */
  readonly name: string;
  /** Fits on the training part only (the caller passes y[0 .. n_train-1] as a view). */
  fit(train: SeriesView, options: FitOptions): Promise<FitReport>;
  /** One forecast per view, in order. Each view ends just before its origin. */
  forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]>;
}

/** A view of `series` truncated just before `origin` (no copy: a subarray). */
export function viewAt(series: Series, origin: number): SeriesView {
  return { origin, values: series.values.subarray(0, origin), timestamps: series.timestamps };
}
