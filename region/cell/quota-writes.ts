/**
 * AlterQuotas in a cell: every change of one request written in one arbiter transaction, so the
 * cell holds all of them or none, at one revision that every broker's watch delivers together.
 * No compare: a quota is configuration, the last write wins (a broker serialises its own).
 */
import { assert } from '../../src/core/index.ts';
import { QUOTA_OPS_MAX, type QuotaChange } from '../../src/broker/index.ts';
import { TXN_OPS_MAX, type Arbiter, type TxnOp } from '../arbiter/index.ts';
import type { CellKeys } from './cell-keys.ts';

// One op per change must fit in one transaction.
assert(QUOTA_OPS_MAX <= TXN_OPS_MAX, `QUOTA_OPS_MAX (${QUOTA_OPS_MAX}) must not exceed TXN_OPS_MAX (${TXN_OPS_MAX})`);

/** The key and value (null: deleted) a change writes. */
export function quotaWrite(keys: CellKeys, c: QuotaChange): { key: string; value: Buffer | null } {
  if (c.kind === 'put') return { key: keys.quota(c.quota.tenant, c.quota.topic), value: Buffer.from(JSON.stringify(c.quota)) };
  return { key: keys.quota(c.tenant, c.topic), value: null };
}

/** Writes the changes in one transaction; resolves with its revision. ARBITER_UNAVAILABLE (retriable) when it cannot. */
export async function writeQuotas(arbiter: Arbiter, keys: CellKeys, changes: readonly QuotaChange[]): Promise<{ revision: number; writes: { key: string; value: Buffer | null }[] }> {
  const writes = changes.map((c) => quotaWrite(keys, c));
  if (writes.length === 0) return { revision: 0, writes };
  const ops: TxnOp[] = writes.map((w) => (w.value ? { type: 'put', key: w.key, value: w.value } : { type: 'delete', key: w.key }));
  const res = await arbiter.txn({ compares: [], ops });
  // Without compares a transaction cannot fail its condition.
  assert(res.ok, 'a quota transaction without compares was refused');
  return { revision: res.revision, writes };
}
