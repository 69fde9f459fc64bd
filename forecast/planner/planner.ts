/**
 * The live planner: every step it reads the region's ingress history, forecasts the next H steps
 * with the model in use (model-choice.ts), and decides the instances and the limiter ceiling for
 * the step L ahead from the P90 (plan-arithmetic.ts). A step t's entry is decided at t − L, from
 * the history closed before it, so `desired()` and `ceilingPerSec()` answer what was decided L
 * steps ago. The accuracy watch scores the forecasts the plan used; when the model does worse than
 * seasonal naive the planner falls back to the reactive rule and says so. Retraining runs through
 * the ModelFactory (by default in a worker thread) and is never awaited by a step.
 */
import { silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import type { Forecast, Forecaster } from '../forecaster.ts';
import { seasonalNaiveScale } from '../metrics.ts';
import { AccuracyWatch, accuracyWindowFor } from './accuracy-watch.ts';
import { candidatesFor, fitColdStart, phaseFor, selectionMinSteps, type ColdStartMethod, type ModelFactory, type ModelPhase, type Selected } from './model-choice.ts';
import { instancesFor } from './plan-arithmetic.ts';
import { HORIZON_STEPS_MAX, resolvePlannerOptions, type ComponentCounts, type PlannerOptions, type ResolvedPlannerOptions } from './planner-options.ts';
import { workerModelFactory } from './retrain-client.ts';
import type { CapacityForecastPoint, CapacityModel, CapacityPlanPoint, PlannerMode } from './types.ts';

/** A forecast cleaned for the plan: H finite steps with P10 ≤ point ≤ P90. */
interface Banded {
  readonly point: Float64Array;
  readonly p90: Float64Array;
  readonly p10: Float64Array;
}

/** The limiter's own minimum rate (records/s): a ceiling below it would be ignored anyway. */
export const LIMITER_CEILING_MIN = 10;
/** Retrain when the live rolling MASE over a full watch window exceeds the backtest MASE by this factor. */
export const DRIFT_FACTOR = 1.5;
/** After a failed retraining, steps before the next may start (one hour at 1-minute steps). */
export const RETRAIN_FAILURE_BACKOFF_STEPS = 60;
/** Dead regions whose forecasts one step adds at most (a mesh of more regions is a misconfiguration). */
export const EXTRA_REGIONS_MAX = 64;
/** `on('mode')` listeners at most. */
export const MODE_LISTENERS_MAX = 16;
/** Points read per dead region's forecast at most: twice the longest horizon (its window may be offset from ours). */
export const EXTRA_POINTS_MAX = 2 * HORIZON_STEPS_MAX;
/** How long close() waits for a retraining to stop (ms): the default factory terminates its worker at once. */
export const CLOSE_WAIT_MS = 5_000;

export type { PlannerOptions } from './planner-options.ts';

/** One decision: what step t gets, taken at t − L. */
interface Decision {
  readonly instances: ComponentCounts;
  readonly ceilingPerSec: number;
}

/** What the last step saw and computed. */
interface StepState {
  /** Start of the current step (the one in progress), epoch ms. */
  readonly current: number;
  readonly lastValue: number;
  /** The region's own forecast for t = current … current + (H − 1)·step. */
  readonly forecast: CapacityForecastPoint[];
  /** The dead regions' forecasts, summed, for the same steps (empty when none). */
  readonly extra: CapacityForecastPoint[];
  /** The history's in-sample seasonal-naive MAE (the live MASE's scale), null when it has none. */
  readonly scale: number | null;
}

/** The installed model. */
interface Installed {
  readonly forecaster: Forecaster;
  readonly method: string;
  readonly cold: boolean;
  readonly backtestMase: number | null;
  readonly trainedAtMs: number;
  /** History length it was fitted on. */
  readonly fittedSteps: number;
  /** Candidates of the selection that chose it (empty for a cold-start model). */
  readonly candidates: readonly string[];
}

/** The planner's report (`GET /v1/capacity` adds the region and the current figures). */
export interface PlannerReport {
  /** The step length (ms). */
  readonly step: number;
  /** Start of the current step (epoch ms), null before the first step. */
  readonly current: number | null;
  /** The region's own forecast (what the mesh's forecast slot carries): t = current … + H − 1 steps. */
  readonly forecast: CapacityForecastPoint[];
  /** Dead regions' forecasts added to the plan, summed per t (empty when no region is dead). */
  readonly extra: CapacityForecastPoint[];
  /** For t = current … current + L steps, the decision taken L steps before t, where one exists. */
  readonly plan: CapacityPlanPoint[];
  readonly model: CapacityModel;
}

const finiteOr0 = (v: number): number => (Number.isFinite(v) && v > 0 ? v : 0);

/** The live planner of one region; see the module comment. */
export class Planner {
  private readonly o: PlannerOptions;
  private readonly cfg: ResolvedPlannerOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly models: ModelFactory;
  private readonly watch: AccuracyWatch;
  private readonly decisions = new Map<number, Decision>();
  private readonly listeners: ((mode: PlannerMode, why: string) => void)[] = [];
  private model: Installed | null = null;
  private state: StepState | null = null;
  private lastObserved: number | null = null;
  private timer: TimerHandle | null = null;
  private stepping = false;
  private closed = false;
  private retraining: Promise<void> | null = null;
  private abort: AbortController | null = null;
  private lastRetrainStartMs = -Infinity;
  private retryNotBeforeMs = -Infinity;
  private drifted = false;
  private retrains = 0;

  /** Checks every option (INVALID_CONFIG naming the key); starts nothing. */
  constructor(o: PlannerOptions) {
    this.cfg = resolvePlannerOptions(o);
    this.o = o;
    this.clock = o.clock ?? systemClock;
    this.log = (o.logger ?? silentLogger).child({ component: 'planner' });
    this.models = o.models ?? workerModelFactory();
    this.watch = new AccuracyWatch({ window: accuracyWindowFor(this.cfg.season) });
  }

  /** The resolved options (defaults filled in). */
  get options(): ResolvedPlannerOptions {
    return this.cfg;
  }

  /** One step every stepMs, at stepDelayMs past each multiple of stepMs, until close(). */
  start(): void {
    if (this.closed || this.timer !== null) return;
    const arm = (): void => {
      const { stepMs, stepDelayMs } = this.cfg;
      const now = this.clock.nowMs();
      const next = Math.floor((now - stepDelayMs) / stepMs) * stepMs + stepMs + stepDelayMs;
      this.timer = this.clock.setTimeout(() => {
        if (this.closed) return;
        arm();
        void this.step();
      }, next - now);
    };
    arm();
  }

  /** Stops the timer and any retraining (its worker is terminated); resolves once it has stopped. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.abort?.abort();
    const running = this.retraining;
    if (running !== null) {
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([running, new Promise<void>((r) => (bound = setTimeout(r, CLOSE_WAIT_MS).unref()))]);
      clearTimeout(bound);
    }
  }

  /** Registers a listener for mode changes (reactive ⇄ predictive), with why. */
  on(event: 'mode', cb: (mode: PlannerMode, why: string) => void): void {
    if (event !== 'mode') return;
    if (this.listeners.length >= MODE_LISTENERS_MAX) throw new Error(`planner: at most ${MODE_LISTENERS_MAX} mode listeners`);
    this.listeners.push(cb);
  }

  /** The current mode. */
  mode(): PlannerMode {
    return this.watch.mode();
  }

  /** Retrainings started so far. */
  retrainsStarted(): number {
    return this.retrains;
  }

  /** Resolves when the retraining in progress (if any) has settled and its model is installed. */
  async retrainSettled(): Promise<void> {
    await this.retraining;
  }

  /** One step (start's timer calls it; tests on a FakeClock call it). A step already running makes this a no-op. */
  async step(): Promise<void> {
    if (this.closed || this.stepping) return;
    this.stepping = true;
    try {
      await this.runStep();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'planner step failed; the previous plan stands');
    } finally {
      this.stepping = false;
    }
  }

  /** The forecast, the plan and the model. */
  report(): PlannerReport {
    const s = this.state;
    const m = this.model;
    const model: CapacityModel = {
      method: m?.method ?? 'none',
      trainedAt: m === null ? null : new Date(m.trainedAtMs).toISOString(),
      backtestMase: m?.backtestMase ?? null,
      liveMase: this.liveMase(),
      mode: this.mode(),
    };
    if (s === null) return { step: this.cfg.stepMs, current: null, forecast: [], extra: [], plan: [], model };
    const plan: CapacityPlanPoint[] = [];
    for (let k = 0; k <= this.cfg.leadSteps; k++) {
      const t = s.current + k * this.cfg.stepMs;
      const d = this.mode() === 'reactive' ? this.reactiveDecision() : this.decisions.get(t);
      if (d !== undefined) plan.push({ t, instances: { ...d.instances }, ceilingPerSec: d.ceilingPerSec });
    }
    return { step: this.cfg.stepMs, current: s.current, forecast: s.forecast.map((p) => ({ ...p })), extra: s.extra.map((p) => ({ ...p })), plan, model };
  }

  /** The limiter ceiling for the current step: Infinity in reactive mode or with no plan for it. */
  ceilingPerSec(): number {
    if (this.state === null || this.mode() === 'reactive') return Infinity;
    return this.decisions.get(this.state.current)?.ceilingPerSec ?? Infinity;
  }

  /** Instances for the current step: the decision taken L steps ago, else (reactive, or none yet) the reactive rule. */
  desired(): ComponentCounts {
    if (this.state === null) return { ...this.cfg.minInstances };
    const d = this.mode() === 'reactive' ? undefined : this.decisions.get(this.state.current);
    return { ...(d ?? this.reactiveDecision()).instances };
  }

  private decide(p90: number, ceiling: boolean): Decision {
    const { perInstance, headroom, minInstances, maxInstances } = this.cfg;
    const shape = (c: 'broker' | 'gateway') => ({ perInstance: perInstance[c], headroom, min: minInstances[c], max: maxInstances[c] });
    return {
      instances: { broker: instancesFor(p90, shape('broker')), gateway: instancesFor(p90, shape('gateway')) },
      ceilingPerSec: ceiling ? Math.max(LIMITER_CEILING_MIN, finiteOr0(p90) * (1 + headroom)) : Infinity,
    };
  }

  /** ⌈(last value + dead regions' P90 now) × (1 + h) / C⌉, the rule of a reactive autoscaler; no ceiling. */
  private reactiveDecision(): Decision {
    const s = this.state;
    return this.decide(s === null ? 0 : s.lastValue + (s.extra[0]?.p90 ?? 0), false);
  }

  private async runStep(): Promise<void> {
    const { stepMs, horizon, leadSteps, season } = this.cfg;
    const hist = this.o.history();
    const n = hist.length;
    if (n === 0) return;
    const lastT = hist[n - 1]!.t;
    const current = lastT + stepMs;
    const values = Float64Array.from(hist, (s) => finiteOr0(s.records));
    const timestamps = new Float64Array(n + horizon);
    for (let i = 0; i < n; i++) timestamps[i] = hist[i]!.t;
    for (let h = 0; h < horizon; h++) timestamps[n + h] = current + h * stepMs;

    this.observeArrivals(hist, values);
    const phase = phaseFor(n, season, horizon);
    await this.ensureModel(phase, values, timestamps);
    this.maybeRetrain(phase, values, timestamps);
    const f = await this.forecastNow(phase, values, timestamps);

    const extra = this.extraFor(current);
    const forecast: CapacityForecastPoint[] = [];
    for (let h = 0; h < horizon; h++) forecast.push({ t: current + h * stepMs, p50: f.point[h]!, p90: f.p90[h]!, p10: f.p10[h]! });
    // The plan used the model's own P50 for the step L ahead: that is what the watch scores.
    const target = current + leadSteps * stepMs;
    this.watch.expect(target, f.point[leadSteps]!);
    const p90 = f.p90[leadSteps]! + (extra[leadSteps]?.p90 ?? 0);
    this.decisions.set(target, this.decide(p90, true));
    // Bounded: only t ∈ [current, current + L] are kept, L + 1 ≤ HORIZON_STEPS_MAX decisions.
    for (const t of this.decisions.keys()) if (t < current || t > target) this.decisions.delete(t);

    let scale: number | null = null;
    if (n > season) {
      try {
        scale = seasonalNaiveScale(values, season);
      } catch {
        scale = null; // a history that repeats itself exactly has no scale
      }
    }
    this.state = { current, lastValue: values[n - 1]!, forecast, extra, scale };
    const liveMase = this.liveMase();
    if (liveMase !== null && this.model?.backtestMase != null && this.watch.full() && liveMase > DRIFT_FACTOR * this.model.backtestMase) this.drifted = true;
  }

  /** Rolling MAE of the scored forecasts over the history's in-sample seasonal-naive MAE (null until scored). */
  private liveMase(): number | null {
    const mae = this.watch.modelMae();
    const scale = this.state?.scale ?? null;
    return mae === null || scale === null ? null : mae / scale;
  }
  /** Scores the forecasts made for the steps that closed since the last step. */
  private observeArrivals(hist: readonly { t: number }[], values: Float64Array): void {
    const { leadSteps, season } = this.cfg;
    const n = hist.length;
    const since = this.lastObserved;
    this.lastObserved = hist[n - 1]!.t;
    if (since === null) return;
    // Seasonal naive for step i, made L steps before it: y[i − k·m], the smallest k ≥ 1 with k·m > L.
    const back = (Math.floor(leadSteps / season) + 1) * season;
    let first = n;
    // Bounded by the history, and in practice by the steps since the last call (one, usually).
    while (first > 0 && hist[first - 1]!.t > since) first--;
    this.watch.forgetBefore(hist[first]?.t ?? Infinity);
    for (let i = first; i < n; i++) {
      const verdict = this.watch.observe(hist[i]!.t, values[i]!, i - back >= 0 ? values[i - back]! : null);
      if (verdict.changed !== null) this.modeChanged(verdict.mode, verdict.changed);
    }
  }

  private modeChanged(mode: PlannerMode, why: string): void {
    if (mode === 'reactive') this.log.warn({ mode, why }, 'planner falls back to reactive mode');
    else this.log.info({ mode, why }, 'planner returns to predictive mode');
    for (const cb of this.listeners) {
      try {
        cb(mode, why);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'a mode listener threw');
      }
    }
  }

  /** Until selection has installed a model: the cold-start model of the phase, refitted each season of growth. */
  private async ensureModel(phase: ModelPhase, values: Float64Array, timestamps: Float64Array): Promise<void> {
    const m = this.model;
    if (m !== null && !m.cold) return;
    const method: ColdStartMethod = phase === 'last_value' ? 'last_value' : 'seasonal_naive';
    const n = values.length;
    if (m !== null && m.method === method && n - m.fittedSteps < this.cfg.season) return;
    await this.installCold(method, values, timestamps);
  }

  private async installCold(method: ColdStartMethod, values: Float64Array, timestamps: Float64Array): Promise<Forecaster> {
    const { season, horizon } = this.cfg;
    const n = values.length;
    const fit = this.models.coldStart ?? fitColdStart;
    // Only the latest steps: after a restart with weeks of history the band of the cold model
    // would otherwise be measured on all of them, on this thread (≈130 ms for 28 days of minutes).
    const k = Math.min(n, selectionMinSteps(season, horizon));
    const forecaster = await fit(method, { origin: k, values: values.subarray(n - k), timestamps: timestamps.subarray(n - k) }, { season, horizon });
    this.model = { forecaster, method, cold: true, backtestMase: null, trainedAtMs: this.clock.nowMs(), fittedSteps: n, candidates: [] };
    return forecaster;
  }

  /** The model's forecast from the whole history; a model that fails falls back to the cold-start one. */
  private async forecastNow(phase: ModelPhase, values: Float64Array, timestamps: Float64Array): Promise<Banded> {
    const { horizon } = this.cfg;
    const n = values.length;
    const view = { origin: n, values, timestamps };
    const clean = (f: Forecast | undefined): Banded | null => {
      if (f === undefined || f.point.length < horizon || f.p90.length < horizon) return null;
      const point = Float64Array.from(f.point.subarray(0, horizon), finiteOr0);
      const p90 = Float64Array.from(f.p90.subarray(0, horizon), (v, h) => Math.max(point[h]!, finiteOr0(v)));
      // The band brackets the point: a model with no lower band (or a short one) gets the point.
      const lower = f.p10 !== undefined && f.p10.length >= horizon ? f.p10 : point;
      const p10 = Float64Array.from(lower.subarray(0, horizon), (v, h) => Math.min(point[h]!, Math.max(0, Number.isFinite(v) ? v : point[h]!)));
      return point.every(Number.isFinite) ? { point, p90, p10 } : null;
    };
    const model = this.model!;
    try {
      const out = clean((await model.forecaster.forecast([view], horizon))[0]);
      if (out !== null) return out;
      throw new Error(`${model.method} returned a forecast of the wrong length`);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, method: model.method }, 'the model failed to forecast; the cold-start model stands in');
      const method: ColdStartMethod = phase === 'last_value' ? 'last_value' : 'seasonal_naive';
      const cold = await this.installCold(method, values, timestamps);
      const out = clean((await cold.forecast([view], horizon))[0]);
      if (out === null) throw new Error(`the cold-start model ${method} returned no forecast`);
      return out;
    }
  }

  /** Starts one retraining when one is due and none runs; never awaited here. */
  private maybeRetrain(phase: ModelPhase, values: Float64Array, timestamps: Float64Array): void {
    if (phase !== 'selection' || this.retraining !== null || this.closed) return;
    const now = this.clock.nowMs();
    if (now < this.retryNotBeforeMs) return;
    const { season, horizon, stepMs, retrainEveryMs } = this.cfg;
    const candidates = candidatesFor(values.length, season, horizon, this.models.lstm);
    const m = this.model;
    let reason: string | null = null;
    if (m === null || m.cold) reason = 'enough history for selection';
    else if (now - this.lastRetrainStartMs >= retrainEveryMs) reason = 'schedule';
    // Drift is judged on a full window of the installed model, so two drift retrains are at least a window apart.
    else if (this.drifted && now - this.lastRetrainStartMs >= this.watch.window * stepMs) reason = 'drift';
    else if (candidates.length > m.candidates.length) reason = `new candidates (${candidates.filter((c) => !m.candidates.includes(c)).join(', ')})`;
    if (reason === null) return;
    this.startRetrain(reason, candidates, Float64Array.from(values), Float64Array.from(timestamps));
  }

  private startRetrain(reason: string, candidates: readonly string[], values: Float64Array, timestamps: Float64Array): void {
    const { season, horizon, stepMs } = this.cfg;
    const abort = new AbortController();
    this.abort = abort;
    this.retrains++;
    this.lastRetrainStartMs = this.clock.nowMs();
    this.drifted = false;
    const fittedSteps = values.length;
    this.log.info({ reason, candidates, steps: fittedSteps }, 'planner retraining started');
    const t0 = this.clock.monotonicMs();
    let run: Promise<Selected>;
    try {
      run = this.models.retrain({ values, timestamps, season, horizon, candidates, signal: abort.signal });
    } catch (err) {
      run = Promise.reject(err);
    }
    this.retraining = run.then(
      (selected) => {
        if (this.closed) return;
        this.model = {
          forecaster: selected.forecaster,
          method: selected.method,
          cold: false,
          backtestMase: selected.backtestMase,
          trainedAtMs: this.clock.nowMs(),
          fittedSteps,
          candidates: [...candidates],
        };
        this.watch.reset();
        this.drifted = false;
        this.log.info({ reason, method: selected.method, backtestMase: selected.backtestMase, ranking: selected.ranking, skipped: selected.skipped, ms: this.clock.monotonicMs() - t0 }, 'planner model installed');
      },
      (err: unknown) => {
        if (this.closed) return;
        this.retryNotBeforeMs = this.clock.nowMs() + RETRAIN_FAILURE_BACKOFF_STEPS * stepMs;
        this.log.warn({ reason, err: (err as Error).message }, 'planner retraining failed; the model in use stands');
      },
    ).finally(() => {
      this.retraining = null;
      if (this.abort === abort) this.abort = null;
    });
  }

  /** The dead regions' forecasts summed for t = current … + H − 1 steps (empty when none). */
  private extraFor(current: number): CapacityForecastPoint[] {
    const regions = this.o.extraDemand?.() ?? [];
    if (regions.length === 0) return [];
    const { stepMs, horizon } = this.cfg;
    const p50 = new Float64Array(horizon);
    const p90 = new Float64Array(horizon);
    const p10 = new Float64Array(horizon);
    for (const r of regions.slice(0, EXTRA_REGIONS_MAX)) {
      // Bounded: a region's points beyond the window's H steps match nothing and are skipped.
      for (const p of r.forecast.slice(0, EXTRA_POINTS_MAX)) {
        const h = (p.t - current) / stepMs;
        if (!Number.isInteger(h) || h < 0 || h >= horizon) continue;
        p50[h] = p50[h]! + finiteOr0(p.p50);
        p90[h] = p90[h]! + Math.max(finiteOr0(p.p50), finiteOr0(p.p90));
        p10[h] = p10[h]! + Math.min(finiteOr0(p.p50), finiteOr0(p.p10));
      }
    }
    return Array.from({ length: horizon }, (_, h) => ({ t: current + h * stepMs, p50: p50[h]!, p90: p90[h]!, p10: p10[h]! }));
  }
}
