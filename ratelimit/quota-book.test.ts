import { describe, expect, it } from 'vitest';
import { FakeClock } from '../src/core/index.ts';
import { parseQuota } from './quota.ts';
import { QuotaBook } from './quota-book.ts';

/** A quota whose bursts are one second's worth (the tests below count whole seconds). */
const q = (tenant: string, topic: string, recordsPerSec: number, bytesPerSec = 1_000_000) => parseQuota(tenant, topic, { recordsPerSec, bytesPerSec, burstRecords: recordsPerSec, burstBytes: bytesPerSec });

describe('QuotaBook', () => {
  it('admits within the quota, refuses past it, and a refused request takes nothing', () => {
    const clock = new FakeClock();
    const book = new QuotaBook(clock);
    book.set(parseQuota('acme', 'orders', { recordsPerSec: 10, bytesPerSec: 1000, burstRecords: 10, burstBytes: 1000 }));
    expect(book.admit('acme', 'orders', 6, 100).ok).toBe(true);
    // 5 more records do not fit: refused, and the 4 left are still there.
    const refused = book.admit('acme', 'orders', 5, 100);
    expect(refused).toMatchObject({ ok: false, throttleMs: 100 });
    expect(book.admit('acme', 'orders', 4, 100).ok).toBe(true);
    // Bytes bind too, and refusing on bytes gives the records back.
    clock.advance(1000);
    expect(book.admit('acme', 'orders', 1, 600).ok).toBe(true);
    expect(book.admit('acme', 'orders', 1, 600).ok).toBe(false);
    expect(book.admit('acme', 'orders', 9, 400).ok).toBe(true);
    // A request larger than the burst passes on a full bucket and leaves it in debt (PIP-322):
    // the next waits until the debt is repaid, so the rate holds and the large one is not refused for ever.
    clock.advance(1000);
    expect(book.admit('acme', 'orders', 1, 3000).ok).toBe(true);
    expect(book.admit('acme', 'orders', 1, 1)).toMatchObject({ ok: false, throttleMs: 2001 });
    clock.advance(2001);
    expect(book.admit('acme', 'orders', 1, 1).ok).toBe(true);
  });

  it('no quota, no limit; the most specific quota applies', () => {
    const book = new QuotaBook(new FakeClock());
    expect(book.admit('bob', 'x', 1e9, 1e12).ok).toBe(true);
    book.set(q('*', '*', 5));
    book.set(q('acme', 'orders', 100));
    expect(book.admit('acme', 'orders', 50, 1).quota).toMatchObject({ tenant: 'acme', topic: 'orders' });
    expect(book.admit('bob', 'x', 5, 1).ok).toBe(true);
    expect(book.admit('bob', 'x', 1, 1).ok).toBe(false);
  });

  it('wildcards: a * tenant budgets each tenant on its own; a * topic sums a tenant\'s topics', () => {
    const book = new QuotaBook(new FakeClock());
    book.set(q('*', 'orders', 10));
    expect(book.admit('a', 'orders', 10, 1).ok).toBe(true);
    expect(book.admit('b', 'orders', 10, 1).ok).toBe(true); // b has its own
    expect(book.admit('a', 'orders', 1, 1).ok).toBe(false);
    book.set(q('acme', '*', 10));
    expect(book.admit('acme', 't1', 6, 1).ok).toBe(true);
    expect(book.admit('acme', 't2', 6, 1).ok).toBe(false); // the same total
  });

  it('a changed quota applies at once to buckets in use; a deleted one stops limiting', () => {
    const clock = new FakeClock();
    const book = new QuotaBook(clock);
    book.set(q('acme', 'orders', 10));
    expect(book.admit('acme', 'orders', 10, 1).ok).toBe(true);
    book.set(q('acme', 'orders', 1000));
    clock.advance(10);
    expect(book.admit('acme', 'orders', 10, 1).ok).toBe(true);
    expect(book.delete('acme', 'orders')).toBe(true);
    expect(book.admit('acme', 'orders', 1e6, 1).ok).toBe(true);
    expect(book.list()).toEqual([]);
  });

  it('holds a fixed rate within ±5% in every 10 s window under many concurrent producers', () => {
    const clock = new FakeClock();
    const book = new QuotaBook(clock);
    const R = 1000;
    // The default burst (a tenth of a second).
    book.set(parseQuota('acme', 'orders', { recordsPerSec: R, bytesPerSec: 1_000_000 }));
    // 50 producers, each trying one record every 2 ms (25x the quota), for 60 s.
    const windows: number[] = [];
    let admitted = 0;
    for (let ms = 1; ms <= 60_000; ms += 2) {
      clock.advance(2);
      for (let p = 0; p < 50; p++) if (book.admit('acme', 'orders', 1, 100).ok) admitted++;
      if (ms % 10_000 === 9_999) {
        windows.push(admitted);
        admitted = 0;
      }
    }
    expect(windows).toHaveLength(6);
    // Every window, the first included (its burst is the default tenth of a second: +1%).
    for (const w of windows) expect(Math.abs(w - R * 10) / (R * 10)).toBeLessThanOrEqual(0.05);
  });

  it('release gives back what an admit took (a request refused after all takes nothing)', () => {
    const book = new QuotaBook(new FakeClock());
    book.set(q('acme', '*', 10));
    expect(book.admit('acme', 'a', 10, 100).ok).toBe(true);
    expect(book.admit('acme', 'b', 1, 1).ok).toBe(false);
    book.release('acme', 'a', 10, 100);
    // The (acme, *) bucket is shared by a and b: b now finds the 10.
    expect(book.admit('acme', 'b', 10, 100).ok).toBe(true);
    // No quota, nothing to give back.
    book.release('bob', 'x', 5, 5);
    expect(book.admit('bob', 'x', 1e9, 1).ok).toBe(true);
  });
});
