/**
 * `holt_winters_add` (PROTOCOL.md §7): additive Holt-Winters with level, additive trend and an
 * additive daily season of m steps.
 *
 * - Initial state, from the first days of the data: level = mean of day 1, trend = (mean of day 2
 *   − mean of day 1) / m, seasonal index j = mean over the first min(7, days) days of the value at
 *   position j minus that day's mean. The recursions then start at t = m (day 1 is spent on the
 *   level), and the seasonal index of step t is s[t mod m].
 * - α, β, γ ∈ (0, 1) minimise the one-step-ahead SSE over t ∈ [m, n_train): the best of a 4×3×3
 *   grid, then Nelder-Mead on logit-scaled parameters.
 * - At origin o the recursions run over y[0 .. o−1] with those parameters fixed, and
 *   ŷ_o[h] = l + h·b + s[(o+h−1) mod m], clipped at 0.
 */
import type { FitOptions, FitReport, Forecast, Forecaster, SeriesView } from '../forecaster.ts';
import { nelderMead } from './nelder-mead.ts';
import { applyBands, firstResidualOrigin, ResidualBand, type BandOffsets } from './residual-band.ts';
import { checkFitOptions, checkView, notFitted, requirePositiveInteger } from './validate.ts';

/** Days averaged for the initial seasonal indices (at most). */
export const HW_INIT_DAYS_MAX = 7;
/** The starting grid (4×3×3); Nelder-Mead refines the best point of it. */
export const HW_GRID = {
  alpha: [0.05, 0.2, 0.5, 0.8],
  beta: [0.001, 0.01, 0.1],
  gamma: [0.05, 0.2, 0.5],
} as const;
/** Nelder-Mead iteration cap for the smoothing parameters. */
export const HW_NELDER_MEAD_ITERATIONS_MAX = 200;
/** Logit-scale bound: keeps α, β, γ inside (4.5e-5, 1 − 4.5e-5), strictly in (0, 1). */
export const HW_LOGIT_BOUND = 10;

/** The three smoothing parameters. */
export interface HoltWintersParams {
  readonly alpha: number;
  readonly beta: number;
  readonly gamma: number;
}

/** The filter's state after consuming y[0 .. t−1]. */
export interface HoltWintersState {
  level: number;
  trend: number;
  /** s[j] is the seasonal index of every step t with t mod m = j. */
  readonly seasonal: Float64Array;
  /** Values consumed so far. */
  t: number;
  /** Days the initial seasonal indices averaged: the state depends on y[0 .. initDays·m−1] through them. */
  readonly initDays: number;
}

const logit = (p: number): number => Math.log(p / (1 - p));
const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** Days the initial state averages for a series of `length` values (needs at least 2 days). */
export function initDaysFor(length: number, season: number): number {
  return Math.min(HW_INIT_DAYS_MAX, Math.floor(length / season));
}

/** The initial state from the first days of `values` (at least 2·m of them); it has consumed day 1. */
export function initialState(values: ArrayLike<number>, season: number): HoltWintersState {
  const m = season;
  const days = initDaysFor(values.length, m);
  const dayMean = (d: number): number => {
    let s = 0;
    for (let j = 0; j < m; j++) s += values[d * m + j] as number;
    return s / m;
  };
  const means = Array.from({ length: days }, (_, d) => dayMean(d));
  const seasonal = new Float64Array(m);
  for (let d = 0; d < days; d++) for (let j = 0; j < m; j++) seasonal[j] = (seasonal[j] as number) + ((values[d * m + j] as number) - (means[d] as number));
  for (let j = 0; j < m; j++) seasonal[j] = (seasonal[j] as number) / days;
  const first = means[0] as number;
  return { level: first, trend: ((means[1] as number) - first) / m, seasonal, t: m, initDays: days };
}

/** Consumes y[state.t .. end−1]; returns the sum of squared one-step errors over them. */
export function runFilter(state: HoltWintersState, values: ArrayLike<number>, end: number, p: HoltWintersParams, season: number): number {
  const { alpha, beta, gamma } = p;
  const s = state.seasonal;
  let { level, trend } = state;
  let sse = 0;
  for (let t = state.t; t < end; t++) {
    const y = values[t] as number;
    const j = t % season;
    const sj = s[j] as number;
    const e = y - (level + trend + sj);
    sse += e * e;
    const newLevel = alpha * (y - sj) + (1 - alpha) * (level + trend);
    trend = beta * (newLevel - level) + (1 - beta) * trend;
    level = newLevel;
    s[j] = gamma * (y - newLevel) + (1 - gamma) * sj;
  }
  state.level = level;
  state.trend = trend;
  state.t = Math.max(state.t, end);
  return sse;
}

/** Writes ŷ[h] = max(0, l + h·b + s[(o+h−1) mod m]) for h = 1..out.length, o = state.t. */
export function holtWintersPoint(state: HoltWintersState, season: number, out: Float64Array): void {
  const o = state.t;
  for (let h = 1; h <= out.length; h++) out[h - 1] = Math.max(0, state.level + h * state.trend + (state.seasonal[(o + h - 1) % season] as number));
}

/** One-step SSE over t ∈ [m, n) of `values` with parameters `p`. */
export function oneStepSse(values: ArrayLike<number>, season: number, p: HoltWintersParams): number {
  const state = initialState(values, season);
  return runFilter(state, values, values.length, p, season);
}

/** The filter position kept between forecast calls, and what it was computed from. */
interface FilterCache {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly state: HoltWintersState;
}

/** Additive Holt-Winters with a daily season, fitted once on the training part. */
export class HoltWintersForecaster implements Forecaster {
  readonly name = 'holt_winters_add';
  private season = 0;
  private params: HoltWintersParams | null = null;
  private band: BandOffsets | null = null;
  private cache: FilterCache | null = null;

  /** The fitted parameters (null before fit). */
  get parameters(): HoltWintersParams | null {
    return this.params;
  }

  /** Estimates α, β, γ on the training part (grid, then Nelder-Mead) and measures the P90 band. */
  async fit(train: SeriesView, options: FitOptions): Promise<FitReport> {
    const t0 = performance.now();
    checkFitOptions(options);
    const { season, horizon } = options;
    checkView(train, Math.max(2 * season, season + horizon), this.name, 'two seasons (and the horizon) in the training part');
    const y = train.values;
    let best: HoltWintersParams = { alpha: HW_GRID.alpha[0], beta: HW_GRID.beta[0], gamma: HW_GRID.gamma[0] };
    let bestSse = Infinity;
    for (const alpha of HW_GRID.alpha) {
      for (const beta of HW_GRID.beta) {
        for (const gamma of HW_GRID.gamma) {
          const sse = oneStepSse(y, season, { alpha, beta, gamma });
          if (sse < bestSse) [best, bestSse] = [{ alpha, beta, gamma }, sse];
        }
      }
    }
    const toParams = (x: readonly number[]): HoltWintersParams => ({ alpha: sigmoid(x[0] as number), beta: sigmoid(x[1] as number), gamma: sigmoid(x[2] as number) });
    const nm = nelderMead((x) => oneStepSse(y, season, toParams(x)), [logit(best.alpha), logit(best.beta), logit(best.gamma)], {
      iterationsMax: HW_NELDER_MEAD_ITERATIONS_MAX,
      lower: -HW_LOGIT_BOUND,
      upper: HW_LOGIT_BOUND,
    });
    const gridSse = bestSse;
    if (nm.value < bestSse) [best, bestSse] = [toParams(nm.x), nm.value];
    this.season = season;
    this.params = best;
    this.cache = null;
    this.band = this.measureBand(y, horizon);
    return {
      trainMs: performance.now() - t0,
      backend: 'js',
      details: { ...best, sse: bestSse, gridSse, nelderMeadIterations: nm.iterations, nelderMeadConverged: nm.converged, p90Offsets: Array.from(this.band.upper), p10Offsets: Array.from(this.band.lower) },
    };
  }

  /** In-sample h-step errors at every training origin t ∈ [m, n_train − H], filter run once. */
  private measureBand(y: Float64Array, horizon: number): BandOffsets {
    const m = this.season;
    const p = this.params as HoltWintersParams;
    const band = new ResidualBand(horizon);
    const state = initialState(y, m);
    const point = new Float64Array(horizon);
    const last = y.length - horizon;
    for (let t = firstResidualOrigin(m, last); t <= last; t++) {
      runFilter(state, y, t, p, m);
      holtWintersPoint(state, m, point);
      band.add(y.subarray(t, t + horizon), point);
    }
    return band.bands();
  }

  /**
   * One forecast per view. The filter state is carried from one view to the next when the new view
   * extends the one the state was computed on (same buffer and start, at least as long, same number
   * of initial days): the state after t values depends only on y[0 .. t−1], which is a prefix of
   * the new view, so continuing it is exactly the fresh run over the new view, with no look at
   * anything past its origin. Otherwise the filter restarts from the view's own first days.
   * This is what makes a stride-1 backtest O(n) instead of O(n·K).
   */
  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    if (this.params === null || this.band === null) throw notFitted(this.name);
    requirePositiveInteger(horizon, 'horizon');
    const m = this.season;
    const p = this.params;
    const band = this.band;
    return views.map((view) => {
      checkView(view, 2 * m, this.name, 'two seasons of history');
      const v = view.values;
      const c = this.cache;
      const reuse =
        c !== null && c.buffer === v.buffer && c.byteOffset === v.byteOffset && c.state.t <= v.length && c.state.initDays === initDaysFor(v.length, m);
      const state = reuse ? c.state : initialState(v, m);
      if (!reuse) this.cache = { buffer: v.buffer, byteOffset: v.byteOffset, state };
      runFilter(state, v, v.length, p, m);
      const point = new Float64Array(horizon);
      holtWintersPoint(state, m, point);
      return { point, ...applyBands(point, band) };
    });
  }
}
