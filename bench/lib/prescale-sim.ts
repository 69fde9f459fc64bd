/**
 * The autoscaling simulation of the pre-scaling benchmark (issue 15, benchmark 1), pure so it is
 * tested on its own: a plan (instances per step) against the demand that arrived, the reactive
 * HPA rule, and the tuning of a rival's headroom to the planner's cost.
 */
import { instancesFor, PLAN_HEADROOM_MAX } from '../../forecast/planner/plan-arithmetic.ts';

/** Lowest headroom the tuning tries (fraction): a rival whose band is wider than the planner's may need to go under its forecast to match the cost. */
export const TUNE_HEADROOM_MIN = -0.95;
/** Bisection steps: (10 + 0.95) / 2^60 is far below any change of one instance-step. */
export const TUNE_ITERATIONS_MAX = 60;

/** What a plan did against the demand. */
export interface SimFigures {
  /** Steps where demand > k × C. */
  readonly underSteps: number;
  /** Σ max(0, demand − k × C). */
  readonly shed: number;
  /** Σ k. */
  readonly instanceSteps: number;
}

/** Scores instances[i] (for demand[i]) at C records/s per instance. */
export function simulate(demand: ArrayLike<number>, instances: ArrayLike<number>, perInstance: number): SimFigures {
  if (demand.length !== instances.length) throw new Error(`simulate: ${demand.length} demand steps, ${instances.length} plan steps`);
  let underSteps = 0;
  let shed = 0;
  let instanceSteps = 0;
  for (let i = 0; i < demand.length; i++) {
    const k = instances[i] as number;
    const capacity = k * perInstance;
    const d = demand[i] as number;
    if (d > capacity) {
      underSteps++;
      shed += d - capacity;
    }
    instanceSteps += k;
  }
  return { underSteps, shed, instanceSteps };
}

/** Instances from an upper band (one value per step) at headroom h. */
export function bandInstances(p90: ArrayLike<number>, perInstance: number, headroom: number): Int32Array {
  const out = new Int32Array(p90.length);
  for (let i = 0; i < p90.length; i++) out[i] = instancesFor(p90[i] as number, { perInstance, headroom });
  return out;
}

/**
 * The HPA rule for t = from … rows − 1: desired_t = max(1, ⌈y[t − lead − 1] × (1 + h) / C⌉), the
 * last value known when the decision is taken at t − lead.
 */
export function reactiveInstances(y: ArrayLike<number>, from: number, lead: number, perInstance: number, headroom: number): Int32Array {
  if (from - lead - 1 < 0) throw new Error(`reactiveInstances: from ${from} leaves no value before t − lead (${lead})`);
  const out = new Int32Array(y.length - from);
  for (let t = from; t < y.length; t++) out[t - from] = instancesFor(y[t - lead - 1] as number, { perInstance, headroom });
  return out;
}

/** A tuned headroom and the cost it reached. */
export interface Tuned {
  readonly headroom: number;
  readonly instanceSteps: number;
  /** False when even TUNE_HEADROOM_MIN costs more than the target (the rival is then dearer). */
  readonly reached: boolean;
  readonly iterations: number;
}

/**
 * The largest h in [TUNE_HEADROOM_MIN, PLAN_HEADROOM_MAX] whose instance-steps do not exceed
 * `target` (cost is non-decreasing in h), by bisection: equal cost as close as integers allow,
 * never above it.
 */
export function tuneHeadroom(costAt: (headroom: number) => number, target: number): Tuned {
  let lo = TUNE_HEADROOM_MIN;
  let hi = PLAN_HEADROOM_MAX;
  const atLo = costAt(lo);
  if (atLo > target) return { headroom: lo, instanceSteps: atLo, reached: false, iterations: 0 };
  const atHi = costAt(hi);
  if (atHi <= target) return { headroom: hi, instanceSteps: atHi, reached: true, iterations: 0 };
  let best = atLo;
  let iterations = 0;
  // Invariant: costAt(lo) ≤ target < costAt(hi).
  while (iterations < TUNE_ITERATIONS_MAX && best !== target) {
    iterations++;
    const mid = (lo + hi) / 2;
    const cost = costAt(mid);
    if (cost <= target) {
      lo = mid;
      best = cost;
    } else {
      hi = mid;
    }
  }
  return { headroom: lo, instanceSteps: best, reached: true, iterations };
}

/** Share of steps whose demand is at or below the band. */
export function coverage(demand: ArrayLike<number>, p90: ArrayLike<number>): number {
  let inside = 0;
  for (let i = 0; i < demand.length; i++) if ((demand[i] as number) <= (p90[i] as number)) inside++;
  return demand.length === 0 ? Number.NaN : inside / demand.length;
}
