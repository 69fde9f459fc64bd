/**
 * A global quota's share in this region. A quota marked `"scope": "global"` is shared by every
 * region; each region's share follows its recent demand, exchanged over the mesh (the idea of
 * Google's Doorman and Envoy's global rate limit, without a central server).
 *
 * Every interval a region publishes `{demand, share}` under `gquota/<quota>/<region>` and works
 * out its share again from what the others published:
 *  - a region not heard from for `staleMs` (cut off, or down) keeps the share it last published:
 *    it is reserved for it, and the rest is split among the regions that are heard from;
 *  - the rest is split by demand, with a floor so an idle region can start sending;
 *  - a share moves at most `maxStep` of the quota per interval, and grows only into capacity the
 *    others' published shares leave free.
 * A region cut off from every other sees them all stale: it keeps (about) its last share, as the
 * others keep reserving it. The bound: in steady state the shares sum to the quota; while news
 * travels (one gossip delay), regions growing at once into the same freed capacity can overshoot
 * it by at most (regions − 1) × maxStep × quota.
 */
import type { Clock } from '../src/core/index.ts';
import type { MeshStateAccess } from '../gossip/region/index.ts';

export interface GlobalShareOptions {
  /** The quota's id in the mesh (its tenant and topic). */
  quotaId: string;
  /** The quota for all regions together (records/s or bytes/s). */
  totalPerSec: number;
  /** A region not heard from for this long keeps its last share, reserved. */
  staleMs: number;
  /** Largest move of a share in one interval, as a fraction of the quota. */
  maxStep: number;
  /** Part of the split given equally (so an idle region can start), as a fraction. */
  floorFraction: number;
  /** Regions in the mesh, this one included (from their region entries): bounds a first share. */
  regions: () => number;
}

export const GLOBAL_SHARE_DEFAULTS = Object.freeze({ staleMs: 3_000, maxStep: 0.1, floorFraction: 0.1, regions: () => 1 });

interface Published {
  demand: number;
  share: number;
}

const PREFIX = 'gquota/';

export class GlobalShare {
  private current: number | null = null;
  private readonly o: GlobalShareOptions;

  constructor(
    private readonly mesh: MeshStateAccess,
    private readonly clock: Clock,
    o: Partial<GlobalShareOptions> & { quotaId: string; totalPerSec: number },
  ) {
    this.o = { ...GLOBAL_SHARE_DEFAULTS, ...o };
  }

  /**
   * This region's share now. Before its first tick: an equal split among the regions of the
   * mesh, and no more than the others' published shares leave free. Regions that start together
   * (none has published yet) split evenly; one that joins later grows into what the others
   * release, it does not start on top of them.
   */
  share(): number {
    if (this.current !== null) return this.current;
    const free = this.o.totalPerSec - this.others().reduce((s, x) => s + x.p.share, 0);
    return Math.max(0, Math.min(free, this.o.totalPerSec / Math.max(1, this.o.regions())));
  }

  /** One interval: this region's demand (records/s offered); returns its new share. */
  tick(demandPerSec: number): number {
    const Q = this.o.totalPerSec;
    const now = this.clock.nowMs();
    const others = this.others();
    const stale = others.filter((x) => now - x.atMs > this.o.staleMs);
    const fresh = others.filter((x) => now - x.atMs <= this.o.staleMs);
    // Regions of the mesh that have not published yet hold their equal split, reserved: two
    // regions starting together must not each take the whole quota before hearing of the other.
    const unheard = Math.max(0, this.o.regions() - 1 - others.length) * (Q / Math.max(1, this.o.regions()));
    const reserved = stale.reduce((n, x) => n + x.p.share, 0) + unheard;
    const remainder = Math.max(0, Q - reserved);
    const participants = [{ demand: Math.max(0, demandPerSec) }, ...fresh.map((x) => ({ demand: Math.max(0, x.p.demand) }))];
    const n = participants.length;
    const floor = (this.o.floorFraction * remainder) / n;
    const totalDemand = participants.reduce((s, x) => s + x.demand, 0);
    const target = totalDemand > 0 ? floor + (remainder - n * floor) * (participants[0]!.demand / totalDemand) : remainder / n;
    const was = this.share();
    const step = this.o.maxStep * Q;
    let next = Math.min(was + step, Math.max(was - step, target));
    if (next > was) {
      // Grow only into what the others' published shares leave free.
      const free = Q - others.reduce((s, x) => s + x.p.share, 0) - unheard;
      next = Math.max(was, Math.min(next, free));
    }
    this.current = Math.max(0, next);
    this.mesh.setState(`${PREFIX}${this.o.quotaId}/${this.mesh.self().region}`, { demand: demandPerSec, share: this.current });
    return this.current;
  }

  /** The other regions' last publications for this quota, with when they were written. */
  private others(): { region: string; p: Published; atMs: number }[] {
    const mine = `${PREFIX}${this.o.quotaId}/`;
    const self = this.mesh.self().region;
    const out: { region: string; p: Published; atMs: number }[] = [];
    for (const e of this.mesh.state()) {
      if (e.deleted || !e.key.startsWith(mine)) continue;
      const region = e.key.slice(mine.length);
      const v = e.value as Published;
      if (region === self || typeof v?.share !== 'number' || typeof v?.demand !== 'number') continue;
      out.push({ region, p: v, atMs: e.updatedAtMs });
    }
    return out;
  }
}
