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

describe('searchMaxRate confirmation', () => {
  it('keeps a rate that holds for the longer run too', async () => {
    const p = plant(2600);
    const r = await searchMaxRate(p.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50, confirm: p.measure });
    expect(r).toMatchObject({ maxPerSec: 2500, confirmed: true });
    expect(r.steps.at(-1)).toMatchObject({ phase: 'confirm', ratePerSec: 2500, pass: true });
  });

  it('lowers a rate that holds for a short step but not the long one, then confirms the lower one', async () => {
    // Short steps hold up to 2600/s; the long run holds only up to 2100/s (2500 x 0.8 = 2000 holds).
    const short = plant(2600);
    const long = plant(2100);
    const r = await searchMaxRate(short.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50, confirm: long.measure, confirmAttemptsMax: 2, confirmBackoff: 0.8 });
    expect(long.tried).toEqual([2500, 2000]);
    expect(r).toMatchObject({ maxPerSec: 2000, confirmed: true });
  });

  it('stops after its confirmation bound and says the answer is not confirmed', async () => {
    const short = plant(2600);
    const long = plant(1000);
    const r = await searchMaxRate(short.measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50, confirm: long.measure, confirmAttemptsMax: 2, confirmBackoff: 0.8 });
    expect(long.tried).toEqual([2500, 2000]);
    expect(r).toMatchObject({ maxPerSec: 1600, confirmed: false });
  });
});

describe('searchMaxRate retries', () => {
  it('runs a failed step again and fails it only when every run fails', async () => {
    // Holds up to 2600/s, but the first run of 1000/s meets a stall.
    const p = plant(2600);
    let stalled = false;
    const measure = async (rate: number): Promise<SearchStep> => {
      if (rate === 1000 && !stalled) {
        stalled = true;
        return { ratePerSec: rate, p99Ms: 80, admittedShare: 1, pass: false };
      }
      return p.measure(rate);
    };
    const r = await searchMaxRate(measure, { startPerSec: 500, doublingsMax: 7, bisectSteps: 3, granularityPerSec: 50, retriesOnFail: 1 });
    expect(r.maxPerSec).toBe(2500);
    expect(r.steps.filter((s) => s.ratePerSec === 1000).map((s) => [s.attempt, s.pass])).toEqual([[1, false], [2, true]]);
    // A rate beyond the plant fails both runs: 4000 twice, 3000 twice, 2750 twice.
    expect(r.steps.filter((s) => !s.pass).length).toBe(1 + 2 * 3);
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
