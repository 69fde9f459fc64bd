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
  /** The lower band (P10); the P50 when the model has none. */
  readonly p10: number;
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

/** The body of `GET /v1/capacity`: the planner's report with the region and the figures of now. */
export interface CapacityReport {
  readonly region: string;
  /** The step of the ingress history and the plan, ms. */
  readonly step: number;
  readonly now: {
    /** Records/s of the last closed step (the region's, all its gateways). */
    readonly ingressPerSec: number;
    /** The limiter's capacity now (records/s); null with no limiter or the `none` law. */
    readonly capacityPerSec: number | null;
  };
  readonly forecast: readonly CapacityForecastPoint[];
  /** The plan; a ceiling of null: none (reactive mode, the load controller alone). */
  readonly plan: readonly (Omit<CapacityPlanPoint, 'ceilingPerSec'> & { readonly ceilingPerSec: number | null })[];
  readonly model: CapacityModel;
}

/** What an autoscaler scrapes (the gateway's planner gauges). */
export interface PlannerGauges {
  /** The forecast for the step being decided now (now + lead), by quantile. */
  readonly p50: number;
  readonly p90: number;
  readonly p10: number;
  /** Instances to have ready at now + lead (start them now: they take the lead to be ready). */
  readonly desired: { readonly broker: number; readonly gateway: number };
  readonly mode: PlannerMode;
  readonly liveMase: number | null;
}
