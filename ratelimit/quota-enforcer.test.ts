// The gateway's quota enforcer over a fake clock and a fake mesh: it follows the cell's quotas,
// keeps the last ones when the cell cannot be read, and for a global quota two regions (each
// with its own cell) share one quota: the definition put in one region reaches the other's cell,
// the records admitted by both together stay within the stated bound in every 10 s window, a
// region cut off keeps its share, and a delete in one region deletes it in the other.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../src/core/index.ts';
import { FakeMesh } from '../gossip/region/test-support.ts';
import { MemoryQuotaAdmin, type QuotaAdmin } from './quota-admin.ts';
import { QuotaEnforcer, globalShareBound } from './quota-enforcer.ts';
import { parseQuota } from './quota.ts';

/** Lets the fake mesh's deliveries and the enforcers' promises run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('QuotaEnforcer', () => {
  it('follows the cell and keeps the last quotas while the cell cannot be read', async () => {
    const clock = new FakeClock();
    const cell = new MemoryQuotaAdmin();
    let down = false;
    const admin: QuotaAdmin = {
      listQuotas: () => (down ? Promise.reject(new Error('no broker')) : cell.listQuotas()),
      putQuota: (q) => cell.putQuota(q),
      deleteQuota: (t, p) => cell.deleteQuota(t, p),
    };
    const e = new QuotaEnforcer({ admin, clock });
    await e.refresh();
    expect(e.admit('acme', 'orders', 1000, 1)).toEqual({});
    await cell.putQuota(parseQuota('acme', '*', { recordsPerSec: 10, bytesPerSec: 1000, burstRecords: 10 }));
    await e.refresh();
    expect(e.admit('acme', 'orders', 10, 1)['RateLimit-Policy']).toBe('"tenant";q=10;w=1, "tenant-bytes";q=1000;w=1');
    expect(() => e.admit('acme', 'orders', 1, 1)).toThrow(expect.objectContaining({ code: 'QUOTA_EXCEEDED' }));
    down = true;
    await cell.deleteQuota('acme', '*');
    await e.refresh();
    expect(e.list()).toHaveLength(1);
    expect(() => e.admit('acme', 'orders', 1, 1)).toThrow(expect.objectContaining({ code: 'QUOTA_EXCEEDED' }));
    down = false;
    await e.refresh();
    expect(e.list()).toHaveLength(0);
  });

  it('a global quota: two regions share it within the bound, a cut-off region keeps its share, a delete reaches both', async () => {
    const clock = new FakeClock();
    const mesh = new FakeMesh(clock, 200);
    const regions = () => 2;
    const cells = { a: new MemoryQuotaAdmin(), b: new MemoryQuotaAdmin() };
    const a = new QuotaEnforcer({ admin: cells.a, clock, mesh: mesh.member('a'), regions });
    const b = new QuotaEnforcer({ admin: cells.b, clock, mesh: mesh.member('b'), regions });
    const Q = 1000;
    const quota = parseQuota('acme', '*', { recordsPerSec: Q, bytesPerSec: 1e9, scope: 'global' });
    await cells.a.putQuota(quota);
    a.stored(quota);
    clock.advance(250);
    await settle();
    await b.refresh();
    expect(await cells.b.listQuotas()).toEqual([expect.objectContaining({ tenant: 'acme', topic: '*', scope: 'global', recordsPerSec: Q })]);

    // Each region offers `offer` records/s as one request every 10 ms (offer/100 records each);
    // the enforcers refresh (and work out their shares) every second. Admitted records per second.
    const admittedPerSec: { a: number; b: number }[] = [];
    const run = async (seconds: number, offer: { a: number; b: number }) => {
      for (let s = 0; s < seconds; s++) {
        const got = { a: 0, b: 0 };
        for (let t = 0; t < 100; t++) {
          clock.advance(10);
          for (const r of ['a', 'b'] as const) {
            const n = offer[r] / 100;
            try {
              (r === 'a' ? a : b).admit('acme', 'orders', n, n);
              got[r] += n;
            } catch {
              // Refused: it counts in the demand, not in what was admitted.
            }
          }
        }
        await settle();
        await a.interval();
        await b.interval();
        admittedPerSec.push(got);
      }
    };
    await run(20, { a: 900, b: 900 });
    await run(20, { a: 1500, b: 200 });
    // Cut off: each keeps (about) its last share.
    const before = { a: a.get('acme', '*')!.regionRecordsPerSec, b: b.get('acme', '*')!.regionRecordsPerSec };
    mesh.partition('a-gw', 'b-gw');
    await run(15, { a: 1500, b: 1500 });
    const during = { a: a.get('acme', '*')!.regionRecordsPerSec, b: b.get('acme', '*')!.regionRecordsPerSec };
    expect(Math.abs(during.a - before.a)).toBeLessThanOrEqual(0.1 * Q + 1);
    expect(Math.abs(during.b - before.b)).toBeLessThanOrEqual(0.1 * Q + 1);
    mesh.partition('a-gw', 'b-gw', false);
    mesh.syncAll();
    await run(15, { a: 1500, b: 1500 });

    // In every 10 s window the two regions together admitted at most the bound (plus each
    // region's burst, a tenth of a second of its share), and when both press, close to the quota.
    const bound = globalShareBound(Q, 2);
    for (let w = 0; w + 10 <= admittedPerSec.length; w++) {
      const sum = admittedPerSec.slice(w, w + 10).reduce((n, x) => n + x.a + x.b, 0);
      expect(sum, `window from ${w} s`).toBeLessThanOrEqual(10 * bound + 2 * 0.1 * Q + 20);
    }
    const last10 = admittedPerSec.slice(-10).reduce((n, x) => n + x.a + x.b, 0);
    expect(last10).toBeGreaterThan(0.9 * 10 * Q);
    // Demand moved to a in the second phase: a's share grew past half.
    const phase2 = admittedPerSec.slice(30, 40).reduce((n, x) => n + x.a, 0);
    expect(phase2).toBeGreaterThan(0.6 * 10 * Q);

    // A delete in b reaches a's cell.
    await cells.b.deleteQuota('acme', '*');
    b.deleted('acme', '*');
    clock.advance(250);
    await settle();
    await a.refresh();
    expect(await cells.a.listQuotas()).toEqual([]);
    expect(a.list()).toEqual([]);
  });
});
