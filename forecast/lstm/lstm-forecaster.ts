/**
 * The LSTM traffic forecaster: fits in a worker thread, forecasts P10/P50/P90 for many origins in
 * one tensor in the calling thread, and saves/loads itself as a folder. The point forecast is the
 * P50; `p90` is the planner's upper band. See features.ts for the inputs and PROTOCOL.md §4/§8.
 */
import type { LayersModel, Tensor } from '@tensorflow/tfjs';
import { createLogger, EdgeqError, type Logger } from '../../src/core/index.ts';
import type { FitOptions, FitReport, Forecast, Forecaster, SeriesView } from '../forecaster.ts';
import { loadTf, type Tf } from '../runtime/index.ts';
import { denseFeatureCount, historySteps, inverse, seqFeatureCount, writeInputs, zReader, type FeatureSpec, type NormStats } from './features.ts';
import { loadModelFolder, modelFormatVersion, modelKind, saveModelFolder, type ModelMeta } from './model-store.ts';
import { defaultLstmOptions, peakWeightMax, weeklyLagWindowsMin, type LstmOptions } from './options.ts';
import type { ModelArtifactsLite } from './train.ts';
import { splitWindows } from './windows.ts';
import { trainInWorker } from './worker-client.ts';

/** Origins run through the network per predict call: bounds one inference tensor. */
export const forecastBatchMax = 1024;

interface Fitted {
  readonly model: LayersModel;
  readonly artifacts: ModelArtifactsLite;
  readonly meta: ModelMeta;
}

let log: Logger | undefined;
const logger = (): Logger => (log ??= createLogger({ name: 'lstm', destination: process.stderr }));

/** Picks the feature spec for a series: resolves `weeklyLag: 'auto'` against the training length. */
export function resolveFeatureSpec(options: LstmOptions, season: number, horizon: number, trainLength: number): FeatureSpec {
  const base = {
    windowSteps: options.windowSteps,
    season,
    horizon,
    profileDays: options.profileDays,
    logTransform: options.logTransform,
    levelInputs: options.levelInputs,
  };
  if (options.weeklyLag !== 'auto') return { ...base, weeklyLag: options.weeklyLag };
  const withWeekly = { ...base, weeklyLag: true };
  const windowsLeft = trainLength - horizon - historySteps(withWeekly);
  return { ...base, weeklyLag: windowsLeft >= weeklyLagWindowsMin };
}

async function modelFromArtifacts(tf: Tf, artifacts: ModelArtifactsLite): Promise<LayersModel> {
  return tf.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: artifacts.modelTopology as object,
      weightSpecs: artifacts.weightSpecs as never,
      weightData: artifacts.weightData,
    }),
  );
}

/** LSTM forecaster with quantile (P10/P50/P90) outputs; see the module comment. */
export class LstmForecaster implements Forecaster {
  readonly name = 'lstm';
  readonly options: LstmOptions;
  private fitted: Fitted | undefined;

  constructor(options: Partial<LstmOptions> = {}) {
    this.options = { ...defaultLstmOptions, ...options };
    const { peakWeight, peakQuantile } = this.options;
    if (!(Number.isFinite(peakWeight) && peakWeight >= 0 && peakWeight <= peakWeightMax)) {
      throw new EdgeqError('INVALID_ARGUMENT', `peakWeight must be a number from 0 to ${peakWeightMax}, got ${String(peakWeight)}`, { details: { peakWeight } });
    }
    if (!(Number.isFinite(peakQuantile) && peakQuantile > 0 && peakQuantile < 1)) {
      throw new EdgeqError('INVALID_ARGUMENT', `peakQuantile must be a number between 0 and 1 (exclusive), got ${String(peakQuantile)}`, { details: { peakQuantile } });
    }
  }

  /** Steps of history a forecast needs: known after fit/load; before, the LSTM's input window. */
  get window(): number {
    return this.fitted?.meta.window ?? this.options.windowSteps;
  }

  /** The metadata of the fitted or loaded model (undefined before). */
  get meta(): ModelMeta | undefined {
    return this.fitted?.meta;
  }

  /** Trains on `train` (the training part) in a worker thread; keeps the best-validation weights. */
  async fit(train: SeriesView, options: FitOptions): Promise<FitReport> {
    const { season, horizon } = options;
    if (!Number.isInteger(season) || !Number.isInteger(horizon) || horizon < 1 || season < horizon) {
      // H <= m keeps the one-day lags of every target step in the past (PROTOCOL.md §4).
      throw new EdgeqError('INVALID_ARGUMENT', `LSTM needs integer 1 <= horizon <= season, got horizon ${horizon}, season ${season}`);
    }
    const values = Float64Array.from(train.values);
    if (values.some((v) => !Number.isFinite(v))) throw new EdgeqError('INVALID_DATA', 'training series has non-finite values');
    const features = resolveFeatureSpec(this.options, season, horizon, values.length);
    // Fail fast (before starting a worker) when the series is too short.
    splitWindows(features, values.length, this.options.validationFraction, 'training view');
    const network = { units: this.options.units, hiddenUnits: this.options.hiddenUnits, quantiles: [...this.options.quantiles] };
    const trainBudgetMs = options.budgetMs ?? this.options.trainBudgetMs;
    const seed = options.seed ?? this.options.seed;
    const bounds = {
      epochsMax: this.options.epochsMax,
      patienceEpochs: this.options.patienceEpochs,
      trainBudgetMs,
      windowsPerEpochMax: this.options.windowsPerEpochMax,
      batchSize: this.options.batchSize,
      learningRate: this.options.learningRate,
      validationFraction: this.options.validationFraction,
      peakWeight: this.options.peakWeight,
      peakQuantile: this.options.peakQuantile,
    };
    const t0 = Date.now();
    const result = await trainInWorker({
      seriesName: 'training view',
      values,
      timestamps: Float64Array.from(train.timestamps.subarray(0, values.length + horizon)),
      features,
      network,
      bounds,
      seed,
    });
    const { tf } = await loadTf();
    const meta: ModelMeta = {
      formatVersion: modelFormatVersion,
      kind: modelKind,
      window: historySteps(features),
      horizon,
      season,
      features,
      network,
      normalisation: { ...result.stats, transform: features.logTransform ? 'log1p' : 'identity' },
      quantiles: network.quantiles,
      backend: result.figures.backend,
      training: { ...result.figures, ...bounds, seed },
    };
    this.fitted?.model.dispose();
    this.fitted = { model: await modelFromArtifacts(tf, result.artifacts), artifacts: result.artifacts, meta };
    const trainMs = Date.now() - t0;
    const { valLossHistory, ...figures } = result.figures;
    logger().info({ ...figures, trainMs, epochsMax: bounds.epochsMax, trainBudgetMs }, 'LSTM trained');
    return {
      trainMs,
      backend: result.figures.backend,
      details: { ...figures, workerTrainMs: figures.trainMs, epochsMax: bounds.epochsMax, trainBudgetMs, seed, weeklyLag: features.weeklyLag, window: meta.window, valLossHistory },
    };
  }

  /** One P10/P50/P90 forecast per view, all views batched; each view must end at its origin. */
  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    const fitted = this.fitted;
    if (fitted === undefined) throw new EdgeqError('INVALID_MODEL', 'LSTM forecaster has no model: call fit() or load() first');
    const { meta, model } = fitted;
    if (!Number.isInteger(horizon) || horizon < 1 || horizon > meta.horizon) {
      throw new EdgeqError('INVALID_ARGUMENT', `LSTM was trained for horizon ${meta.horizon}, asked for ${horizon}`);
    }
    for (const v of views) {
      if (v.values.length !== v.origin) throw new EdgeqError('INVALID_DATA', `view at origin ${v.origin} has ${v.values.length} values (must end at its origin)`);
      if (v.origin < meta.window) {
        throw new EdgeqError('INVALID_DATA', `LSTM needs ${meta.window} steps of history before an origin, view at origin ${v.origin} has ${v.origin}`);
      }
    }
    const { tf } = await loadTf();
    const out: Forecast[] = [];
    for (let start = 0; start < views.length; start += forecastBatchMax) {
      out.push(...this.forecastBatch(tf, views.slice(start, start + forecastBatchMax), horizon));
    }
    return out;
  }

  private forecastBatch(tf: Tf, views: readonly SeriesView[], horizon: number): Forecast[] {
    const { meta, model } = this.fitted as Fitted;
    const spec = meta.features;
    const stats: NormStats = meta.normalisation;
    const n = views.length;
    const seq = new Float32Array(n * spec.windowSteps * seqFeatureCount);
    const dense = new Float32Array(n * denseFeatureCount(spec));
    const levels = views.map((v, row) => writeInputs(spec, zReader(spec, stats, v.values), v.timestamps, v.origin, seq, dense, row));
    const raw = tf.tidy(() => {
      const x = [tf.tensor3d(seq, [n, spec.windowSteps, seqFeatureCount]), tf.tensor2d(dense, [n, denseFeatureCount(spec)])];
      return (model.predict(x) as Tensor).dataSync() as Float32Array;
    });
    const hz = spec.horizon;
    const qn = meta.quantiles.length;
    return views.map((v, row) => {
      const p10 = new Float64Array(horizon);
      const point = new Float64Array(horizon);
      const p90 = new Float64Array(horizon);
      for (let h = 0; h < horizon; h++) {
        const level = levels[row] ?? 0;
        const q = [0, 1, 2].map((k) => inverse(spec, stats, (raw[row * qn * hz + k * hz + h] ?? NaN) + level)).sort((a, b) => a - b);
        if (!q.every(Number.isFinite)) {
          throw new EdgeqError('INVALID_DATA', `LSTM produced a non-finite forecast at origin ${v.origin} (non-finite input values?)`);
        }
        p10[h] = q[0] ?? 0;
        point[h] = q[1] ?? 0;
        p90[h] = q[2] ?? 0;
      }
      return { point, p90, p10 };
    });
  }

  /** Saves the model folder (model.json, weights.bin, meta.json). */
  async save(dir: string): Promise<void> {
    if (this.fitted === undefined) throw new EdgeqError('INVALID_MODEL', 'LSTM forecaster has no model to save: call fit() first');
    await saveModelFolder(dir, this.fitted.artifacts, this.fitted.meta);
  }

  /** Loads a model folder; any defect is an INVALID_MODEL EdgeqError. */
  static async load(dir: string, options: Partial<LstmOptions> = {}): Promise<LstmForecaster> {
    const { artifacts, meta } = await loadModelFolder(dir);
    const { tf } = await loadTf();
    let model: LayersModel;
    try {
      model = await modelFromArtifacts(tf, artifacts);
    } catch (err) {
      throw new EdgeqError('INVALID_MODEL', `invalid LSTM model folder ${dir}: tfjs cannot rebuild the network (${(err as Error).message})`, { cause: err });
    }
    const spec = meta.features;
    const inputs = model.inputs.map((i) => i.shape.slice(1).join('x')).join(',');
    const expected = `${spec.windowSteps}x${seqFeatureCount},${denseFeatureCount(spec)}`;
    const outputs = model.outputs[0]?.shape[1];
    if (inputs !== expected || outputs !== meta.quantiles.length * meta.horizon || meta.window !== historySteps(spec)) {
      model.dispose();
      throw new EdgeqError('INVALID_MODEL', `invalid LSTM model folder ${dir}: network shapes (${inputs} -> ${outputs}) do not match meta.json (${expected} -> ${meta.quantiles.length * meta.horizon})`);
    }
    const forecaster = new LstmForecaster({ ...options, windowSteps: spec.windowSteps, profileDays: spec.profileDays, logTransform: spec.logTransform, levelInputs: spec.levelInputs, units: meta.network.units, hiddenUnits: meta.network.hiddenUnits });
    forecaster.fitted = { model, artifacts, meta };
    return forecaster;
  }
}
