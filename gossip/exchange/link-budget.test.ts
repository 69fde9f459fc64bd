import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import { LINK_GRANT_BYTES_MIN, LinkBudget } from './link-budget.ts';

const flush = () => new Promise((r) => setImmediate(r));

describe('LinkBudget', () => {
  it('holds the byte rate to the limit over a run of fetches', async () => {
    const clock = new FakeClock();
    const rate = 100_000;
    const link = new LinkBudget(clock, rate, 1 << 20);
    link.register('p0');
    let moved = 0;
    const start = clock.monotonicMs();
    for (let i = 0; i < 50; i++) {
      let grant: { maxBytes: number } | undefined;
      void link.acquire('p0', 64 * 1024).then((g) => (grant = g));
      for (let spins = 0; grant === undefined && spins < 1000; spins++) {
        await flush();
        if (grant === undefined) clock.advance(5);
      }
      expect(grant).toBeDefined();
      moved += grant!.maxBytes;
      link.settle(grant!, grant!.maxBytes);
    }
    const seconds = (clock.monotonicMs() - start) / 1000;
    // The first tenth of a second is the burst; past it the rate holds within a grant's worth.
    expect(moved / seconds).toBeLessThanOrEqual(rate * 1.15);
    expect(moved / seconds).toBeGreaterThan(rate * 0.8);
    expect(link.bytesTotal).toBe(moved);
  });

  it('caps each grant at a fair share of the bytes in flight', async () => {
    const clock = new FakeClock();
    const link = new LinkBudget(clock, 0, 256 * 1024);
    for (const k of ['a', 'b', 'c', 'd']) link.register(k);
    const g = await link.acquire('a', 1 << 20);
    expect(g.maxBytes).toBe(64 * 1024);
    link.unregister('b');
    link.unregister('c');
    link.unregister('d');
    link.settle(g, 0);
    expect((await link.acquire('a', 1 << 20)).maxBytes).toBe(256 * 1024);
  });

  it('serves waiting partitions in turn: a catching-up partition cannot starve another', async () => {
    const clock = new FakeClock();
    const link = new LinkBudget(clock, 50_000, 1 << 20);
    link.register('catchup');
    link.register('live');
    const order: string[] = [];
    const loop = async (key: string, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const g = await link.acquire(key, 64 * 1024);
        order.push(key);
        link.settle(g, g.maxBytes);
      }
    };
    const done = Promise.all([loop('catchup', 10), loop('live', 10)]);
    for (let i = 0; i < 10_000 && order.length < 20; i++) {
      await flush();
      clock.advance(10);
    }
    await done;
    // Strictly alternating after the first grant each.
    const live = order.map((k, i) => (k === 'live' ? i : -1)).filter((i) => i >= 0);
    for (let i = 1; i < live.length; i++) expect(live[i]! - live[i - 1]!).toBeLessThanOrEqual(2);
  });

  it('never grants less than the minimum, and fails waiters on close', async () => {
    const clock = new FakeClock();
    const link = new LinkBudget(clock, 1_000, 1 << 20);
    link.register('p');
    const g = await link.acquire('p', 1 << 20);
    expect(g.maxBytes).toBeGreaterThanOrEqual(LINK_GRANT_BYTES_MIN);
    link.settle(g, g.maxBytes);
    const waiting = link.acquire('p', 1 << 20);
    link.close();
    await expect(waiting).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
  });
});
