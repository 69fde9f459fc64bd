/**
 * The planner's accuracy watch: it scores each forecast the plan used (the P50 made L steps before
 * its step) against what then arrived, next to what seasonal naive would have said at the same
 * lead, over a rolling window, and decides whether the planner trusts its model (`predictive`) or
 * falls back to the reactive rule (`reactive`). Pure: no clock, no I/O, fed by the planner.
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { PlannerMode } from './types.ts';

/** Largest rolling window (steps): one hour at the gateway's 1-minute step. */
export const ACCURACY_WINDOW_STEPS_MAX = 60;
/** Fewest scored steps before the watch judges at all (fraction of its window, rounded up). */
export const ACCURACY_MIN_FRACTION = 0.5;
/**
 * Hysteresis of the mode: the model falls back when its rolling MAE is above seasonal naive's by
 * more than this fraction, and returns once it is at or below seasonal naive's again. A model
 * that ties seasonal naive (seasonal naive itself) therefore never falls back, and one hovering at
 * the boundary does not flap between the two modes on every step.
 */
export const FALLBACK_MARGIN = 0.1;
/** Forecasts waiting for their step to arrive: L + 1 are live at once, the rest are stale. */
export const PENDING_FORECASTS_MAX = 4096;

/** The window a season of `season` steps gets: one season or ACCURACY_WINDOW_STEPS_MAX, whichever is smaller. */
export function accuracyWindowFor(season: number): number {
  return Math.max(1, Math.min(season, ACCURACY_WINDOW_STEPS_MAX));
}

/** What the watch says after a step. */
export interface AccuracyVerdict {
  readonly mode: PlannerMode;
  /** Set when this observation changed the mode: why, with both figures. */
  readonly changed: string | null;
  /** Rolling MAE of the model's scored forecasts (null before any). */
  readonly modelMae: number | null;
  /** Rolling MAE of seasonal naive at the same lead over the same steps (null before any). */
  readonly naiveMae: number | null;
  /** Scored steps in the window. */
  readonly count: number;
}

/** How a watch judges. */
export interface AccuracyWatchOptions {
  /** Rolling window in steps (see accuracyWindowFor). */
  readonly window: number;
  /** Scored steps needed before judging (default ⌈window × ACCURACY_MIN_FRACTION⌉). */
  readonly minCount?: number;
  /** See FALLBACK_MARGIN. */
  readonly margin?: number;
}

/** The rolling score of the planner's own forecasts; see the module comment. */
export class AccuracyWatch {
  readonly window: number;
  readonly minCount: number;
  readonly margin: number;
  private readonly modelErr: Float64Array;
  private readonly naiveErr: Float64Array;
  private next = 0;
  private count = 0;
  private modelSum = 0;
  private naiveSum = 0;
  private readonly pending = new Map<number, number>();
  private current: PlannerMode = 'predictive';

  constructor(options: AccuracyWatchOptions) {
    const { window } = options;
    if (!Number.isSafeInteger(window) || window < 1 || window > ACCURACY_WINDOW_STEPS_MAX) {
      throw new EdgeqError('INVALID_ARGUMENT', `accuracy window must be an integer in [1, ${ACCURACY_WINDOW_STEPS_MAX}], got ${String(window)}`, { details: { window } });
    }
    const minCount = options.minCount ?? Math.ceil(window * ACCURACY_MIN_FRACTION);
    if (!Number.isSafeInteger(minCount) || minCount < 1 || minCount > window) {
      throw new EdgeqError('INVALID_ARGUMENT', `accuracy minCount must be an integer in [1, ${window}], got ${String(minCount)}`, { details: { minCount } });
    }
    const margin = options.margin ?? FALLBACK_MARGIN;
    if (!(Number.isFinite(margin) && margin >= 0 && margin <= 1)) {
      throw new EdgeqError('INVALID_ARGUMENT', `accuracy margin must be a fraction in [0, 1], got ${String(margin)}`, { details: { margin } });
    }
    this.window = window;
    this.minCount = minCount;
    this.margin = margin;
    this.modelErr = new Float64Array(window);
    this.naiveErr = new Float64Array(window);
  }

  /** The mode the watch is in. */
  mode(): PlannerMode {
    return this.current;
  }

  /** Scored steps in the window. */
  scored(): number {
    return this.count;
  }

  /** True once the window is full (a drift judgement needs a whole window). */
  full(): boolean {
    return this.count === this.window;
  }

  /** Rolling MAE of the model (null before any scored step). */
  modelMae(): number | null {
    return this.count === 0 ? null : this.modelSum / this.count;
  }

  /** Rolling MAE of seasonal naive at the same lead (null before any scored step). */
  naiveMae(): number | null {
    return this.count === 0 ? null : this.naiveSum / this.count;
  }

  /** Records the P50 the plan used for step `t` (epoch ms); a later call for the same t replaces it. */
  expect(t: number, p50: number): void {
    if (!this.pending.has(t) && this.pending.size >= PENDING_FORECASTS_MAX) {
      // Oldest first (insertion order): a forecast whose step never arrived is the one to drop.
      const oldest = this.pending.keys().next().value as number;
      this.pending.delete(oldest);
    }
    this.pending.set(t, Number.isFinite(p50) ? Math.max(0, p50) : 0);
  }

  /** Drops forecasts for steps before `t` that never arrived (a gap in the history). */
  forgetBefore(t: number): void {
    for (const k of [...this.pending.keys()]) if (k < t) this.pending.delete(k);
  }

  /**
   * Step `t` arrived with `actual`; `naive` is seasonal naive's forecast for it at the same lead
   * (null when the history is too short for one). Scores the model's forecast for t, if the
   * planner made one, and judges the mode. Without a naive figure nothing is scored: the watch
   * compares like with like or not at all.
   */
  observe(t: number, actual: number, naive: number | null): AccuracyVerdict {
    const predicted = this.pending.get(t);
    this.pending.delete(t);
    if (predicted !== undefined && naive !== null && Number.isFinite(actual) && Number.isFinite(naive)) {
      this.push(Math.abs(actual - predicted), Math.abs(actual - Math.max(0, naive)));
    }
    return this.judge();
  }

  /** Clears the scores (a new model was installed: the old one's errors say nothing about it). */
  reset(): void {
    this.next = 0;
    this.count = 0;
    this.modelSum = 0;
    this.naiveSum = 0;
    this.modelErr.fill(0);
    this.naiveErr.fill(0);
  }

  private push(modelErr: number, naiveErr: number): void {
    if (this.count === this.window) {
      this.modelSum -= this.modelErr[this.next] as number;
      this.naiveSum -= this.naiveErr[this.next] as number;
    } else {
      this.count++;
    }
    this.modelErr[this.next] = modelErr;
    this.naiveErr[this.next] = naiveErr;
    this.modelSum += modelErr;
    this.naiveSum += naiveErr;
    this.next = (this.next + 1) % this.window;
    // Running sums drift by rounding; recomputing once per lap keeps them exact enough for ever.
    if (this.next === 0) {
      this.modelSum = this.modelErr.reduce((a, b) => a + b, 0);
      this.naiveSum = this.naiveErr.reduce((a, b) => a + b, 0);
    }
  }

  private judge(): AccuracyVerdict {
    const modelMae = this.modelMae();
    const naiveMae = this.naiveMae();
    let changed: string | null = null;
    if (modelMae !== null && naiveMae !== null && this.count >= this.minCount) {
      const figures = `rolling MAE ${modelMae.toFixed(3)} against seasonal naive's ${naiveMae.toFixed(3)} over ${this.count} steps`;
      if (this.current === 'predictive' && modelMae > naiveMae * (1 + this.margin)) {
        this.current = 'reactive';
        changed = `the forecast is worse than seasonal naive by more than ${Math.round(this.margin * 100)}%: ${figures}`;
      } else if (this.current === 'reactive' && modelMae <= naiveMae) {
        this.current = 'predictive';
        changed = `the forecast is at least as good as seasonal naive again: ${figures}`;
      }
    }
    return { mode: this.current, changed, modelMae, naiveMae, count: this.count };
  }
}
