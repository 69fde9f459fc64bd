/** The LSTM traffic forecaster (PROTOCOL.md §8) and its options. */
export { LstmForecaster, resolveFeatureSpec, forecastBatchMax } from './lstm-forecaster.ts';
export { defaultLstmOptions, type LstmOptions } from './options.ts';
export { modelFormatVersion, type ModelMeta } from './model-store.ts';
export type { FeatureSpec, NormStats } from './features.ts';
export type { TrainingFigures } from './train.ts';
