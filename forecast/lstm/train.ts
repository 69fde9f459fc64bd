/**
 * The training loop (runs inside the training worker, never on a broker/gateway thread):
 * normalise on the training part, build every window once, then per epoch draw a seeded sample of
 * at most `windowsPerEpochMax` training windows, take Adam steps on the pinball loss, score the
 * validation windows and keep the weights of the best epoch. Bounded by `epochsMax`, by
 * `patienceEpochs` without improvement and by the wall-clock `trainBudgetMs` (checked per batch).
 */
import type { Tensor } from '@tensorflow/tfjs';
import { loadTf, type Tf } from '../runtime/index.ts';
import { normStats, forward, type FeatureSpec, type NormStats, seqFeatureCount, denseFeatureCount } from './features.ts';
import { buildModel, pinballLoss, type NetworkSpec } from './model.ts';
import type { LstmOptions } from './options.ts';
import { seededRandom } from '../../src/core/index.ts';
import { buildSamples, epochSample, splitWindows, type SampleArrays } from './windows.ts';

/** Training bounds and optimiser settings: the options of that name (documented there). */
export type TrainBounds = Pick<LstmOptions, 'epochsMax' | 'patienceEpochs' | 'trainBudgetMs' | 'windowsPerEpochMax' | 'batchSize' | 'learningRate' | 'validationFraction' | 'peakWeight' | 'peakQuantile'>;

/** What the worker receives. */
export interface TrainRequest {
  readonly seriesName: string;
  readonly values: Float64Array;
  readonly timestamps: Float64Array;
  readonly features: FeatureSpec;
  readonly network: NetworkSpec;
  readonly bounds: TrainBounds;
  readonly seed: number;
}

/** Serialised network: the tfjs `ModelArtifacts` subset needed to rebuild it. */
export interface ModelArtifactsLite {
  readonly modelTopology: unknown;
  readonly weightSpecs: readonly { name: string; shape: number[]; dtype: string }[];
  readonly weightData: ArrayBuffer;
}

/** Why training stopped. */
export type StopReason = 'epochsMax' | 'patience' | 'budget';

/** Training figures reported by `fit` and stored in meta.json. */
export interface TrainingFigures {
  readonly epochs: number;
  readonly bestEpoch: number;
  readonly bestValLoss: number;
  readonly valLossHistory: number[];
  readonly trainMs: number;
  readonly stopReason: StopReason;
  readonly trainWindows: number;
  readonly validationWindows: number;
  readonly backend: string;
}

/** What the worker sends back. */
export interface TrainResult {
  readonly artifacts: ModelArtifactsLite;
  readonly stats: NormStats;
  readonly figures: TrainingFigures;
}

/** Validation windows scored per predict call: bounds one inference tensor. */
const validationBatchMax = 1024;

function toTensors(tf: Tf, spec: FeatureSpec, s: SampleArrays): [Tensor, Tensor, Tensor] {
  return [
    tf.tensor3d(s.seq, [s.count, spec.windowSteps, seqFeatureCount]),
    tf.tensor2d(s.dense, [s.count, denseFeatureCount(spec)]),
    tf.tensor2d(s.target, [s.count, spec.horizon]),
  ];
}

/** Serialises a model to artifacts (weights as one ArrayBuffer). */
export async function captureArtifacts(tf: Tf, model: { save: (h: never) => Promise<unknown> }): Promise<ModelArtifactsLite> {
  let captured: ModelArtifactsLite | undefined;
  const handler = tf.io.withSaveHandler(async (a) => {
    const data = a.weightData;
    const buffer = data === undefined ? new ArrayBuffer(0) : Array.isArray(data) ? tf.io.concatenateArrayBuffers(data) : data;
    captured = { modelTopology: a.modelTopology, weightSpecs: (a.weightSpecs ?? []) as ModelArtifactsLite['weightSpecs'], weightData: buffer };
    return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
  });
  await model.save(handler as never);
  if (captured === undefined) throw new Error('model.save produced no artifacts');
  return captured;
}

/** Trains one model; the result carries the best-epoch weights. */
export async function train(req: TrainRequest): Promise<TrainResult> {
  const t0 = Date.now();
  const { tf, backend } = await loadTf();
  const { features: spec, bounds } = req;
  const stats = normStats(spec, req.values);
  const zAll = Float32Array.from(req.values, (y) => (forward(spec, y) - stats.mean) / stats.std);
  const split = splitWindows(spec, req.values.length, bounds.validationFraction, req.seriesName);
  const [trSeq, trDense, trTarget] = toTensors(tf, spec, buildSamples(spec, zAll, req.timestamps, split.train));
  const [vaSeq, vaDense, vaTarget] = toTensors(tf, spec, buildSamples(spec, zAll, req.timestamps, split.validation));
  const model = buildModel(tf, spec, req.network, req.seed);
  const optimizer = tf.train.adam(bounds.learningRate);
  const random = seededRandom(req.seed);
  const rowIndex = Int32Array.from({ length: split.train.length }, (_, i) => i);
  const peak = { weight: bounds.peakWeight, quantile: bounds.peakQuantile };
  const lossOf = (x: Tensor[], y: Tensor, training: boolean): Tensor =>
    pinballLoss(tf, req.network.quantiles, spec.horizon, y, model.apply(x, { training }) as Tensor, peak);

  let best = { loss: Infinity, epoch: 0, weights: [] as Tensor[] };
  const history: number[] = [];
  let stopReason: StopReason = 'epochsMax';
  let epoch = 0;
  const overBudget = (): boolean => Date.now() - t0 > bounds.trainBudgetMs;
  while (epoch < bounds.epochsMax) {
    const rows = epochSample(rowIndex, bounds.windowsPerEpochMax, random);
    for (let b = 0; b < rows.length && !overBudget(); b += bounds.batchSize) {
      tf.tidy(() => {
        const idx = tf.tensor1d(rows.subarray(b, b + bounds.batchSize), 'int32');
        const x = [tf.gather(trSeq, idx), tf.gather(trDense, idx)];
        const y = tf.gather(trTarget, idx);
        optimizer.minimize(() => lossOf(x, y, true) as never);
      });
    }
    epoch++;
    let valSum = 0;
    for (let b = 0; b < split.validation.length; b += validationBatchMax) {
      const size = Math.min(validationBatchMax, split.validation.length - b);
      const l = tf.tidy(() =>
        lossOf([vaSeq.slice(b, size), vaDense.slice(b, size)], vaTarget.slice(b, size), false).mul(size),
      );
      valSum += (await l.data())[0] ?? NaN;
      l.dispose();
    }
    const valLoss = valSum / split.validation.length;
    history.push(valLoss);
    if (valLoss < best.loss) {
      best.weights.forEach((w) => w.dispose());
      best = { loss: valLoss, epoch, weights: model.getWeights().map((w) => w.clone()) };
    }
    if (overBudget()) {
      stopReason = 'budget';
      break;
    }
    if (epoch - best.epoch >= bounds.patienceEpochs) {
      stopReason = 'patience';
      break;
    }
  }
  if (best.weights.length > 0) model.setWeights(best.weights);
  const artifacts = await captureArtifacts(tf, model as never);
  best.weights.forEach((w) => w.dispose());
  [trSeq, trDense, trTarget, vaSeq, vaDense, vaTarget].forEach((t) => t.dispose());
  optimizer.dispose();
  model.dispose();
  return {
    artifacts,
    stats,
    figures: {
      epochs: epoch,
      bestEpoch: best.epoch,
      bestValLoss: best.loss,
      valLossHistory: history,
      trainMs: Date.now() - t0,
      stopReason,
      trainWindows: split.train.length,
      validationWindows: split.validation.length,
      backend,
    },
  };
}
