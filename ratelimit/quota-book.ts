/**
 * The quotas in force and their buckets: `admit(tenant, topic, records, bytes)` finds the quota
 * that applies (most specific first, `*` wildcards) and takes from its two buckets (records and
 * bytes). A request is admitted only when both have what it needs: a refused one takes nothing,
 * so what was refused does not eat the budget of what comes after.
 *
 * Wildcards: a `*` tenant budgets each tenant on its own (a default every tenant gets); a `*` topic
 * budgets all of a tenant's topics together (the tenant's total). So (acme, *) is acme's quota,
 * (*, orders) every tenant's quota on orders, (*, *) every tenant's total. Buckets are made on
 * first use and bounded (the least recently used goes first).
 */
import type { Clock } from '../src/core/index.ts';
import { EdgeqError, systemClock } from '../src/core/index.ts';
import type { PolicyState } from './headers.ts';
import { quotaKey, resolveQuota, type Quota } from './quota.ts';
import { TokenBucket } from './token-bucket.ts';

/** Buckets kept at once (each pair is a few hundred bytes). */
export const QUOTA_BUCKETS_MAX = 100_000;
/** Quotas a book holds. */
export const QUOTAS_MAX = 10_000;

export interface Admission {
  ok: boolean;
  /** The quota that applied (undefined: none, admitted). */
  quota?: Quota;
  /** With !ok: milliseconds until the request would fit. */
  throttleMs: number;
  /** For the RateLimit headers: records and bytes left in the applied quota (records first). */
  policies: PolicyState[];
  /** With !ok: which budget had no room. */
  violated?: 'records' | 'bytes';
}

interface Pair {
  records: TokenBucket;
  bytes: TokenBucket;
  quota: Quota;
}

export class QuotaBook {
  private readonly quotas = new Map<string, Quota>();
  private readonly buckets = new Map<string, Pair>();
  /** Records asked for under each quota (key) since drainDemand, admitted or not. */
  private demand = new Map<string, number>();

  constructor(private readonly clock: Clock = systemClock) {}

  /** Sets (or replaces) a quota; its buckets take the new limits at once. */
  set(q: Quota): void {
    const key = quotaKey(q.tenant, q.topic);
    if (!this.quotas.has(key) && this.quotas.size >= QUOTAS_MAX) {
      throw new EdgeqError('INVALID_ARGUMENT', `a region holds at most ${QUOTAS_MAX} quotas; delete one first`, { details: { field: 'quota', quotasMax: QUOTAS_MAX } });
    }
    this.quotas.set(key, q);
    for (const pair of this.buckets.values()) {
      if (pair.quota.tenant !== q.tenant || pair.quota.topic !== q.topic) continue;
      pair.quota = q;
      pair.records.reconfigure({ ratePerSec: q.recordsPerSec, burst: q.burstRecords });
      pair.bytes.reconfigure({ ratePerSec: q.bytesPerSec, burst: q.burstBytes });
    }
  }

  delete(tenant: string, topic: string): boolean {
    const gone = this.quotas.delete(quotaKey(tenant, topic));
    for (const [k, pair] of this.buckets) if (pair.quota.tenant === tenant && pair.quota.topic === topic) this.buckets.delete(k);
    return gone;
  }

  list(): Quota[] {
    return [...this.quotas.values()].sort((a, b) => a.tenant.localeCompare(b.tenant) || a.topic.localeCompare(b.topic));
  }

  /** The quota that applies to (tenant, topic), if any. */
  resolve(tenant: string, topic: string): Quota | undefined {
    return resolveQuota(this.quotas, tenant, topic);
  }

  /**
   * Whether `bytes` alone would be refused now, taking nothing: the gateway asks before it reads
   * and parses a body whose size it knows from Content-Length.
   */
  peekBytes(tenant: string, topic: string, bytes: number): Admission {
    const q = resolveQuota(this.quotas, tenant, topic);
    if (!q) return { ok: true, throttleMs: 0, policies: [] };
    const pair = this.pair(q, tenant, topic);
    const b = pair.bytes.peek(bytes);
    return { ok: b.ok, quota: q, throttleMs: b.throttleMs, policies: this.policies(pair, b.ok ? -1 : 1, b.throttleMs), ...(b.ok ? {} : { violated: 'bytes' as const }) };
  }

  /** Records asked for under each quota (by quotaKey) since the last call, admitted or refused. */
  drainDemand(): Map<string, number> {
    const d = this.demand;
    this.demand = new Map();
    return d;
  }

  /** Admits `records` records of `bytes` bytes for (tenant, topic), or says how long to wait. */
  admit(tenant: string, topic: string, records: number, bytes: number): Admission {
    const q = resolveQuota(this.quotas, tenant, topic);
    if (!q) return { ok: true, throttleMs: 0, policies: [] };
    const qk = quotaKey(q.tenant, q.topic);
    if (this.demand.has(qk) || this.demand.size < QUOTAS_MAX) this.demand.set(qk, (this.demand.get(qk) ?? 0) + records);
    const pair = this.pair(q, tenant, topic);
    const r = pair.records.tryTake(records);
    if (!r.ok) return { ok: false, quota: q, throttleMs: r.throttleMs, policies: this.policies(pair, 0, r.throttleMs), violated: 'records' };
    const b = pair.bytes.tryTake(bytes);
    if (!b.ok) {
      // Give the records back: a refused request takes nothing.
      pair.records.take(-records);
      return { ok: false, quota: q, throttleMs: b.throttleMs, policies: this.policies(pair, 1, b.throttleMs), violated: 'bytes' };
    }
    return { ok: true, quota: q, throttleMs: 0, policies: this.policies(pair) };
  }

  /**
   * Gives back what an admitted `admit(tenant, topic, records, bytes)` took, for a request refused
   * after all (the broker admits each topic of a produce request, and one topic over its quota
   * refuses the request whole): a refused request takes nothing.
   */
  release(tenant: string, topic: string, records: number, bytes: number): void {
    const q = resolveQuota(this.quotas, tenant, topic);
    if (!q) return;
    const pair = this.pair(q, tenant, topic);
    pair.records.take(-records);
    pair.bytes.take(-bytes);
  }

  /** The policies' state; the refused one (index `refused`) resets when the request would fit. */
  private policies(p: Pair, refused = -1, throttleMs = 0): PolicyState[] {
    const left = (bucket: TokenBucket, rate: number) => {
      const bal = bucket.balance();
      return { remaining: Math.max(0, bal), resetSec: bal >= 0 ? 0 : -bal / rate };
    };
    const r = left(p.records, p.quota.recordsPerSec);
    const b = left(p.bytes, p.quota.bytesPerSec);
    // Named by what the quota covers, as the draft's example does ("tenant";q=1000;w=1): a tenant's
    // total (topic *) or one topic; the bytes policy carries the suffix.
    const name = p.quota.topic === '*' ? 'tenant' : 'topic';
    if (refused === 0) r.resetSec = Math.max(r.resetSec, throttleMs / 1000);
    if (refused === 1) b.resetSec = Math.max(b.resetSec, throttleMs / 1000);
    return [
      { name, quota: p.quota.recordsPerSec, windowSec: 1, ...r },
      { name: `${name}-bytes`, quota: p.quota.bytesPerSec, windowSec: 1, ...b },
    ];
  }

  /** The buckets a request of (tenant, topic) takes from under quota `q` (see the wildcards above). */
  private pair(q: Quota, tenant: string, topic: string): Pair {
    const key = `${quotaKey(q.tenant, q.topic)}\u0001${q.tenant === '*' ? tenant : q.tenant}\u0001${q.topic === '*' ? '*' : topic}`;
    let p = this.buckets.get(key);
    if (p) {
      this.buckets.delete(key);
      this.buckets.set(key, p);
      return p;
    }
    p = {
      records: new TokenBucket({ ratePerSec: q.recordsPerSec, burst: q.burstRecords }, this.clock),
      bytes: new TokenBucket({ ratePerSec: q.bytesPerSec, burst: q.burstBytes }, this.clock),
      quota: q,
    };
    this.buckets.set(key, p);
    while (this.buckets.size > QUOTA_BUCKETS_MAX) this.buckets.delete(this.buckets.keys().next().value as string);
    return p;
  }
}
