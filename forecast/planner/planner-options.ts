/**
 * The live planner's options, their defaults and their bounds, checked once at construction: a
 * bad value is an INVALID_CONFIG error naming its key, and nothing starts.
 */
import { EdgeqError, type Clock, type Logger } from '../../src/core/index.ts';
import type { ModelFactory } from './model-choice.ts';
import { PLAN_HEADROOM_DEFAULT, PLAN_HEADROOM_MAX, PLAN_INSTANCES_MAX } from './plan-arithmetic.ts';
import type { CapacityForecastPoint, IngressStep } from './types.ts';

/** Shortest step (ms): the live benchmark's 1-second step. */
export const STEP_MS_MIN = 1_000;
/** Longest step (ms): one hour; a coarser plan cannot lead a 5-minute instance start. */
export const STEP_MS_MAX = 3_600_000;
/** Longest season (steps): one day at the shortest step. */
export const SEASON_STEPS_MAX = 86_400;
/** Longest horizon (steps): one hour at the shortest step (bounds every forecast's arrays). */
export const HORIZON_STEPS_MAX = 3_600;
/** Default horizon (ms): the next hour. */
export const HORIZON_MS_DEFAULT = 3_600_000;
/** Default lead (ms): how long a new instance takes to be ready. */
export const LEAD_MS_DEFAULT = 300_000;
/** Default retraining period (ms): daily. */
export const RETRAIN_EVERY_MS_DEFAULT = 86_400_000;
/** Longest retraining period (ms): 28 days, the history's default retention. */
export const RETRAIN_EVERY_MS_MAX = 28 * 86_400_000;
/** Longest wait after a step boundary before stepping (ms), so the history writer has closed the step. */
export const STEP_DELAY_MS_MAX = 60_000;

/** Instances per component. */
export interface ComponentCounts {
  readonly broker: number;
  readonly gateway: number;
}

/** A dead region's forecast the planner adds to its own (failover awareness). */
export interface ExtraDemand {
  readonly region: string;
  readonly forecast: readonly CapacityForecastPoint[];
}

/** What the lead's gateway passes to `new Planner`. */
export interface PlannerOptions {
  /** Step of the history (ms): 60 000 in the gateway, 1 000 in tests and the live benchmark. */
  readonly stepMs: number;
  /** Steps per season (one day: 86 400 000 / stepMs). */
  readonly season: number;
  /** H, steps forecast each step: default min(HORIZON_MS_DEFAULT / stepMs, season); in [lead + 1, season]. */
  readonly horizon?: number;
  /** L, steps between a decision and its step: default ceil(LEAD_MS_DEFAULT / stepMs), cut to H − 1; in [1, H − 1]. */
  readonly leadSteps?: number;
  /** Records/s one instance of each component serves (C). */
  readonly perInstance: ComponentCounts;
  /** Fraction over the P90 (default PLAN_HEADROOM_DEFAULT). */
  readonly headroom?: number;
  /** Per component (default 1 each). */
  readonly minInstances?: ComponentCounts;
  /** Per component (default PLAN_INSTANCES_MAX each). */
  readonly maxInstances?: ComponentCounts;
  /** Scheduled retraining period (ms, default RETRAIN_EVERY_MS_DEFAULT). */
  readonly retrainEveryMs?: number;
  /** Wait after each step boundary before stepping (ms; default min(1 000, stepMs / 10)). */
  readonly stepDelayMs?: number;
  /** The region's steps, oldest first, contiguous (the caller fills gaps). */
  readonly history: () => readonly IngressStep[];
  /** Dead regions' forecasts to add to this region's plan. */
  readonly extraDemand?: () => readonly ExtraDemand[];
  /** How models are built and fitted (default workerModelFactory()). */
  readonly models?: ModelFactory;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The options with every default resolved. */
export interface ResolvedPlannerOptions {
  readonly stepMs: number;
  readonly season: number;
  readonly horizon: number;
  readonly leadSteps: number;
  readonly perInstance: ComponentCounts;
  readonly headroom: number;
  readonly minInstances: ComponentCounts;
  readonly maxInstances: ComponentCounts;
  readonly retrainEveryMs: number;
  readonly stepDelayMs: number;
}

function invalid(key: string, value: unknown, rule: string): EdgeqError {
  return new EdgeqError('INVALID_CONFIG', `planner: ${key} must be ${rule}, got ${String(value)}`, { details: { key, value } });
}

function integerIn(key: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) throw invalid(key, value, `an integer in [${min}, ${max}]`);
  return value;
}

function counts(key: string, value: ComponentCounts | undefined, fallback: number, min: number): ComponentCounts {
  if (value === undefined) return { broker: fallback, gateway: fallback };
  if (typeof value !== 'object' || value === null) throw invalid(key, value, 'an object { broker, gateway }');
  return { broker: integerIn(`${key}.broker`, value.broker, min, PLAN_INSTANCES_MAX), gateway: integerIn(`${key}.gateway`, value.gateway, min, PLAN_INSTANCES_MAX) };
}

/** Checks every option and resolves the defaults; INVALID_CONFIG naming the first bad key. */
export function resolvePlannerOptions(o: PlannerOptions): ResolvedPlannerOptions {
  const stepMs = integerIn('stepMs', o.stepMs, STEP_MS_MIN, STEP_MS_MAX);
  const season = integerIn('season', o.season, 1, SEASON_STEPS_MAX);
  const horizonMax = Math.min(season, HORIZON_STEPS_MAX);
  // H ≤ m keeps every seasonal-naive step one season back inside the history (and is the LSTM's rule).
  const horizon = integerIn('horizon', o.horizon ?? Math.min(Math.floor(HORIZON_MS_DEFAULT / stepMs), horizonMax), 2, horizonMax);
  const leadSteps = integerIn('leadSteps', o.leadSteps ?? Math.min(Math.ceil(LEAD_MS_DEFAULT / stepMs), horizon - 1), 1, horizon - 1);
  if (typeof o.perInstance !== 'object' || o.perInstance === null) throw invalid('perInstance', o.perInstance, 'an object { broker, gateway } of records/s');
  for (const c of ['broker', 'gateway'] as const) {
    const v = o.perInstance[c];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw invalid(`perInstance.${c}`, v, 'a positive number of records/s');
  }
  const headroom = o.headroom ?? PLAN_HEADROOM_DEFAULT;
  if (typeof headroom !== 'number' || !Number.isFinite(headroom) || headroom < 0 || headroom > PLAN_HEADROOM_MAX) throw invalid('headroom', headroom, `a fraction in [0, ${PLAN_HEADROOM_MAX}]`);
  const minInstances = counts('minInstances', o.minInstances, 1, 0);
  const maxInstances = counts('maxInstances', o.maxInstances, PLAN_INSTANCES_MAX, 1);
  for (const c of ['broker', 'gateway'] as const) {
    if (maxInstances[c] < minInstances[c]) throw invalid(`maxInstances.${c}`, maxInstances[c], `at least minInstances.${c} (${minInstances[c]})`);
  }
  const retrainEveryMs = integerIn('retrainEveryMs', o.retrainEveryMs ?? RETRAIN_EVERY_MS_DEFAULT, stepMs, RETRAIN_EVERY_MS_MAX);
  const stepDelayMs = integerIn('stepDelayMs', o.stepDelayMs ?? Math.min(1_000, Math.floor(stepMs / 10)), 0, Math.min(STEP_DELAY_MS_MAX, stepMs - 1));
  if (typeof o.history !== 'function') throw invalid('history', o.history, 'a function returning the steps');
  if (o.extraDemand !== undefined && typeof o.extraDemand !== 'function') throw invalid('extraDemand', o.extraDemand, 'a function returning dead regions’ forecasts');
  if (o.models !== undefined && (typeof o.models !== 'object' || o.models === null || typeof o.models.retrain !== 'function')) throw invalid('models', o.models, 'a ModelFactory');
  return { stepMs, season, horizon, leadSteps, perInstance: { ...o.perInstance }, headroom, minInstances, maxInstances, retrainEveryMs, stepDelayMs };
}
