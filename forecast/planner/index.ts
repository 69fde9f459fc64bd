/** The pre-scaling planner: the live planner, its accuracy watch, model choice and the plan arithmetic it shares with the CLI and the benchmark. */
export * from './types.ts';
export * from './plan-arithmetic.ts';
export { Planner, DRIFT_FACTOR, LIMITER_CEILING_MIN, RETRAIN_FAILURE_BACKOFF_STEPS, EXTRA_REGIONS_MAX, EXTRA_POINTS_MAX, MODE_LISTENERS_MAX, CLOSE_WAIT_MS, type PlannerReport } from './planner.ts';
export * from './planner-options.ts';
export { AccuracyWatch, accuracyWindowFor, ACCURACY_WINDOW_STEPS_MAX, ACCURACY_MIN_FRACTION, FALLBACK_MARGIN, PENDING_FORECASTS_MAX, type AccuracyVerdict, type AccuracyWatchOptions } from './accuracy-watch.ts';
export {
  candidatesFor,
  fitColdStart,
  LSTM_SEASONS_MIN,
  phaseFor,
  SELECTION_BASELINES,
  SELECTION_HORIZONS_MIN,
  SELECTION_SEASONS_MIN,
  selectionMinSteps,
  selectModel,
  type CandidateBuilder,
  type ColdStartMethod,
  type ModelFactory,
  type ModelPhase,
  type RetrainRequest,
  type Selected,
} from './model-choice.ts';
export { workerModelFactory, retrainInWorker, RETRAIN_GRACE_MS, type WorkerModelFactoryOptions } from './retrain-client.ts';
export { reviveBaseline, snapshotBaseline, type ModelSnapshot } from './model-snapshot.ts';
export { expandSummary, FORECAST_SUMMARY_SPAN_MS, parseForecastSummary, summarizeForMesh } from './mesh-summary.ts';
export { failoverDemand, type FailoverMeshView } from './failover-demand.ts';
