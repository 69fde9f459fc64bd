/**
 * Model inputs for one origin o, built from y[0 .. o-1] and the calendar only (PROTOCOL.md §4):
 *
 * - a sequence of the last W steps, each with z(y[t]), z(y[t-m]) (the same time one day earlier,
 *   so the LSTM sees how today deviates from yesterday) and time-of-day / day-of-week as sin/cos;
 * - a flat vector about the H target steps: z(y[o+h-1-m]) (one day earlier, in the past because
 *   H <= m), the mean over k = 1..profileDays of z(y[o+h-1-k*m]) (a less noisy daily profile),
 *   optionally z(y[o+h-1-7m]) (one week earlier), the calendar of the first target step, and the
 *   recent level (last value, mean of the last 6 steps, mean of the window).
 *
 * Normalisation: z = (log1p(max(y, 0)) - mean) / std, mean and std of log1p(y) over the training
 * part only (PROTOCOL §8's z-score, taken on log1p values). Why log1p: the Twitter and ELB series
 * are bursty (AAPL: median 47, max 13,479), and in log space a burst does not dominate the loss.
 * Quantiles commute with a monotone transform, so the P10/P50/P90 learnt in log space are the
 * P10/P50/P90 in counts after expm1. `logTransform: false` gives the plain z-score.
 *
 * The same functions build training samples and forecast inputs, so train and serve cannot drift,
 * and they only ever index `values` below the origin: a view truncated at o is all they need.
 */

/** Everything that fixes the shape and meaning of the inputs (saved in meta.json). */
export interface FeatureSpec {
  readonly windowSteps: number;
  readonly season: number;
  readonly horizon: number;
  readonly profileDays: number;
  readonly weeklyLag: boolean;
  readonly logTransform: boolean;
  /** Value features and targets relative to the window's median z (a local level), see writeInputs. */
  readonly levelInputs: boolean;
}

/** Normalisation statistics, from the training part only: z = (g(y) - mean) / std, g = log1p or identity. */
export interface NormStats {
  readonly mean: number;
  readonly std: number;
}

/** Features per step of the input sequence. */
export const seqFeatureCount = 6;
/** Steps averaged for the short recent level feature. */
const recentLevelSteps = 6;
const dayMs = 86_400_000;
const weekDays = 7;

/** Width of the flat (non-sequence) input. */
export function denseFeatureCount(spec: FeatureSpec): number {
  return spec.horizon * (2 + (spec.weeklyLag ? 1 : 0)) + 4 + 3;
}

/** Smallest origin with every input defined: the history a forecast needs. */
export function historySteps(spec: FeatureSpec): number {
  const m = spec.season;
  return Math.max(spec.windowSteps + m, spec.profileDays * m, spec.weeklyLag ? weekDays * m : 0);
}

/** The transform applied before the z-score. */
export function forward(spec: Pick<FeatureSpec, 'logTransform'>, y: number): number {
  const v = y > 0 ? y : 0;
  return spec.logTransform ? Math.log1p(v) : v;
}

/** Inverse of `forward` followed by the clip at 0 of PROTOCOL §5. */
export function inverse(spec: Pick<FeatureSpec, 'logTransform'>, stats: NormStats, z: number): number {
  const g = z * stats.std + stats.mean;
  const y = spec.logTransform ? Math.expm1(g) : g;
  return y > 0 ? y : 0;
}

/** Mean and standard deviation of g(y) over the training values. */
export function normStats(spec: Pick<FeatureSpec, 'logTransform'>, values: Float64Array): NormStats {
  let sum = 0;
  for (const y of values) sum += forward(spec, y);
  const mean = sum / values.length;
  let sq = 0;
  for (const y of values) sq += (forward(spec, y) - mean) ** 2;
  const std = Math.sqrt(sq / values.length);
  // A constant training part has no spread: any positive std keeps z finite.
  return { mean, std: std > 1e-9 ? std : 1 };
}

/** Timestamp of row i; extrapolated from the last interval when the calendar ends earlier. */
function timestampAt(timestamps: Float64Array, i: number): number {
  const n = timestamps.length;
  if (i < n) return timestamps[i] ?? 0;
  const last = timestamps[n - 1] ?? 0;
  const step = n >= 2 ? last - (timestamps[n - 2] ?? 0) : 0;
  return last + (i - n + 1) * step;
}

/** Writes sin/cos of time of day and day of week (UTC) of `ms` at out[at .. at+3]. */
function writeCalendar(ms: number, out: Float32Array, at: number): void {
  const day = Math.floor(ms / dayMs);
  const tod = (ms - day * dayMs) / dayMs;
  const dow = (((day + 4) % weekDays) + weekDays) % weekDays / weekDays; // 1970-01-01 was a Thursday
  out[at] = Math.sin(2 * Math.PI * tod);
  out[at + 1] = Math.cos(2 * Math.PI * tod);
  out[at + 2] = Math.sin(2 * Math.PI * dow);
  out[at + 3] = Math.cos(2 * Math.PI * dow);
}

/** The median of z over the window: the local level that `levelInputs` subtracts (robust to bursts). */
function windowLevel(z: (i: number) => number, origin: number, w: number): number {
  const zs = Array.from({ length: w }, (_, k) => z(origin - w + k)).sort((a, b) => a - b);
  const mid = Math.floor(w / 2);
  return w % 2 === 1 ? (zs[mid] ?? 0) : ((zs[mid - 1] ?? 0) + (zs[mid] ?? 0)) / 2;
}

/**
 * Writes the inputs for origin `origin` into sample `row` of `seq` ([N, W, 6]) and `dense`
 * ([N, denseFeatureCount]). `z(i)` returns the normalised y[i] and is only called with i < origin.
 * Returns the level the targets are relative to: with `levelInputs` the window's median z
 * (every value feature is then relative to it, the level itself is the last dense feature, and
 * the network predicts deviations from it), else 0.
 */
export function writeInputs(
  spec: FeatureSpec,
  z: (i: number) => number,
  timestamps: Float64Array,
  origin: number,
  seq: Float32Array,
  dense: Float32Array,
  row: number,
): number {
  const { windowSteps: w, season: m, horizon: hz } = spec;
  const level = spec.levelInputs ? windowLevel(z, origin, w) : 0;
  const zl = (i: number): number => z(i) - level;
  let at = row * w * seqFeatureCount;
  let windowSum = 0;
  for (let t = origin - w; t < origin; t++) {
    const zt = zl(t);
    windowSum += zt;
    seq[at] = zt;
    seq[at + 1] = zl(t - m);
    writeCalendar(timestampAt(timestamps, t), seq, at + 2);
    at += seqFeatureCount;
  }
  let d = row * denseFeatureCount(spec);
  for (let h = 0; h < hz; h++) {
    const target = origin + h;
    dense[d++] = zl(target - m);
    let profile = 0;
    for (let k = 1; k <= spec.profileDays; k++) profile += zl(target - k * m);
    dense[d++] = profile / spec.profileDays;
    if (spec.weeklyLag) dense[d++] = zl(target - weekDays * m);
  }
  writeCalendar(timestampAt(timestamps, origin), dense, d);
  d += 4;
  let recent = 0;
  for (let t = origin - recentLevelSteps; t < origin; t++) recent += zl(t);
  dense[d++] = zl(origin - 1);
  dense[d++] = recent / recentLevelSteps;
  dense[d] = spec.levelInputs ? level : windowSum / w;
  return level;
}

/** A z(i) over `values` with the given stats: the only door through which features read y. */
export function zReader(spec: FeatureSpec, stats: NormStats, values: Float64Array): (i: number) => number {
  return (i) => {
    if (i < 0 || i >= values.length) {
      // Unreachable when origin >= historySteps(spec) and values is truncated at the origin.
      throw new RangeError(`feature index ${i} outside the visible past [0, ${values.length})`);
    }
    return (forward(spec, values[i] ?? 0) - stats.mean) / stats.std;
  };
}
