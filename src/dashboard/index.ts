/**
 * The capacity dashboard (issue 17): a page each gateway serves at `/dashboard`, fed once a second
 * over SSE with every region's ingress against its forecast and provisioned capacity (from the
 * mesh), and this region's limiter, cell, mesh and drills.
 */
import { systemClock, type Clock } from '../core/index.ts';
import type { CellStatus } from '../client/index.ts';
import type { CapacityReport } from '../../forecast/planner/types.ts';
import type { MeshView } from '../gateway/mesh.ts';
import type { LimiterView } from '../../ratelimit/index.ts';
import { dashboardAssets } from './assets.ts';
import { DashboardFeed, type DrillRow } from './feed.ts';
import type { DashboardDeps } from './routes.ts';
import { DashboardSampler } from './sampler.ts';

export { dashboardAssets, buildDashboardBundle, type DashboardAssets } from './assets.ts';
export { DashboardFeed, FEED_SOURCE_TIMEOUT_MS, type DashboardSnapshot, type DrillRow } from './feed.ts';
export { parseRange, registerDashboardRoutes, type DashboardDeps } from './routes.ts';
export { DashboardSampler, type RegionNow, type SamplerSources } from './sampler.ts';
export * from './limits.ts';

/** What a gateway hands the dashboard: its region and where each panel reads. */
export interface DashboardOptions {
  readonly region: string;
  readonly clock?: Clock;
  readonly mesh?: (() => MeshView | null) | undefined;
  readonly capacity?: (() => CapacityReport | null) | undefined;
  readonly limiter?: (() => LimiterView | null) | undefined;
  readonly cell?: (() => Promise<CellStatus>) | undefined;
  readonly drills?: (() => Promise<readonly DrillRow[]>) | undefined;
}

/** The dashboard of one gateway: its sampler runs from now on; `stop` ends it. */
export function createDashboard(o: DashboardOptions): DashboardDeps & { stop(): void } {
  const clock = o.clock ?? systemClock;
  const sampler = new DashboardSampler({ region: o.region, mesh: o.mesh, capacity: o.capacity, limiter: o.limiter }, clock);
  const feed = new DashboardFeed({ region: o.region, sampler, capacity: o.capacity, limiter: o.limiter, mesh: o.mesh, cell: o.cell, drills: o.drills }, clock);
  sampler.start();
  return {
    sampler,
    feed,
    assets: dashboardAssets,
    stop() {
      sampler.stop();
      feed.stop();
    },
  };
}
