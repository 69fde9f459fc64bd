/**
 * The LSTM forecaster's options and their defaults. Every loop and budget of training is bounded
 * by one of these named values (units last). Defaults were tuned on nyc_taxi, Twitter_volume_AAPL
 * and elb_request_count_8c0756 only (PROTOCOL.md: the other traces check generalisation).
 */

/** Hyperparameters and training bounds of `LstmForecaster`. */
export interface LstmOptions {
  /** Recent steps the LSTM reads (y[o-W .. o-1]); seasonal lags cover the longer memory. */
  readonly windowSteps: number;
  /** LSTM units. */
  readonly units: number;
  /** Width of the dense layer between the LSTM state + lag features and the quantile outputs. */
  readonly hiddenUnits: number;
  /** Daily lags (k = 1..profileDays) whose mean at each target step is fed as a seasonal profile. */
  readonly profileDays: number;
  /** Feed y one week earlier at each target step: 'auto' = when the training part leaves enough windows. */
  readonly weeklyLag: boolean | 'auto';
  /** Model log1p(y) instead of y (then z-score): tames bursty series; quantiles survive the transform. */
  readonly logTransform: boolean;
  /** Inputs and targets relative to the window's median (local level), so the net models deviations. */
  readonly levelInputs: boolean;
  /** Quantiles predicted (pinball loss); the middle one is the point forecast, the last one `p90`. */
  readonly quantiles: readonly [number, number, number];
  /**
   * Weight of the point path's peak term in the loss (model.ts `PeakTerm`; 0 = plain pinball). Above 0
   * the point path is no longer a pure median; where its raised step passes the P90, the per-step
   * sort of the quantiles (P10 <= point <= P90) swaps the two.
   */
  readonly peakWeight: number;
  /** Quantile the point path's window maximum is trained to, against the actual window maximum. */
  readonly peakQuantile: number;
  /** Hard cap on training epochs (the reference runs are bounded by it, not by the clock). */
  readonly epochsMax: number;
  /** Epochs without a better validation loss before stopping early. */
  readonly patienceEpochs: number;
  /** Wall-clock training budget (ms) when `fit` gets no `budgetMs`. */
  readonly trainBudgetMs: number;
  /** Training windows drawn per epoch (a fresh seeded sample each epoch) to bound epoch time. */
  readonly windowsPerEpochMax: number;
  /** Mini-batch size. */
  readonly batchSize: number;
  /** Adam learning rate. */
  readonly learningRate: number;
  /** Fraction of training windows (chronologically last) held out for validation / early stopping. */
  readonly validationFraction: number;
  /** Seed used when `fit` gets none. */
  readonly seed: number;
}

/** Default options (see the tuning notes in bench/lstm-tune.ts). */
export const defaultLstmOptions: LstmOptions = {
  windowSteps: 24,
  units: 32,
  hiddenUnits: 64,
  profileDays: 3,
  weeklyLag: 'auto',
  logTransform: true,
  levelInputs: true,
  quantiles: [0.1, 0.5, 0.9],
  peakWeight: 0,
  peakQuantile: 0.5,
  epochsMax: 30,
  patienceEpochs: 6,
  trainBudgetMs: 240_000,
  windowsPerEpochMax: 4096,
  batchSize: 128,
  learningRate: 0.003,
  validationFraction: 0.1,
  seed: 42,
};

/** Largest accepted `peakWeight`: beyond it the peak term drowns the per-step loss entirely. */
export const peakWeightMax = 100;

/** Fewest training windows (after the validation split) worth training on at all. */
export const trainWindowsMin = 64;

/** Fewest training windows that must remain for the weekly lag to be used under `weeklyLag: 'auto'`. */
export const weeklyLagWindowsMin = 2000;
