/**
 * Global quotas' definitions across regions. Each region keeps its quotas in its own cell; a quota
 * with `"scope": "global"` is also carried in the mesh state under `quota/<tenant>/<topic>` (with
 * tombstones for deletions), and every region's gateway makes its cell agree with the mesh, the
 * way the catalogue of global topics does (gossip/region/catalogue.ts):
 *
 * - a global quota put or deleted in one region is published (or withdrawn) at once;
 * - on every reconcile, a cell that lacks a published definition, or holds a different one, takes
 *   it; a cell's global quota whose mesh entry is a tombstone is deleted;
 * - a cell's global quota the mesh has never heard of (the mesh's state lives in memory: after the
 *   whole mesh restarted, the cells are what remembers) is published again.
 * Concurrent puts of one quota in two regions end the same way everywhere: the mesh's last writer
 * wins (version, then member).
 */
import { silentLogger, type Logger } from '../src/core/index.ts';
import type { MeshStateAccess } from '../gossip/region/index.ts';
import type { QuotaAdmin } from './quota-admin.ts';
import { quotaKey, sameQuota, type Quota } from './quota.ts';

const PREFIX = 'quota/';
/** The mesh key of a global quota's definition (names hold no `/`). */
export const globalQuotaKey = (tenant: string, topic: string): string => `${PREFIX}${tenant}/${topic}`;

function asQuota(v: unknown): Quota | null {
  const q = v as Partial<Quota> | null;
  if (!q || typeof q.tenant !== 'string' || typeof q.topic !== 'string' || q.scope !== 'global') return null;
  for (const f of ['recordsPerSec', 'bytesPerSec', 'burstRecords', 'burstBytes'] as const) if (typeof q[f] !== 'number' || !(q[f]! >= 1)) return null;
  return q as Quota;
}

export class GlobalQuotaCatalogue {
  private readonly logger: Logger;

  constructor(
    private readonly mesh: MeshStateAccess,
    private readonly admin: QuotaAdmin,
    logger?: Logger,
  ) {
    this.logger = logger ?? silentLogger;
  }

  /** A global quota was stored in this region's cell: every region takes it. */
  publish(q: Quota): void {
    this.mesh.setState(globalQuotaKey(q.tenant, q.topic), { ...q });
  }

  /** A global quota was deleted here: every region deletes it. */
  withdraw(tenant: string, topic: string): void {
    this.mesh.deleteState(globalQuotaKey(tenant, topic));
  }

  /** Subscribes to changes of global quota definitions (the enforcer refreshes at once). */
  onChange(fn: () => void): () => void {
    return this.mesh.onStateChange((e) => {
      if (e.key.startsWith(PREFIX)) fn();
    });
  }

  /**
   * Makes the cell agree with the mesh, given what the cell holds now. Returns true when it wrote
   * to the cell (the caller reads the quotas again).
   */
  async reconcile(cell: readonly Quota[]): Promise<boolean> {
    const byKey = new Map(cell.map((q) => [quotaKey(q.tenant, q.topic), q]));
    const seen = new Set<string>();
    let wrote = false;
    for (const e of this.mesh.state()) {
      if (!e.key.startsWith(PREFIX)) continue;
      const [tenant, topic] = e.key.slice(PREFIX.length).split('/');
      if (tenant === undefined || topic === undefined) continue;
      const k = quotaKey(tenant, topic);
      seen.add(k);
      const mine = byKey.get(k);
      if (e.deleted) {
        if (mine?.scope === 'global') {
          await this.admin.deleteQuota(tenant, topic);
          this.logger.info({ tenant, topic }, 'global quota deleted in another region: deleted here');
          wrote = true;
        }
        continue;
      }
      const def = asQuota(e.value);
      if (!def || def.tenant !== tenant || def.topic !== topic) continue;
      if (!mine || !sameQuota(mine, def)) {
        await this.admin.putQuota(def);
        this.logger.info({ tenant, topic, recordsPerSec: def.recordsPerSec, bytesPerSec: def.bytesPerSec, replaced: mine?.scope ?? null }, 'global quota set in another region: stored here');
        wrote = true;
      }
    }
    for (const q of cell) if (q.scope === 'global' && !seen.has(quotaKey(q.tenant, q.topic))) this.publish(q);
    return wrote;
  }
}
