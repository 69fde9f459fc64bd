/**
 * Publishes this region's entry (`region/<name>`: health, load, forecast, addresses) into the mesh
 * state every `publishIntervalMs`. Health comes from the cell (an injected probe, bounded in time),
 * load from the gateway's cumulative ingress counters (rates over the interval). An unchanged
 * entry is written again only every `refreshIntervalMs`, so the mesh carries a change within one
 * interval without a new version every second for nothing.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import { MeshKeys, type MeshStateAccess } from './mesh-state.ts';
import { NO_FORECAST, type ForecastSummary, type RegionHealth, type RegionInfo, type RegionLoad } from './region-info.ts';

/** How often the entry is refreshed from its sources. */
export const REGION_PUBLISH_INTERVAL_MS = 1_000;
/** Longest an unchanged entry goes without a new version (its `updatedAt` shows it is current). */
export const REGION_REFRESH_INTERVAL_MS = 10_000;
/** Bytes of the entry: the mesh's default bound on one state value (stateValueBytesMax). */
export const REGION_ENTRY_BYTES_MAX = 1024;
/** Bound on one health probe of the cell. */
export const REGION_HEALTH_TIMEOUT_MS = 2_000;

/** Where the entry's parts come from. */
export interface RegionSources {
  /** The cell's health; rejects (or times out) when the cell does not answer. */
  health(): Promise<RegionHealth>;
  /** Records and bytes taken in since start (the gateway's counters). */
  ingressTotals(): { records: number; bytes: number };
  /** Capacity and headroom of the limiter; null until flow control fills them. */
  capacity?(): { capacityRecordsPerSec: number; headroomRecordsPerSec: number } | null;
  /** The forecast summary; the typed empty value until pre-scaling fills it. */
  forecast?(): ForecastSummary;
  gateways: string[];
  brokers: string[];
}

const UNKNOWN_HEALTH: RegionHealth = Object.freeze({ cellReady: false, brokersAlive: 0, brokersTotal: 0, underReplicatedPartitions: 0 });

/** Keeps `region/<this region>` current in the mesh state. */
export class RegionPublisher {
  private timer: TimerHandle | null = null;
  private last: { json: string; atMs: number } | null = null;
  private prevTotals: { records: number; bytes: number; atMs: number } | null = null;
  private stopped = false;
  private inFlight: Promise<void> | null = null;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly publishIntervalMs: number;
  private readonly refreshIntervalMs: number;

  constructor(
    private readonly mesh: MeshStateAccess,
    private readonly sources: RegionSources,
    options: { clock?: Clock; logger?: Logger; publishIntervalMs?: number; refreshIntervalMs?: number } = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'region-publisher' });
    this.publishIntervalMs = options.publishIntervalMs ?? REGION_PUBLISH_INTERVAL_MS;
    this.refreshIntervalMs = options.refreshIntervalMs ?? REGION_REFRESH_INTERVAL_MS;
  }

  /** Publishes now and then every interval. */
  start(): void {
    const tick = () => {
      this.inFlight = this.publish()
        .then(
          () => undefined,
          (err: unknown) => this.logger.warn({ code: toEdgeqError(err).code, err: toEdgeqError(err).message }, 'could not publish the region entry'),
        )
        .finally(() => {
          this.inFlight = null;
          if (!this.stopped) this.timer = this.clock.setTimeout(tick, this.publishIntervalMs);
        });
    };
    tick();
  }

  /** Stops publishing; resolves once a publish under way has ended (nothing is written after). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.inFlight;
  }

  /** Gathers the entry and writes it when it changed or is due for a refresh. */
  async publish(): Promise<RegionInfo> {
    let info = await this.gather();
    let json = JSON.stringify(info);
    if (Buffer.byteLength(json) > REGION_ENTRY_BYTES_MAX && info.forecast.kind !== 'none') {
      // The forecast is the part that can be left out: health, load and addresses are what the
      // mesh is for. A region with many gateways or brokers publishes no forecast rather than none at all.
      this.logger.warn({ bytes: Buffer.byteLength(json), max: REGION_ENTRY_BYTES_MAX }, 'region entry too large with its forecast: published without it');
      info = { ...info, forecast: NO_FORECAST };
      json = JSON.stringify(info);
    }
    const now = this.clock.monotonicMs();
    if (!this.stopped && (!this.last || this.last.json !== json || now - this.last.atMs >= this.refreshIntervalMs)) {
      this.mesh.setState(MeshKeys.region(info.region), info);
      this.last = { json, atMs: now };
    }
    return info;
  }

  private async gather(): Promise<RegionInfo> {
    let health = UNKNOWN_HEALTH;
    try {
      health = await this.bounded(this.sources.health());
    } catch (err) {
      this.logger.debug({ code: toEdgeqError(err).code }, 'cell health unknown');
    }
    return {
      region: this.mesh.self().region,
      health,
      load: this.load(),
      forecast: this.sources.forecast?.() ?? NO_FORECAST,
      gateways: [...this.sources.gateways],
      brokers: [...this.sources.brokers],
    };
  }

  /** The probe, or TIMEOUT after REGION_HEALTH_TIMEOUT_MS (a frozen cell must not stall publishing). */
  private bounded<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => reject(new EdgeqError('TIMEOUT', `the cell's health did not come within ${REGION_HEALTH_TIMEOUT_MS} ms`)), REGION_HEALTH_TIMEOUT_MS);
      p.then(
        (v) => {
          timer.cancel();
          resolve(v);
        },
        (e: unknown) => {
          timer.cancel();
          reject(e);
        },
      );
    });
  }

  /** Ingress rates over the time since the previous publish (0 at the first). */
  private load(): RegionLoad {
    const totals = this.sources.ingressTotals();
    const now = this.clock.monotonicMs();
    const prev = this.prevTotals;
    this.prevTotals = { ...totals, atMs: now };
    const seconds = prev ? (now - prev.atMs) / 1000 : 0;
    // Rounded: sub-record precision would make every entry differ and defeat the change check.
    const rate = (d: number) => (seconds > 0 ? Math.max(0, Math.round(d / seconds)) : 0);
    const capacity = this.sources.capacity?.() ?? null;
    return {
      ingressRecordsPerSec: prev ? rate(totals.records - prev.records) : 0,
      ingressBytesPerSec: prev ? rate(totals.bytes - prev.bytes) : 0,
      capacityRecordsPerSec: capacity?.capacityRecordsPerSec ?? null,
      headroomRecordsPerSec: capacity?.headroomRecordsPerSec ?? null,
    };
  }
}
