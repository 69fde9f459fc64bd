/**
 * The live feed behind `GET /v1/dashboard/stream`: one snapshot a second of everything the page
 * shows (every region's newest point and forecast from the sampler, and this region's planner
 * model, limiter, cell, mesh and drills), built once and shared by every open stream. It runs only
 * while someone listens: the cell status is a request to every broker, not worth making for no one.
 * A source that fails or is slow (a cell without its arbiter) shows as an error in its panel; the
 * snapshot still goes out on time.
 */
import type { Clock, TimerHandle } from '../core/index.ts';
import { EdgeqError, toEdgeqError } from '../core/index.ts';
import { withDeadline } from '../client/hedged.ts';
import type { CellStatus } from '../client/index.ts';
import type { CapacityReport } from '../../forecast/planner/types.ts';
import type { MeshView } from '../gateway/mesh.ts';
import type { LimiterView } from '../../ratelimit/index.ts';
import { DASHBOARD_SAMPLE_MS } from './limits.ts';
import { readSource, type DashboardSampler, type RegionNow } from './sampler.ts';

/** How long the feed waits for the cell status or the drill list before it sends without them. */
export const FEED_SOURCE_TIMEOUT_MS = 800;

/** One drill as the drills panel lists it (the fields of `GET /v1/drills`). */
export interface DrillRow {
  id: string;
  scenario: string;
  region: string | null;
  startedAt: string;
  verdict: string | null;
  state: string;
  detectMs: number | null;
  recoverMs: number | null;
  convergeMs: number | null;
  lost: number | null;
}

export interface FeedSources {
  readonly region: string;
  readonly sampler: DashboardSampler;
  readonly capacity?: (() => CapacityReport | null) | undefined;
  readonly limiter?: (() => LimiterView | null) | undefined;
  readonly mesh?: (() => MeshView | null) | undefined;
  readonly cell?: (() => Promise<CellStatus>) | undefined;
  readonly drills?: (() => Promise<readonly DrillRow[]>) | undefined;
}

/** A panel's data, or why it has none. */
export type Panel<T> = { ok: true; data: T } | { ok: false; code: string; detail: string };

/** One event of the stream. */
export interface DashboardSnapshot {
  t: number;
  region: string;
  regions: RegionNow[];
  model: CapacityReport['model'] | null;
  stepMs: number | null;
  limiter: LimiterView | null;
  cell: Panel<CellStatus> | null;
  mesh: Pick<MeshView, 'self' | 'members' | 'replication' | 'exchange'> | null;
  drills: Panel<readonly DrillRow[]> | null;
}

type Listener = (s: DashboardSnapshot) => void;

/** `p`'s answer as a panel, or why there is none (its error, or no answer within `ms`). */
function within<T>(p: Promise<T>, ms: number, clock: Clock): Promise<Panel<T>> {
  return withDeadline(p, ms, clock, () => new EdgeqError('REQUEST_TIMED_OUT', `no answer within ${ms} ms`)).then(
    (data): Panel<T> => ({ ok: true, data }),
    (err: unknown): Panel<T> => {
      const e = toEdgeqError(err);
      return { ok: false, code: e.code, detail: e.message };
    },
  );
}

export class DashboardFeed {
  private readonly listeners = new Set<Listener>();
  private timer: TimerHandle | null = null;
  private building = false;
  private lastSnapshot: DashboardSnapshot | null = null;

  constructor(
    private readonly sources: FeedSources,
    private readonly clock: Clock,
  ) {}

  /** Adds a listener (it gets the newest snapshot at once when there is one); returns the remover. */
  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    if (this.lastSnapshot) fn(this.lastSnapshot);
    if (!this.timer && !this.building) void this.tick();
    return () => {
      this.listeners.delete(fn);
      if (this.listeners.size === 0) {
        this.timer?.cancel();
        this.timer = null;
      }
    };
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Builds one snapshot now. */
  async snapshot(): Promise<DashboardSnapshot> {
    const s = this.sources;
    const report = readSource(s.capacity);
    const mesh = readSource(s.mesh);
    const [cell, drills] = await Promise.all([
      s.cell ? within(s.cell(), FEED_SOURCE_TIMEOUT_MS, this.clock) : Promise.resolve(null),
      s.drills ? within(s.drills(), FEED_SOURCE_TIMEOUT_MS, this.clock) : Promise.resolve(null),
    ]);
    return {
      t: this.clock.nowMs(),
      region: s.region,
      regions: s.sampler.now(),
      model: report?.model ?? null,
      stepMs: report?.step ?? null,
      limiter: readSource(s.limiter),
      cell,
      mesh: mesh ? { self: mesh.self, members: mesh.members, replication: mesh.replication, exchange: mesh.exchange } : null,
      drills,
    };
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (this.listeners.size === 0) return;
    this.building = true;
    try {
      const snap = await this.snapshot();
      this.lastSnapshot = snap;
      for (const fn of [...this.listeners]) fn(snap);
    } finally {
      this.building = false;
    }
    if (this.listeners.size > 0 && !this.timer) this.timer = this.clock.setTimeout(() => void this.tick(), DASHBOARD_SAMPLE_MS);
  }

  /** Stops the feed (listeners stay; the streams end on their own). */
  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    this.listeners.clear();
  }
}
