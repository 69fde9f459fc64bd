/** The stream's snapshot as the page reads it (src/dashboard/feed.ts is the source of truth). */
export interface Point {
  t: number;
  ingress: number | null;
  capacity: number | null;
  ceiling: number | null;
  p50: number | null;
  p10: number | null;
  p90: number | null;
  brokers: number | null;
  gateways: number | null;
}
export interface RegionNow {
  region: string;
  point: Point | null;
  forecast: { t: number; p50: number; p10: number; p90: number }[];
  mode: 'predictive' | 'reactive' | null;
  method: string | null;
  health: { cellReady: boolean; brokersAlive: number; brokersTotal: number; underReplicatedPartitions: number } | null;
}
type Panel<T> = { ok: true; data: T } | { ok: false; code: string; detail: string };
export interface Snapshot {
  t: number;
  region: string;
  regions: RegionNow[];
  model: { method: string; trainedAt: string | null; backtestMase: number | null; liveMase: number | null; mode: 'predictive' | 'reactive' } | null;
  stepMs: number | null;
  limiter: {
    controller: string;
    capacityPerSec: number | null;
    demandPerSec: number;
    binding: string | null;
    pressure: number;
    tenants: { tenant: string; weight: number; demandPerSec: number; admittedPerSec: number; throttledPerSec: number; sharePerSec: number | null }[];
  } | null;
  cell: Panel<{
    brokers: { id: number; host: string; port: number; alive: boolean }[];
    partitions: { topic: string; partition: number; leaderId: number; leaderEpoch: number; isr: number[]; replicas: number[]; highWatermark: number }[];
    unreachable: number[];
  }> | null;
  mesh: {
    self: { region: string; member: string };
    members: { region: string; member: string; state: string; phi: number; lastHeardMs: number; rttMs: number | null }[];
    replication: { origin: string; topic: string; partition: number; lagRecords: number; lagMs: number; stalled: boolean }[];
    exchange: { links: { source: string; healthy: boolean; bytesPerSec: number; recordsTotal: number }[]; gaps: { origin: string; topic: string; partition: number; firstMissingOriginOffset: number; lastMissingOriginOffset: number; records: number; detectedAtMs: number }[] };
  } | null;
  drills: Panel<{ id: string; scenario: string; region: string | null; startedAt: string; verdict: string | null; state: string; detectMs: number | null; recoverMs: number | null; convergeMs: number | null; lost: number | null }[]> | null;
}
export interface History {
  range: string;
  stepMs: number;
  regions: Record<string, { t: number[] } & Record<'ingress' | 'capacity' | 'ceiling' | 'p50' | 'p10' | 'p90' | 'brokers' | 'gateways', (number | null)[]>>;
}
