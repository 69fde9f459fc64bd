// Proves the §6 metrics on hand-computed tiny examples, exactly: the scale Q, MASE, sMAPE (with the
// a = f = 0 rule), peak capture/under/over (with the A = 0 rule, summing to 1) and MASE per horizon.
import { describe, expect, it } from 'vitest';
import { MetricsAccumulator, peakOutcome, scoreForecasts, seasonalNaiveScale, smapeTerm } from './metrics.ts';

describe('seasonalNaiveScale (Q)', () => {
  it('is the mean |y[t] − y[t−m]| over t ∈ [m, n_train)', () => {
    // m = 2: |2−0|, |2−0|, |4−2|, |4−2| → 8 / 4.
    expect(seasonalNaiveScale([0, 0, 2, 2, 4, 4], 2)).toBe(2);
    // m = 1: |3−1| + |2−3| + |6−2| = 7 over 3 terms.
    expect(seasonalNaiveScale([1, 3, 2, 6], 1)).toBe(7 / 3);
  });

  it('rejects a training part of at most one season, and a zero scale', () => {
    expect(() => seasonalNaiveScale([1, 2], 2)).toThrow(expect.objectContaining({ code: 'INVALID_DATA' }));
    expect(() => seasonalNaiveScale([1, 2, 1, 2, 1, 2], 2)).toThrow(/scale is 0/);
    expect(() => seasonalNaiveScale([1, 2, 3], 0)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('smapeTerm', () => {
  it('is 200·|a − f| / (|a| + |f|) and 0 when a = f = 0', () => {
    expect(smapeTerm(3, 1)).toBe(100);
    expect(smapeTerm(0, 2)).toBe(200);
    expect(smapeTerm(0, 0)).toBe(0);
    expect(smapeTerm(5, 5)).toBe(0);
  });
});

describe('peakOutcome', () => {
  it('captures within ±10 % inclusive, else under or over', () => {
    expect(peakOutcome(10, 9)).toBe('captured');
    expect(peakOutcome(10, 11)).toBe('captured');
    expect(peakOutcome(10, 8.9)).toBe('under');
    expect(peakOutcome(10, 11.5)).toBe('over');
  });

  it('with A = 0 captures only F = 0; any positive F is over', () => {
    expect(peakOutcome(0, 0)).toBe('captured');
    expect(peakOutcome(0, 0.001)).toBe('over');
  });
});

describe('scoreForecasts / MetricsAccumulator', () => {
  // Q = 2, H = 2, K = 4. Origin by origin (actual | forecast):
  //   [3, 6] | [1, 2]  abs 2, 4  sMAPE 100, 100  A 6  F 2  under
  //   [0, 0] | [0, 0]  abs 0, 0  sMAPE 0, 0      A 0  F 0  captured
  //   [5,10] | [3,10]  abs 2, 0  sMAPE 50, 0     A 10 F 10 captured
  //   [0, 0] | [2, 0]  abs 2, 0  sMAPE 200, 0    A 0  F 2  over
  const values = [3, 6, 0, 0, 5, 10, 0, 0];
  const origins = [0, 2, 4, 6];
  const forecasts = [
    [1, 2],
    [0, 0],
    [3, 10],
    [2, 0],
  ];

  it('gives the hand-computed figures exactly', () => {
    const m = scoreForecasts(values, origins, forecasts, 2, 2);
    expect(m.mase).toBe(10 / 16);
    expect(m.smape).toBe(450 / 8);
    expect(m.peakCapture).toBe(0.5);
    expect(m.peakUnder).toBe(0.25);
    expect(m.peakOver).toBe(0.25);
    expect(m.maseByHorizon).toEqual([0.75, 0.5]);
    expect(m.origins).toBe(4);
  });

  it('MASE is the mean over origins of the per-origin MASE, and the mean of MASE per horizon', () => {
    const m = scoreForecasts(values, origins, forecasts, 2, 2);
    const perOrigin = origins.map((o, i) => scoreForecasts(values, [o], [forecasts[i]!], 2, 2).mase);
    expect(perOrigin.reduce((a, b) => a + b, 0) / perOrigin.length).toBe(m.mase);
    expect((m.maseByHorizon[0]! + m.maseByHorizon[1]!) / 2).toBe(m.mase);
  });

  it('counts P90 coverage as actual ≤ band', () => {
    const acc = new MetricsAccumulator(2, 1);
    acc.add([3, 6], [1, 2], [3, 5]);
    expect(acc.result().p90Coverage).toBe(0.5);
  });

  it('rejects an origin without a full window of actuals', () => {
    expect(() => scoreForecasts(values, [7], [[1, 1]], 2, 2)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
