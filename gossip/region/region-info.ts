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

/** The forecast summary slot (filled by the pre-scaling issue): a typed empty value until then. */
export type ForecastSummary = { kind: 'none' } | { kind: 'forecast'; horizonMs: number; peakRecordsPerSec: number; p90RecordsPerSec: number; generatedAtMs: number };

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
