// Proves the accuracy watch scores only forecasts it was given against steps that arrived, keeps a
// bounded rolling window, falls back when the model is worse than seasonal naive by more than the
// margin, returns once it is no worse, and judges nothing before its minimum count.
import { describe, expect, it } from 'vitest';
import { AccuracyWatch, accuracyWindowFor, ACCURACY_WINDOW_STEPS_MAX, FALLBACK_MARGIN, PENDING_FORECASTS_MAX } from './accuracy-watch.ts';

/** Feeds `count` steps from t0 where the model errs by `modelErr` and seasonal naive by `naiveErr`. */
function feed(w: AccuracyWatch, t0: number, count: number, modelErr: number, naiveErr: number) {
  const verdicts = [];
  for (let i = 0; i < count; i++) {
    const t = t0 + i;
    w.expect(t, 100 + modelErr);
    verdicts.push(w.observe(t, 100, 100 - naiveErr));
  }
  return verdicts;
}

describe('AccuracyWatch', () => {
  it('sizes its window at one season or the cap, whichever is smaller', () => {
    expect(accuracyWindowFor(24)).toBe(24);
    expect(accuracyWindowFor(1440)).toBe(ACCURACY_WINDOW_STEPS_MAX);
    expect(() => new AccuracyWatch({ window: 0 })).toThrow(/window/);
    expect(() => new AccuracyWatch({ window: 10, minCount: 11 })).toThrow(/minCount/);
  });

  it('scores only steps it has a forecast for, and only with a seasonal-naive figure', () => {
    const w = new AccuracyWatch({ window: 10 });
    expect(w.observe(1, 100, 90).count).toBe(0);
    w.expect(2, 110);
    expect(w.observe(2, 100, null).count).toBe(0);
    w.expect(3, 110);
    const v = w.observe(3, 100, 95);
    expect(v).toMatchObject({ count: 1, modelMae: 10, naiveMae: 5, mode: 'predictive', changed: null });
    // The forecast was consumed: the same step arriving again scores nothing more.
    expect(w.observe(3, 100, 95).count).toBe(1);
  });

  it('keeps a rolling window: old errors leave it', () => {
    const w = new AccuracyWatch({ window: 4, minCount: 4, margin: 0 });
    feed(w, 0, 4, 8, 8);
    expect(w.modelMae()).toBe(8);
    expect(w.full()).toBe(true);
    feed(w, 4, 4, 2, 8);
    expect(w.modelMae()).toBe(2);
    expect(w.scored()).toBe(4);
  });

  it('falls back past the margin and returns when no worse, without flapping inside the band', () => {
    const w = new AccuracyWatch({ window: 10 });
    const before = feed(w, 0, 4, 50, 5);
    // Below the minimum count (5 of 10): no judgement yet, however bad.
    expect(before.every((v) => v.mode === 'predictive')).toBe(true);
    const bad = feed(w, 4, 1, 50, 5)[0]!;
    expect(bad.mode).toBe('reactive');
    expect(bad.changed).toMatch(/worse than seasonal naive.*50\.000.*5\.000/);
    // Recovered into the band (worse by less than the margin): stays reactive until it is no worse.
    const w2 = new AccuracyWatch({ window: 10 });
    feed(w2, 0, 10, 20, 10);
    expect(w2.mode()).toBe('reactive');
    const inBand = feed(w2, 10, 10, 10 * (1 + FALLBACK_MARGIN / 2), 10);
    expect(inBand.at(-1)!.mode).toBe('reactive');
    const good = feed(w2, 20, 10, 9, 10);
    const back = good.find((v) => v.changed !== null)!;
    expect(back.mode).toBe('predictive');
    expect(back.changed).toMatch(/at least as good/);
    // In the band again from predictive: no flap back.
    expect(feed(w2, 30, 10, 10 * (1 + FALLBACK_MARGIN / 2), 10).every((v) => v.mode === 'predictive')).toBe(true);
  });

  it('a model that ties seasonal naive never falls back; reset clears scores but keeps the mode', () => {
    const w = new AccuracyWatch({ window: 5 });
    expect(feed(w, 0, 20, 7, 7).every((v) => v.mode === 'predictive')).toBe(true);
    feed(w, 20, 5, 70, 7);
    expect(w.mode()).toBe('reactive');
    w.reset();
    expect(w.scored()).toBe(0);
    expect(w.modelMae()).toBeNull();
    expect(w.mode()).toBe('reactive');
  });

  it('bounds the forecasts waiting for their step, dropping the oldest, and forgets steps that never came', () => {
    const w = new AccuracyWatch({ window: 5 });
    for (let t = 0; t < PENDING_FORECASTS_MAX + 10; t++) w.expect(t, 1);
    expect(w.observe(0, 1, 1).count).toBe(0);
    expect(w.observe(PENDING_FORECASTS_MAX + 9, 1, 1).count).toBe(1);
    w.forgetBefore(PENDING_FORECASTS_MAX);
    expect(w.observe(PENDING_FORECASTS_MAX - 1, 1, 1).count).toBe(1);
  });
});
