/**
 * Where quotas are kept: the cell (the arbiter's `quotas/` keys, or `quotas.json` beside a broker
 * that runs without a cell), reached over the binary protocol's AlterQuotas / DescribeQuotas. The
 * gateway's HTTP API, the CLI and the gateway's refresh loop all speak to it through this
 * interface, so tests can hand them an in-memory one.
 */
import type { Quota } from './quota.ts';

export interface QuotaAdmin {
  /** Every quota the cell holds, sorted by (tenant, topic). */
  listQuotas(): Promise<Quota[]>;
  /** Sets or replaces the quota of (q.tenant, q.topic), durably (acknowledged once stored). */
  putQuota(q: Quota): Promise<void>;
  /** Deletes the quota of (tenant, topic); false when there was none. */
  deleteQuota(tenant: string, topic: string): Promise<boolean>;
}

/** An in-memory QuotaAdmin (tests, and a gateway with nothing behind it). */
export class MemoryQuotaAdmin implements QuotaAdmin {
  private readonly quotas = new Map<string, Quota>();

  async listQuotas(): Promise<Quota[]> {
    return [...this.quotas.values()].sort((a, b) => a.tenant.localeCompare(b.tenant) || a.topic.localeCompare(b.topic));
  }

  async putQuota(q: Quota): Promise<void> {
    this.quotas.set(`${q.tenant}\u0000${q.topic}`, { ...q });
  }

  async deleteQuota(tenant: string, topic: string): Promise<boolean> {
    return this.quotas.delete(`${tenant}\u0000${topic}`);
  }
}
