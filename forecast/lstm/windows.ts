/**
 * Training windows (PROTOCOL.md §8): every origin t with a full input history and t + H <= n_train;
 * the chronologically last `validationFraction` of them is the validation set. Also the seeded
 * PRNG used for per-epoch sub-sampling, so training repeats exactly for a given seed.
 */
import { EdgeqError } from '../../src/core/index.ts';
import { denseFeatureCount, historySteps, seqFeatureCount, writeInputs, type FeatureSpec } from './features.ts';
import { trainWindowsMin } from './options.ts';

/** Origins of the training and validation windows. */
export interface WindowSplit {
  readonly train: Int32Array;
  readonly validation: Int32Array;
}

/** Inputs and targets for a set of origins, as flat float32 arrays ready for tensors. */
export interface SampleArrays {
  readonly count: number;
  readonly seq: Float32Array;
  readonly dense: Float32Array;
  readonly target: Float32Array;
}

/** Splits the training part's windows chronologically; INVALID_DATA when there are too few. */
export function splitWindows(spec: FeatureSpec, trainLength: number, validationFraction: number, seriesName: string): WindowSplit {
  const first = historySteps(spec);
  const last = trainLength - spec.horizon; // t + H <= n_train
  const total = last - first + 1;
  const validationCount = Math.max(1, Math.floor(total * validationFraction));
  if (total - validationCount < trainWindowsMin) {
    throw new EdgeqError(
      'INVALID_DATA',
      `series ${seriesName} is too short for the LSTM: ${trainLength} training steps, but a window needs ` +
        `${first} steps of history plus ${spec.horizon} target steps, and training needs at least ` +
        `${trainWindowsMin + validationCount} windows (got ${Math.max(total, 0)})`,
      { details: { trainLength, historySteps: first, horizon: spec.horizon, windows: Math.max(total, 0) } },
    );
  }
  const all = Int32Array.from({ length: total }, (_, i) => first + i);
  return { train: all.subarray(0, total - validationCount), validation: all.subarray(total - validationCount) };
}

/** Builds the inputs and targets of the given origins; `zAll` holds z(y) of the whole training part. */
export function buildSamples(spec: FeatureSpec, zAll: Float32Array, timestamps: Float64Array, origins: Int32Array): SampleArrays {
  const count = origins.length;
  const seq = new Float32Array(count * spec.windowSteps * seqFeatureCount);
  const dense = new Float32Array(count * denseFeatureCount(spec));
  const target = new Float32Array(count * spec.horizon);
  origins.forEach((origin, row) => {
    // Inputs read strictly below the origin; only the targets read y[origin .. origin+H-1].
    const z = (i: number): number => {
      if (i < 0 || i >= origin) throw new RangeError(`input index ${i} not below origin ${origin}`);
      return zAll[i] ?? 0;
    };
    const level = writeInputs(spec, z, timestamps, origin, seq, dense, row);
    for (let h = 0; h < spec.horizon; h++) target[row * spec.horizon + h] = (zAll[origin + h] ?? 0) - level;
  });
  return { count, seq, dense, target };
}

/** A seeded shuffle of `origins`, cut to at most `countMax` (one epoch's sample). */
export function epochSample(origins: Int32Array, countMax: number, random: () => number): Int32Array {
  const out = Int32Array.from(origins);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const tmp = out[i] ?? 0;
    out[i] = out[j] ?? 0;
    out[j] = tmp;
  }
  return out.subarray(0, Math.min(countMax, out.length));
}
