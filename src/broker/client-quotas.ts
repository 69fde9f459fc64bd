/**
 * Quotas at the broker, for binary-protocol clients (Kafka's client-id quotas, KIP-219): where
 * they are kept, the book of buckets they fill, and the admission of each produce request.
 *
 * - **Tenant.** With auth on, the authenticated tenant (handlers.ts passes it as the client id;
 *   the cell's own principals as internal ids). Without auth, a request's tenant is its
 *   connection's client id when that is a valid tenant name (TENANT_NAME, `*` excepted), else `anonymous`. Client ids
 *   starting with `__` are the cell's own (replica fetchers, gateways, the exchange) and are never
 *   limited (src/protocol/client-id.ts says why).
 * - **Storage.** In a cell, the arbiter (one transaction per AlterQuotas; every broker follows the
 *   keys through its watch and calls `onCellChange`); a lone broker, `quotas.json` (quota-file.ts).
 *   AlterQuotas is all or nothing and serialised, so `existed` and the QUOTAS_MAX check see the
 *   quotas as the previous change left them.
 * - **Admission.** Per topic of a produce request, its records and bytes are taken from the
 *   bucket of the quota that applies. One topic without room refuses the request whole (what
 *   the other topics took is given back): the answer is QUOTA_EXCEEDED on every partition with
 *   the throttle time, and nothing is written. A topic needing more than its quota's burst passes
 *   on a full bucket and leaves it in debt (PIP-322, ratelimit/token-bucket.ts), so it is not
 *   refused for ever and the rate still holds.
 */
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger } from '../core/index.ts';
import { splitBatches, OFFSET_RECORD_COUNT, BATCH_HEADER_BYTES_MIN } from '../log/index.ts';
import type { BrokerMetrics } from '../metrics/index.ts';
import { QuotaBook, quotaKey, resolveQuota, TENANT_NAME, type Quota } from '../../ratelimit/index.ts';
import {
  isInternalClientId,
  wireError,
  type AlterQuotasRequest,
  type AlterQuotasResponse,
  type DescribeQuotasResponse,
  type ProduceRequest,
  type ProduceResponse,
} from '../protocol/index.ts';
import { appliedResults, failedResults, parseAlterQuotas, toQuotaEntry, type QuotaChange } from './quota-changes.ts';
import type { QuotaFile } from './quota-file.ts';

/** The tenant of a client id that is not a valid tenant name (and of a connection that sent none). */
export const ANONYMOUS_TENANT = 'anonymous';

/** What admitting a produce request said. */
export type ProduceAdmission =
  | { ok: true }
  /** Refused whole: answer `response` (nothing written); the connection is muted for throttleMs. */
  | { ok: false; tenant: string; throttleMs: number; response: ProduceResponse };

/** Where a broker's quotas are kept. */
export type QuotaBackend =
  /** The cell's arbiter (CellController.alterQuotas); changes come back through onCellChange. */
  | { kind: 'cell'; alterQuotas: (changes: readonly QuotaChange[]) => Promise<void> }
  | { kind: 'file'; file: QuotaFile };

/** The quotas of one broker. */
export class ClientQuotas {
  /** The quotas in force, by quotaKey (the book holds the same, with their buckets). */
  private readonly quotas = new Map<string, Quota>();
  private readonly book: QuotaBook;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly metrics: BrokerMetrics | undefined;
  /** Serialises AlterQuotas: each sees what the one before left. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly backend: QuotaBackend,
    deps: { clock?: Clock; logger?: Logger; metrics?: BrokerMetrics } = {},
  ) {
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ component: 'quotas' });
    this.metrics = deps.metrics;
    this.book = new QuotaBook(this.clock);
    if (backend.kind === 'file') for (const q of backend.file.map.values()) this.setInForce(q);
  }

  /** The tenant of a client id, or null for the cell's own clients (never limited). */
  static tenantOf(clientId: string): string | null {
    if (isInternalClientId(clientId)) return null;
    return clientId !== '*' && TENANT_NAME.test(clientId) ? clientId : ANONYMOUS_TENANT;
  }

  /** The cell's quota of (tenant, topic) changed (null: deleted). */
  onCellChange(tenant: string, topic: string, quota: Quota | null): void {
    if (quota) this.setInForce(quota);
    else this.removeInForce(tenant, topic);
  }

  /** Every quota in force, sorted by (tenant, topic). */
  list(): Quota[] {
    return this.book.list();
  }

  describe(): DescribeQuotasResponse {
    return { quotas: this.list().map(toQuotaEntry) };
  }

  /** AlterQuotas: every op valid or none applied; applied durably before the answer. */
  alter(req: AlterQuotasRequest): Promise<AlterQuotasResponse> {
    const run = this.chain.then(async (): Promise<AlterQuotasResponse> => {
      const parsed = parseAlterQuotas(req, this.quotas);
      if (!parsed.ok) return { results: parsed.results };
      const before = new Map(this.quotas);
      try {
        await this.store(parsed.changes);
      } catch (err) {
        this.logger.warn({ err, ops: parsed.changes.length }, 'quota change not stored');
        return { results: failedResults(req, err) };
      }
      this.logger.info({ changes: parsed.changes.map((c) => (c.kind === 'put' ? `put ${c.quota.tenant}/${c.quota.topic}` : `remove ${c.tenant}/${c.topic}`)) }, 'quotas changed');
      return { results: appliedResults(parsed.changes, before) };
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async store(changes: QuotaChange[]): Promise<void> {
    if (this.backend.kind === 'cell') {
      // The controller ingests its own write before resolving: onCellChange has run by then.
      await this.backend.alterQuotas(changes);
      return;
    }
    await this.backend.file.apply(changes);
    for (const c of changes) {
      if (c.kind === 'put') this.setInForce(c.quota);
      else this.removeInForce(c.tenant, c.topic);
    }
  }

  /**
   * Admits a produce request of `clientId`'s connection, or says how to refuse it. Cheap when no
   * quota applies: one map lookup per topic, and batch headers are read only under a quota.
   */
  admitProduce(clientId: string, req: ProduceRequest): ProduceAdmission {
    if (this.quotas.size === 0) return { ok: true };
    const tenant = ClientQuotas.tenantOf(clientId);
    if (tenant === null) return { ok: true };
    const taken: { topic: string; records: number; bytes: number }[] = [];
    let throttleMs = 0;
    for (const t of req.topics) {
      const q = resolveQuota(this.quotas, tenant, t.name);
      if (!q) continue;
      let records = 0;
      let bytes = 0;
      for (const p of t.partitions) {
        bytes += p.records.byteLength;
        records += recordCount(p.records);
      }
      const a = this.book.admit(tenant, t.name, records, bytes);
      if (a.ok) taken.push({ topic: t.name, records, bytes });
      else throttleMs = Math.max(throttleMs, a.throttleMs);
    }
    if (throttleMs === 0) return { ok: true };
    // Refused whole: what the other topics took is given back (a refused request takes nothing).
    for (const x of taken) this.book.release(tenant, x.topic, x.records, x.bytes);
    const error = wireError(new EdgeqError('QUOTA_EXCEEDED', `tenant ${tenant} (the client id) is over its quota: retry after ${throttleMs} ms`, { details: { tenant, throttleMs } }));
    this.metrics?.recordThrottle(tenant, throttleMs);
    return {
      ok: false,
      tenant,
      throttleMs,
      response: {
        topics: req.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partition: p.partition, error, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, leaderEpoch: -1 })),
        })),
        throttleMs,
      },
    };
  }

  private setInForce(q: Quota): void {
    try {
      this.book.set(q);
      this.quotas.set(quotaKey(q.tenant, q.topic), q);
    } catch (err) {
      this.logger.error({ err, tenant: q.tenant, topic: q.topic }, 'quota not applied');
    }
  }

  private removeInForce(tenant: string, topic: string): void {
    this.book.delete(tenant, topic);
    this.quotas.delete(quotaKey(tenant, topic));
  }
}

/** Records in a produce partition's batches, from their headers (a batch too short to have one counts 1: the append refuses it). */
function recordCount(records: Uint8Array): number {
  const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
  let n = 0;
  for (const b of splitBatches(buf)) n += b.length >= BATCH_HEADER_BYTES_MIN ? Math.max(1, b.readInt32BE(OFFSET_RECORD_COUNT)) : 1;
  return Math.max(1, n);
}
