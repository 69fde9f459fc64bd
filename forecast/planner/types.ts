/**
 * The shapes the planner shares with the gateway that runs it: the ingress history it reads and
 * the capacity report it answers with (`GET /v1/capacity` is this report plus the region and the
 * current figures).
 */

/** One step of a region's ingress, as the gateways record it (the planner forecasts `records`). */
export interface IngressStep {
  /** Start of the step, epoch ms, a multiple of the step. */
  readonly t: number;
  /** Mean records/s over the step. */
  readonly records: number;
  /** Largest per-sample records/s within the step. */
  readonly recordsMax: number;
  /** Mean bytes/s over the step. */
  readonly bytes: number;
  /** Largest per-sample bytes/s within the step. */
  readonly bytesMax: number;
}

/** One forecast step of the report. */
export interface CapacityForecastPoint {
  /** Start of the step, epoch ms. */
  readonly t: number;
  readonly p50: number;
  readonly p90: number;
}

/** One plan step of the report: what is wanted for [t, t + step), decided at t − lead. */
export interface CapacityPlanPoint {
  readonly t: number;
  readonly instances: { readonly broker: number; readonly gateway: number };
  /** The limiter ceiling for the step (records/s). */
  readonly ceilingPerSec: number;
}

export type PlannerMode = 'predictive' | 'reactive';

/** Which model forecasts, how it scored, and whether the planner trusts it. */
export interface CapacityModel {
  /** `lstm`, `seasonal_naive`, `holt_winters_add`, `last_value`. */
  readonly method: string;
  /** When the model in use was trained (ISO 8601), null before the first fit. */
  readonly trainedAt: string | null;
  /** MASE of the selection backtest on the history, null when there was none (cold start). */
  readonly backtestMase: number | null;
  /** Rolling MASE of the live forecasts against what arrived, null until scored. */
  readonly liveMase: number | null;
  readonly mode: PlannerMode;
}
