/**
 * Consumer failover between regions in one gateway (docs/geo.md): while this gateway runs its
 * region's exchange, every GEO_INTERVAL_MS it publishes this region's group positions and
 * translates the other regions' into `__geo.<region>.<group>` commits; any gateway answers a
 * failover.
 */
import { silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import type { MeshStateAccess } from '../region/index.ts';
import { failoverGroup, type FailoverResult } from './failover.ts';
import type { GeoCell } from './geo-cell.ts';
import { GroupPublisher } from './group-publisher.ts';
import { GroupTranslator } from './group-translator.ts';
import { GEO_INTERVAL_MS } from './limits.ts';

export interface GeoGroupsOptions {
  mesh: MeshStateAccess;
  cell: GeoCell;
  /** The global topics now. */
  topics: () => ReadonlySet<string>;
  otherRegions: () => string[];
  /** True while this gateway runs its region's exchange (one publisher per region). */
  active: () => boolean;
  clock?: Clock;
  logger?: Logger;
  intervalMs?: number;
}

export class GeoGroups {
  readonly publisher: GroupPublisher;
  readonly translator: GroupTranslator;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private timer: TimerHandle | null = null;
  private closed = false;

  constructor(private readonly o: GeoGroupsOptions) {
    this.clock = o.clock ?? systemClock;
    this.logger = (o.logger ?? silentLogger).child({ component: 'geo-groups' });
    this.publisher = new GroupPublisher({ mesh: o.mesh, cell: o.cell, topics: o.topics, clock: this.clock, logger: this.logger });
    this.translator = new GroupTranslator({ mesh: o.mesh, cell: o.cell, otherRegions: o.otherRegions, logger: this.logger });
  }

  start(): void {
    const tick = (): void => {
      if (this.closed) return;
      this.pass()
        .catch((err) => this.logger.info({ err: (err as Error).message }, 'geo group pass failed'))
        .finally(() => {
          if (!this.closed) this.timer = this.clock.setTimeout(tick, this.o.intervalMs ?? GEO_INTERVAL_MS);
        });
    };
    tick();
  }

  /** One publication and translation pass (when this gateway runs the exchange). */
  async pass(): Promise<void> {
    if (!this.o.active()) return;
    await this.publisher.publishAll();
    await this.translator.translateAll();
  }

  failover(group: string, from: string): Promise<FailoverResult> {
    return failoverGroup({ self: this.o.mesh.self().region, otherRegions: this.o.otherRegions, translator: this.translator, cell: this.o.cell }, group, from);
  }

  stop(): void {
    this.closed = true;
    this.timer?.cancel();
  }
}
