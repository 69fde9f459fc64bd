/**
 * The network: an LSTM over the recent window, its final state concatenated with the flat lag /
 * calendar / level features, one ReLU layer, and a linear output of Q x H values (quantile q of
 * target step h at q*H + h), in normalised units. The output layer also sees the flat features
 * directly ("wide and deep"), so the seasonal lags have a linear path to the forecast and the
 * LSTM only has to learn the corrections. Every initializer is seeded, so runs repeat.
 */
import type { Tf } from '../runtime/index.ts';
import type { LayersModel, Tensor } from '@tensorflow/tfjs';
import { denseFeatureCount, seqFeatureCount, type FeatureSpec } from './features.ts';

/** What fixes the network's architecture (saved in meta.json). */
export interface NetworkSpec {
  readonly units: number;
  readonly hiddenUnits: number;
  readonly quantiles: readonly number[];
}

/** Builds the (uncompiled) network with seeded initial weights. */
export function buildModel(tf: Tf, features: FeatureSpec, net: NetworkSpec, seed: number): LayersModel {
  const seqIn = tf.input({ shape: [features.windowSteps, seqFeatureCount], name: 'seq' });
  const denseIn = tf.input({ shape: [denseFeatureCount(features)], name: 'dense' });
  const state = tf.layers
    .lstm({
      units: net.units,
      name: 'lstm',
      kernelInitializer: tf.initializers.glorotUniform({ seed }),
      recurrentInitializer: tf.initializers.orthogonal({ gain: 1, seed: seed + 1 }),
    })
    .apply(seqIn) as ReturnType<typeof tf.input>;
  const joined = tf.layers.concatenate({ name: 'join' }).apply([state, denseIn]) as ReturnType<typeof tf.input>;
  const hidden = tf.layers
    .dense({ units: net.hiddenUnits, activation: 'relu', name: 'hidden', kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 2 }) })
    .apply(joined) as ReturnType<typeof tf.input>;
  const wide = tf.layers.concatenate({ name: 'wide' }).apply([hidden, joined]) as ReturnType<typeof tf.input>;
  const out = tf.layers
    .dense({
      units: net.quantiles.length * features.horizon,
      name: 'quantiles',
      kernelInitializer: tf.initializers.glorotUniform({ seed: seed + 3 }),
    })
    .apply(wide) as ReturnType<typeof tf.input>;
  return tf.model({ inputs: [seqIn, denseIn], outputs: out, name: 'edgeq_lstm' });
}

/**
 * The point path's peak term: the window maximum of the point quantile's path scored against the
 * window maximum of the targets with pinball loss at `quantile`, weighted by `weight` (0 = off).
 * A median path's maximum sits below the maximum of the noisy actuals it tracks, and a pre-scaler
 * provisions for the maximum of the path; this term teaches the path to carry the window's peak.
 * Both maxima commute with the (monotone, per-window affine after log1p) normalisation.
 */
export interface PeakTerm {
  readonly weight: number;
  readonly quantile: number;
}

/** Pinball loss of errors (target - prediction) at quantile(s) `tau` (a number, or a tensor that broadcasts). */
function pinball(tf: Tf, err: Tensor, tau: Tensor | number): Tensor {
  return tf.maximum(err.mul(tau), err.mul(tf.scalar(1).sub(tau)).neg());
}

/**
 * Mean pinball (quantile) loss of predictions [B, Q*H] against targets [B, H], plus the peak term
 * on the middle (point) quantile's path when its weight is above 0.
 */
export function pinballLoss(tf: Tf, quantiles: readonly number[], horizon: number, target: Tensor, predicted: Tensor, peak?: PeakTerm): Tensor {
  return tf.tidy(() => {
    const q = quantiles.length;
    const pred = predicted.reshape([-1, q, horizon]);
    const err = target.reshape([-1, 1, horizon]).sub(pred);
    const tau = tf.tensor3d(Float32Array.from(quantiles), [1, q, 1]);
    const base = pinball(tf, err, tau).mean();
    if (peak === undefined || peak.weight <= 0) return base;
    const pointPath = pred.slice([0, Math.floor(q / 2), 0], [-1, 1, horizon]).reshape([-1, horizon]);
    const peakErr = target.max(1).sub(pointPath.max(1));
    return base.add(pinball(tf, peakErr, peak.quantile).mean().mul(peak.weight));
  });
}
