/**
 * The planner's arithmetic, one place for the CLI, the live planner and the benchmark: how many
 * instances a demand needs and the limiter ceiling that goes with them. Pure, so every caller
 * computes the same plan from the same P90.
 */
import { EdgeqError } from '../../src/core/index.ts';

/** The planner's default headroom over the P90 (fraction): the band already covers 90% of steps. */
export const PLAN_HEADROOM_DEFAULT = 0;
/** Largest headroom accepted (fraction): 10x the P90 is a misconfiguration, not a plan. */
export const PLAN_HEADROOM_MAX = 10;
/** Largest instance count a plan may ask for (a bound on what one region's autoscaler is told). */
export const PLAN_INSTANCES_MAX = 10_000;

/** How demand becomes instances. */
export interface PlanShape {
  /** Records/s one instance serves (C). */
  readonly perInstance: number;
  /** Fraction over the P90 (h): k = ⌈p90 × (1 + h) / C⌉. */
  readonly headroom: number;
  /** At least this many (default 1). */
  readonly min?: number;
  /** At most this many (default PLAN_INSTANCES_MAX). */
  readonly max?: number;
}

/** Checks a plan shape; typed errors naming the value. */
export function checkPlanShape(shape: PlanShape, field = 'plan'): void {
  const { perInstance, headroom } = shape;
  const min = shape.min ?? 1;
  const max = shape.max ?? PLAN_INSTANCES_MAX;
  if (typeof perInstance !== 'number' || !Number.isFinite(perInstance) || perInstance <= 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `${field}.perInstance must be a positive number of records/s, got ${String(perInstance)}`, { details: { field: `${field}.perInstance`, value: perInstance } });
  }
  if (typeof headroom !== 'number' || !Number.isFinite(headroom) || headroom < 0 || headroom > PLAN_HEADROOM_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `${field}.headroom must be a fraction in [0, ${PLAN_HEADROOM_MAX}], got ${String(headroom)}`, { details: { field: `${field}.headroom`, value: headroom } });
  }
  if (!Number.isSafeInteger(min) || min < 0 || min > PLAN_INSTANCES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `${field}.min must be an integer in [0, ${PLAN_INSTANCES_MAX}], got ${String(min)}`, { details: { field: `${field}.min`, value: min } });
  }
  if (!Number.isSafeInteger(max) || max < Math.max(1, min) || max > PLAN_INSTANCES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `${field}.max must be an integer in [max(1, min), ${PLAN_INSTANCES_MAX}], got ${String(max)}`, { details: { field: `${field}.max`, value: max } });
  }
}

/** k = clamp(⌈p90 × (1 + h) / C⌉, min, max). A negative or non-finite P90 counts as 0. */
export function instancesFor(p90: number, shape: PlanShape): number {
  const demand = Number.isFinite(p90) && p90 > 0 ? p90 : 0;
  // The epsilon keeps an exact multiple (p90 = 3C) at 3 instead of 4 after float rounding.
  const raw = Math.ceil((demand * (1 + shape.headroom)) / shape.perInstance - 1e-9);
  return Math.min(shape.max ?? PLAN_INSTANCES_MAX, Math.max(shape.min ?? 1, raw));
}

/** Σ max(1, ⌈demand/C⌉): the instance-steps of a plan that knew every step's demand (the benchmark's yardstick). */
export function oracleInstanceSteps(demand: ArrayLike<number>, perInstance: number): number {
  let sum = 0;
  for (let i = 0; i < demand.length; i++) sum += Math.max(1, Math.ceil(demand[i]! / perInstance - 1e-9));
  return sum;
}
