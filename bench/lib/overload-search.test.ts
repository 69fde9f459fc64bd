// Proves the maximum-sustainable-rate search doubles until a step fails, then bisects between the last rate that held and the first that did not, within its step bounds, and handles a first step that fails and a ceiling never reached.
import { describe, expect, it } from 'vitest';
import { searchMaxRate, stepHolds, type SearchStep } from './overload-search.ts';

/** A plant that holds every rate up to `capacity`. */
function plant(capacity: number) {
  const tried: number[] = [];
  const measure = async (rate: number): Promise<SearchStep> => {
    tried.push(rate);
    const pass = rate <= capacity;
    return { ratePerSec: rate, p99Ms: pass ? 5 : 500, admittedShare: 1, pass };
  };
  return { tried, measure };
}

describe('searchMaxRate', () => {
  it('doubles, then bisects to the granularity', async () => {
    const p = plant(2600);
    const r = await searchMaxRate(p.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50 });
    // 500, 1000, 2000 hold; 4000 fails; 3000 fails; 2500 holds; 2750 fails.
    expect(p.tried).toEqual([500, 1000, 2000, 4000, 3000, 2500, 2750]);
    expect(r.maxPerSec).toBe(2500);
    expect(r.steps.map((s) => s.pass)).toEqual([true, true, true, false, false, true, false]);
  });

  it('bisects below the start rate when the first step fails', async () => {
    const p = plant(300);
    const r = await searchMaxRate(p.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50 });
    expect(p.tried).toEqual([500, 250, 400, 350]);
    expect(r.maxPerSec).toBe(250);
  });

  it('stops at its doubling bound and answers the largest rate tried', async () => {
    const p = plant(Number.POSITIVE_INFINITY);
    const r = await searchMaxRate(p.measure, { startPerSec: 500, doublingsMax: 3, bisectSteps: 3, granularityPerSec: 50 });
    expect(p.tried).toEqual([500, 1000, 2000, 4000]);
    expect(r.maxPerSec).toBe(4000);
  });

  it('answers 0 when nothing holds, after at most doublings + bisections steps', async () => {
    const p = plant(0);
    const r = await searchMaxRate(p.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50 });
    expect(r.maxPerSec).toBe(0);
    expect(p.tried.length).toBeLessThanOrEqual(1 + 3);
  });
});

describe('stepHolds', () => {
  it('needs the p99 under the limit and nearly every request admitted', () => {
    expect(stepHolds(10, 1, 15, 0.999)).toBe(true);
    expect(stepHolds(15, 1, 15, 0.999)).toBe(true);
    expect(stepHolds(15.1, 1, 15, 0.999)).toBe(false);
    expect(stepHolds(10, 0.99, 15, 0.999)).toBe(false);
    expect(stepHolds(null, 1, 15, 0.999)).toBe(false);
  });
});
