// Two regions share one global quota over a fake mesh (writes reach the other 200 ms later; a
// partition cuts them): the shares follow demand, a cut-off region keeps its last share while the
// other keeps reserving it, and the sum never exceeds the quota by more than the stated bound
// ((regions − 1) × maxStep × quota), at every interval.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../src/core/index.ts';
import { FakeMesh } from '../gossip/region/test-support.ts';
import { GLOBAL_SHARE_DEFAULTS, GlobalShare } from './global-share.ts';

const Q = 1000;
const BOUND = Q * (1 + (2 - 1) * GLOBAL_SHARE_DEFAULTS.maxStep);

describe('GlobalShare', () => {
  it('follows demand, holds through a partition, and never oversubscribes past the bound', () => {
    const clock = new FakeClock();
    const mesh = new FakeMesh(clock, 200);
    const regions = () => 2;
    const a = new GlobalShare(mesh.member('a'), clock, { quotaId: 'acme/*', totalPerSec: Q, regions });
    const b = new GlobalShare(mesh.member('b'), clock, { quotaId: 'acme/*', totalPerSec: Q, regions });
    const sums: number[] = [];
    const run = (ticks: number, da: number, db: number) => {
      for (let i = 0; i < ticks; i++) {
        clock.advance(1000);
        const sa = a.tick(da);
        const sb = b.tick(db);
        sums.push(sa + sb);
      }
      return { a: a.share(), b: b.share() };
    };
    // Equal demand: an even split.
    let s = run(30, 600, 600);
    expect(s.a).toBeGreaterThan(450);
    expect(s.b).toBeGreaterThan(450);
    // Demand moves to a: 50 floor each, the rest by demand (a 860, b 140).
    s = run(30, 900, 100);
    expect(s.a).toBeGreaterThan(0.95 * 860);
    expect(s.b).toBeLessThan(1.05 * 140 + 1);
    // Cut off: b's demand rises, but each keeps (about) its last share, and the other reserves it.
    const before = { a: s.a, b: s.b };
    mesh.partition('a-gw', 'b-gw');
    s = run(15, 900, 900);
    expect(Math.abs(s.b - before.b)).toBeLessThanOrEqual(GLOBAL_SHARE_DEFAULTS.maxStep * Q);
    expect(Math.abs(s.a - before.a)).toBeLessThanOrEqual(GLOBAL_SHARE_DEFAULTS.maxStep * Q);
    // Healed: equal demand again, an even split.
    mesh.partition('a-gw', 'b-gw', false);
    mesh.syncAll();
    s = run(40, 900, 900);
    expect(Math.abs(s.a - s.b)).toBeLessThan(0.05 * Q);
    for (const sum of sums) expect(sum).toBeLessThanOrEqual(BOUND + 1e-9);
    // And the quota is used: in steady state the shares add up to it.
    expect(sums.at(-1)).toBeGreaterThan(0.95 * Q);
  });

  it('a region that joins starts with what the others leave free, not on top of them', () => {
    const clock = new FakeClock();
    const mesh = new FakeMesh(clock, 200);
    let regions = 1;
    const a = new GlobalShare(mesh.member('a'), clock, { quotaId: 'q', totalPerSec: Q, regions: () => regions });
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      a.tick(800);
    }
    expect(a.share()).toBe(Q);
    regions = 2;
    const b = new GlobalShare(mesh.member('b'), clock, { quotaId: 'q', totalPerSec: Q, regions: () => regions });
    mesh.syncAll(); // the joiner's push-pull brings it the state
    clock.advance(0);
    expect(b.share()).toBe(0);
    for (let i = 0; i < 30; i++) {
      clock.advance(1000);
      const sum = a.tick(800) + b.tick(800);
      expect(sum).toBeLessThanOrEqual(BOUND + 1e-9);
    }
    expect(b.share()).toBeGreaterThan(400);
  });
});
