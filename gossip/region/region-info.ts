/**
 * What each region tells the others about itself through the mesh, under `region/<name>`:
 * health of its cell, its load, a forecast summary, and the addresses other regions use to reach
 * it. Written by its gateways' mesh agents (region-publisher.ts); every region converges to the
 * same picture.
 */

/** The cell's health as the region's gateway sees it. */
export interface RegionHealth {
  /** Every partition has a live leader and the metadata answered. */
  cellReady: boolean;
  brokersAlive: number;
  brokersTotal: number;
  /** Partitions whose ISR is smaller than their replica set. */
  underReplicatedPartitions: number;
}

/** The region's ingress, and the limiter's room (filled by the flow-control issue; null until then). */
export interface RegionLoad {
  ingressRecordsPerSec: number;
  ingressBytesPerSec: number;
  capacityRecordsPerSec: number | null;
  headroomRecordsPerSec: number | null;
}

/**
 * The region's forecast and plan as the planner publishes them (forecast/planner/mesh-summary.ts
 * builds and checks it): the next hour's P50 and P10–P90 band in at most FORECAST_SUMMARY_POINTS_MAX
 * points of `pointMs` each from `t0` (each point's P50 is the mean of its steps, its P90 the largest,
 * its P10 the smallest), and
 * the most the plan wants over them. Compact on purpose: the whole region entry must fit the
 * mesh's bound on a state value (1 KiB). `{kind: 'none'}` while the region has no forecast.
 */
export type ForecastSummary =
  | { kind: 'none' }
  | {
      kind: 'forecast';
      generatedAtMs: number;
      /** Start of the first point, epoch ms. */
      t0: number;
      pointMs: number;
      p50: number[];
      p90: number[];
      /** Read as the P50 from a peer that publishes no lower band. */
      p10: number[];
      plan: { broker: number; gateway: number; ceilingPerSec: number };
      method: string;
      mode: 'predictive' | 'reactive';
    };

/** Points of a published forecast summary (12 × 5 minutes for an hour at the default step). */
export const FORECAST_SUMMARY_POINTS_MAX = 12;

/** One region's entry in the mesh state. */
export interface RegionInfo {
  region: string;
  health: RegionHealth;
  load: RegionLoad;
  forecast: ForecastSummary;
  /** Its gateways' HTTP URLs. */
  gateways: string[];
  /** Broker addresses (host:port) other regions fetch its records from. */
  brokers: string[];
}

export const NO_FORECAST: ForecastSummary = Object.freeze({ kind: 'none' });
