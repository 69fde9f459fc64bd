/** The public surface of edgeq's traffic forecasting: CSV input, metrics, baselines, backtest, selection, the LSTM. */
export { viewAt, type FitOptions, type FitReport, type Forecast, type Forecaster, type Series, type SeriesView } from './forecaster.ts';
export {
  CSV_HEADER,
  dailySeasonSteps,
  findGaps,
  lineOfRow,
  medianIntervalMs,
  parseSeriesCsv,
  parseTimestamp,
  readSeriesCsv,
  requireRows,
  type SeriesGap,
} from './csv.ts';
export { MetricsAccumulator, PEAK_TOLERANCE, peakOutcome, scoreForecasts, seasonalNaiveScale, smapeTerm, type ForecastMetrics, type PeakOutcome } from './metrics.ts';
export * from './baselines/index.ts';
export { backtest, FORECAST_CHUNK_VIEWS, planBacktest, scoreBacktest, TRAIN_FRACTION, type BacktestOptions, type BacktestPlan, type BacktestResult } from './backtest.ts';
export { selectBest, type Candidate, type Selection } from './select.ts';
export { LstmForecaster } from './lstm/index.ts';
