/**
 * The quotas a gateway enforces: the cell's quotas (read through QuotaAdmin every `refreshMs`, so
 * a change made through any gateway, the CLI or the admin API applies here within one interval;
 * a change made through this gateway applies at once), their buckets (QuotaBook), and for global
 * quotas this region's share, which follows its demand over the mesh (GlobalShare).
 *
 * A request over quota is refused with QUOTA_EXCEEDED carrying its response headers: Retry-After
 * (with jitter) and the RateLimit-Policy / RateLimit fields of draft-ietf-httpapi-ratelimit-
 * headers-11. Nothing is taken from the buckets by a refused request.
 *
 * If the cell cannot be read, the quotas last read stay in force (a gateway that lost its cell
 * cannot write either) and the failure is logged once per streak.
 */
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '../src/core/index.ts';
import type { MeshStateAccess } from '../gossip/region/index.ts';
import { GlobalShare, GLOBAL_SHARE_DEFAULTS } from './global-share.ts';
import { rateLimitHeaders, retryAfterSec } from './headers.ts';
import type { QuotaAdmin } from './quota-admin.ts';
import { QuotaBook, type Admission } from './quota-book.ts';
import { GlobalQuotaCatalogue } from './quota-catalogue.ts';
import { quotaKey, sameQuota, type Quota } from './quota.ts';

/** How often the cell's quotas are read again (and global shares worked out): "one interval". */
export const QUOTA_REFRESH_MS = 1_000;

export interface QuotaEnforcerOptions {
  admin: QuotaAdmin;
  clock?: Clock;
  logger?: Logger;
  refreshMs?: number;
  /** The mesh, for global quotas (definitions and shares); absent: a global quota is enforced whole here. */
  mesh?: MeshStateAccess | null;
  /** Regions of the mesh, this one included (bounds a first share). */
  regions?: () => number;
  random?: () => number;
}

/** A quota as this gateway enforces it. */
export interface QuotaInForce extends Quota {
  /** This region's share of a global quota (records/s); the quota itself for a local one. */
  regionRecordsPerSec: number;
  regionBytesPerSec: number;
}

/** The bound on the sum of a global quota's regional shares (see global-share.ts). */
export function globalShareBound(quotaPerSec: number, regions: number, maxStep = GLOBAL_SHARE_DEFAULTS.maxStep): number {
  return quotaPerSec * (1 + Math.max(0, regions - 1) * maxStep);
}

export class QuotaEnforcer {
  readonly book: QuotaBook;
  private catalogue: GlobalQuotaCatalogue | null = null;
  private mesh: MeshStateAccess | null = null;
  private regions: () => number = GLOBAL_SHARE_DEFAULTS.regions;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly refreshMs: number;
  private readonly random: () => number;
  /** The quotas as stored (global ones whole). */
  private configured = new Map<string, Quota>();
  private readonly shares = new Map<string, GlobalShare>();
  private lastTickMs: number;
  private timer: TimerHandle | null = null;
  private closed = false;
  private started = false;
  private failing = false;
  private refreshing: Promise<void> | null = null;
  private stopWatch: (() => void) | null = null;

  constructor(private readonly o: QuotaEnforcerOptions) {
    this.clock = o.clock ?? systemClock;
    this.logger = o.logger ?? silentLogger;
    this.refreshMs = o.refreshMs ?? QUOTA_REFRESH_MS;
    this.random = o.random ?? Math.random;
    this.book = new QuotaBook(this.clock);
    this.lastTickMs = this.clock.monotonicMs();
    if (o.mesh) this.attachMesh(o.mesh, o.regions ?? GLOBAL_SHARE_DEFAULTS.regions);
  }

  /**
   * Gives the enforcer the mesh (a gateway starts its mesh agent after its HTTP server): from now
   * on global quotas' definitions follow the mesh and each is enforced at this region's share.
   * Until then a global quota is enforced whole here (the few milliseconds of a start).
   */
  attachMesh(mesh: MeshStateAccess, regions: () => number): void {
    this.mesh = mesh;
    this.regions = regions;
    this.catalogue = new GlobalQuotaCatalogue(mesh, this.o.admin, this.logger);
    this.shares.clear();
    if (this.started) this.watch();
  }

  private watch(): void {
    this.stopWatch?.();
    this.stopWatch = this.catalogue?.onChange(() => void this.refresh()) ?? null;
  }

  /** Where the quotas are stored. */
  get admin(): QuotaAdmin {
    return this.o.admin;
  }

  /** Reads the quotas once (a failure is logged, not thrown), then every refreshMs. */
  async start(): Promise<void> {
    await this.refresh();
    this.started = true;
    this.watch();
    const loop = (): void => {
      if (this.closed) return;
      this.timer = this.clock.setTimeout(() => {
        void this.interval().finally(loop);
      }, this.refreshMs);
    };
    loop();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.stopWatch?.();
  }

  /**
   * One interval: the quotas read again, and each global quota's share worked out from this
   * region's demand since the last interval. Only the timer runs it: a share moves at most
   * `maxStep` per interval, so extra ticks (a listing, a mesh change) would let it move faster.
   */
  async interval(): Promise<void> {
    await this.refresh();
    this.tickShares();
  }

  /** Reads the cell's quotas, reconciles global ones with the mesh, and applies them. */
  refresh(): Promise<void> {
    // One at a time: a mesh change and the timer may both ask.
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    try {
      let list = await this.o.admin.listQuotas();
      if (this.catalogue && (await this.catalogue.reconcile(list))) list = await this.o.admin.listQuotas();
      this.apply(list);
      if (this.failing) this.logger.info({}, 'quotas read from the cell again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.logger.warn({ err: (err as Error).message }, 'quotas could not be read from the cell; the last ones read stay in force');
      this.failing = true;
    }
  }

  /** A quota stored through this gateway: in force at once, and published when global. */
  stored(q: Quota): void {
    this.configured.set(quotaKey(q.tenant, q.topic), q);
    this.install(q);
    if (q.scope === 'global') this.catalogue?.publish(q);
  }

  /** A quota deleted through this gateway. */
  deleted(tenant: string, topic: string): void {
    const q = this.configured.get(quotaKey(tenant, topic));
    this.configured.delete(quotaKey(tenant, topic));
    this.book.delete(tenant, topic);
    this.shares.delete(quotaKey(tenant, topic));
    if (q?.scope === 'global') this.catalogue?.withdraw(tenant, topic);
  }

  /** The quotas in force, with this region's share of global ones. */
  list(): QuotaInForce[] {
    return [...this.configured.values()]
      .sort((a, b) => a.tenant.localeCompare(b.tenant) || a.topic.localeCompare(b.topic))
      .map((q) => {
        const eff = this.effective(q);
        return { ...q, regionRecordsPerSec: eff.recordsPerSec, regionBytesPerSec: eff.bytesPerSec };
      });
  }

  get(tenant: string, topic: string): QuotaInForce | undefined {
    return this.list().find((q) => q.tenant === tenant && q.topic === topic);
  }

  /**
   * Before a body is read: refuses when its size alone (Content-Length) is already over the
   * bytes budget. Takes nothing.
   */
  precheck(tenant: string, topic: string, bytes: number): void {
    const a = this.book.peekBytes(tenant, topic, bytes);
    if (!a.ok) throw this.refusal(a, tenant, topic);
  }

  /** Admits a parsed request or throws QUOTA_EXCEEDED; returns the RateLimit headers of an admitted one. */
  admit(tenant: string, topic: string, records: number, bytes: number): Record<string, string> {
    const a = this.book.admit(tenant, topic, records, bytes);
    if (!a.ok) throw this.refusal(a, tenant, topic);
    return a.policies.length > 0 ? rateLimitHeaders(a.policies) : {};
  }

  /** Gives back what an admitted request took, when a later check refused it (nothing was written). */
  release(tenant: string, topic: string, records: number, bytes: number): void {
    this.book.release(tenant, topic, records, bytes);
  }

  private refusal(a: Admission, tenant: string, topic: string): EdgeqError {
    const q = a.quota!;
    const policy = a.policies[a.violated === 'bytes' ? 1 : 0]?.name ?? 'tenant';
    const retry = retryAfterSec(a.throttleMs, this.random);
    const eff = this.effective(q);
    const what = a.violated === 'bytes' ? `${eff.bytesPerSec} bytes/s` : `${eff.recordsPerSec} records/s`;
    const of = q.topic === '*' ? `tenant "${tenant}"` : `tenant "${tenant}" on topic "${topic}"`;
    return new EdgeqError('QUOTA_EXCEEDED', `${of} is over its quota of ${what}${q.scope === 'global' ? ' (this region\'s share of a global quota)' : ''}; retry in ${retry} s`, {
      details: {
        tenant,
        topic,
        quota: { tenant: q.tenant, topic: q.topic, scope: q.scope },
        throttleMs: a.throttleMs,
        retryAfterMs: retry * 1000,
        violatedPolicies: [policy],
        headers: { 'Retry-After': String(retry), ...rateLimitHeaders(a.policies) },
      },
    });
  }

  /** Installs what is stored; quotas no longer stored go. */
  private apply(list: readonly Quota[]): void {
    const next = new Map(list.map((q) => [quotaKey(q.tenant, q.topic), q]));
    for (const [k, q] of this.configured) {
      if (next.has(k)) continue;
      this.book.delete(q.tenant, q.topic);
      this.shares.delete(k);
    }
    for (const [k, q] of next) {
      const was = this.configured.get(k);
      if (was && sameQuota(was, q)) continue;
      if (was && (was.recordsPerSec !== q.recordsPerSec || q.scope !== 'global')) this.shares.delete(k);
      this.configured.set(k, q);
      this.install(q);
    }
    for (const k of [...this.configured.keys()]) if (!next.has(k)) this.configured.delete(k);
  }

  private install(q: Quota): void {
    this.book.set(this.effective(q));
  }

  /** The quota with this region's share in place of a global quota's total. */
  private effective(q: Quota): Quota {
    if (q.scope !== 'global' || !this.mesh) return q;
    const share = this.shareOf(q).share();
    const f = Math.max(0, Math.min(1, share / q.recordsPerSec));
    const scale = (v: number) => Math.max(1, Math.round(v * f));
    return { ...q, recordsPerSec: scale(q.recordsPerSec), bytesPerSec: scale(q.bytesPerSec), burstRecords: scale(q.burstRecords), burstBytes: scale(q.burstBytes) };
  }

  private shareOf(q: Quota): GlobalShare {
    const k = quotaKey(q.tenant, q.topic);
    let s = this.shares.get(k);
    if (!s) {
      s = new GlobalShare(this.mesh!, this.clock, { quotaId: `${q.tenant}/${q.topic}`, totalPerSec: q.recordsPerSec, regions: this.regions });
      this.shares.set(k, s);
    }
    return s;
  }

  /** Every interval: each global quota's share from this region's demand over the interval. */
  private tickShares(): void {
    const now = this.clock.monotonicMs();
    const elapsedSec = Math.max(0.001, (now - this.lastTickMs) / 1000);
    this.lastTickMs = now;
    const demand = this.book.drainDemand();
    if (!this.mesh) return;
    for (const [k, q] of this.configured) {
      if (q.scope !== 'global') continue;
      this.shareOf(q).tick((demand.get(k) ?? 0) / elapsedSec);
      this.install(q);
    }
  }
}
