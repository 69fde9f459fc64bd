// Proves the three baselines follow PROTOCOL.md §7 on hand-checked numbers: seasonal naive and last
// value exactly, Holt-Winters' initial state and one recursion step, its fit staying inside (0, 1),
// its incremental filter matching a fresh run bit for bit, and the P90 band from in-sample errors.
import { describe, expect, it } from 'vitest';
import { viewAt, type Series, type SeriesView } from '../forecaster.ts';
import { createBaseline, HoltWintersForecaster, initialState, LastValueForecaster, runFilter, SeasonalNaiveForecaster, seasonalNaivePoint } from './index.ts';
import { applyBand, applyBands, quantileSorted, ResidualBand } from './residual-band.ts';

const view = (values: number[], origin = values.length): SeriesView => ({ origin, values: Float64Array.from(values).subarray(0, origin), timestamps: new Float64Array(values.length) });
const series = (values: ArrayLike<number>): Series => ({ name: 's', values: Float64Array.from(values), timestamps: new Float64Array(values.length) });

describe('seasonal_naive', () => {
  it('takes the value k·m steps back with the smallest k ≥ 1 keeping the index before the origin', () => {
    const out = new Float64Array(5);
    // m = 2, origin 6: h=1 → y[4], h=2 → y[5], h=3 → y[6−2·2+2]=y[4], h=4 → y[5], h=5 → y[4].
    seasonalNaivePoint([0, 1, 2, 3, 40, 50], 6, 2, out);
    expect(Array.from(out)).toEqual([40, 50, 40, 50, 40]);
  });

  it('forecasts y one season earlier and rejects a view shorter than a season', async () => {
    const f = new SeasonalNaiveForecaster();
    await f.fit(view([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), { season: 3, horizon: 2 });
    const [fc] = await f.forecast([view([5, 6, 7, 8])], 2);
    expect(Array.from(fc!.point)).toEqual([6, 7]);
    await expect(f.forecast([view([5, 6])], 2)).rejects.toMatchObject({ code: 'INVALID_DATA', message: expect.stringMatching(/too few rows/) });
  });
});

describe('last_value', () => {
  it('repeats y[o−1] and refuses to forecast before fit', async () => {
    const f = new LastValueForecaster();
    await expect(f.forecast([view([1])], 3)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await f.fit(view([1, 2, 3, 4, 5, 6]), { season: 2, horizon: 3 });
    const [fc] = await f.forecast([view([9, 8, 7])], 3);
    expect(Array.from(fc!.point)).toEqual([7, 7, 7]);
  });

  it('rejects a view holding more values than its origin (a peek at the future)', async () => {
    const f = new LastValueForecaster();
    await f.fit(view([1, 2, 3, 4, 5, 6]), { season: 2, horizon: 3 });
    const bad: SeriesView = { origin: 2, values: Float64Array.from([1, 2, 3]), timestamps: new Float64Array(3) };
    await expect(f.forecast([bad], 3)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('holt_winters_add', () => {
  it('initial state: level = mean of day 1, trend = (day 2 − day 1)/m, seasonal = mean deviation', () => {
    // m = 2, days [1, 3] and [3, 5]: means 2 and 4.
    const s = initialState([1, 3, 3, 5], 2);
    expect(s.level).toBe(2);
    expect(s.trend).toBe(1);
    expect(Array.from(s.seasonal)).toEqual([-1, 1]);
    expect(s.t).toBe(2);
    expect(s.initDays).toBe(2);
  });

  it('one recursion step matches the hand computation', () => {
    const s = initialState([1, 3, 3, 5], 2);
    // t = 2, y = 3: one-step forecast 2 + 1 − 1 = 2, error 1; l = .5·(3+1) + .5·3 = 3.5;
    // b = .5·1.5 + .5·1 = 1.25; s[0] = .5·(3 − 3.5) + .5·(−1) = −0.75.
    const sse = runFilter(s, [1, 3, 3, 5], 3, { alpha: 0.5, beta: 0.5, gamma: 0.5 }, 2);
    expect(sse).toBe(1);
    expect([s.level, s.trend, s.seasonal[0], s.t]).toEqual([3.5, 1.25, -0.75, 3]);
  });

  it('averages at most 7 days for the seasonal indices', () => {
    const values = Array.from({ length: 2 * 10 }, (_, t) => (t < 14 ? t % 2 : 10 * (t % 2)));
    const s = initialState(values, 2);
    expect(s.initDays).toBe(7);
    expect(Array.from(s.seasonal)).toEqual([-0.5, 0.5]);
  });

  it('fits parameters strictly inside (0, 1) and tracks a clean seasonal series closely', async () => {
    const m = 12;
    const y = Array.from({ length: m * 20 }, (_, t) => 100 + 0.1 * t + 30 * Math.sin((2 * Math.PI * t) / m));
    const f = new HoltWintersForecaster();
    const report = await f.fit(viewAt(series(y), m * 16), { season: m, horizon: 6 });
    for (const p of ['alpha', 'beta', 'gamma'] as const) {
      expect(report.details![p]).toBeGreaterThan(0);
      expect(report.details![p]).toBeLessThan(1);
    }
    expect(report.backend).toBe('js');
    const [fc] = await f.forecast([viewAt(series(y), m * 18)], 6);
    for (let h = 0; h < 6; h++) expect(Math.abs(fc!.point[h]! - y[m * 18 + h]!)).toBeLessThan(1);
  });

  it('the incremental filter gives bit-identical forecasts to a fresh run at each origin', async () => {
    const m = 12;
    const s = series(Array.from({ length: m * 30 }, (_, t) => Math.abs(50 + 20 * Math.sin(t / 2) + ((t * 7919) % 13))));
    const walked = new HoltWintersForecaster();
    await walked.fit(viewAt(s, m * 20), { season: m, horizon: 4 });
    const origins = Array.from({ length: 60 }, (_, i) => m * 20 + i);
    const incremental = await walked.forecast(
      origins.map((o) => viewAt(s, o)),
      4,
    );
    for (const [i, o] of origins.entries()) {
      const fresh = new HoltWintersForecaster();
      await fresh.fit(viewAt(s, m * 20), { season: m, horizon: 4 });
      // A copy has its own buffer, so this run cannot reuse any state.
      const [one] = await fresh.forecast([viewAt(series(s.values.slice(0, o)), o)], 4);
      expect(Array.from(incremental[i]!.point)).toEqual(Array.from(one!.point));
    }
  });

  it('rejects a training part shorter than two seasons', async () => {
    await expect(new HoltWintersForecaster().fit(view([1, 2, 3, 4, 5]), { season: 3, horizon: 1 })).rejects.toMatchObject({ code: 'INVALID_DATA' });
  });
});

describe('P10–P90 band', () => {
  it('is the 90th percentile of in-sample errors per horizon, never below the point', () => {
    expect(quantileSorted([0, 10], 0.9)).toBe(9);
    const band = new ResidualBand(2);
    for (let i = 0; i <= 10; i++) band.add([i, -i], [0, 0]);
    // Errors h=1: 0..10 → 9; h=2: −10..0 → −1, raised to 0.
    expect(Array.from(band.offsets())).toEqual([9, 0]);
    expect(Array.from(applyBand(Float64Array.from([1, 2, 3]), Float64Array.from([9, 0.5])))).toEqual([10, 2.5, 3.5]);
  });

  it('the lower band is the 10th percentile of in-sample errors, never above the point, clipped at 0', () => {
    const band = new ResidualBand(2);
    for (let i = 0; i <= 10; i++) band.add([i, -i], [0, 0]);
    // Errors h=1: 0..10 → P10 1, lowered to 0; h=2: −10..0 → −9.
    const { upper, lower } = band.bands();
    expect(Array.from(upper)).toEqual([9, 0]);
    expect(Array.from(lower)).toEqual([0, -9]);
    expect(Array.from(applyBands(Float64Array.from([5, 5, 20]), { upper, lower }).p10)).toEqual([5, 0, 11]);
  });

  it('every baseline reports P10 ≤ point ≤ P90, a band with width', async () => {
    const y = Array.from({ length: 200 }, (_, t) => 20 + 10 * Math.sin(t / 3) + (t % 7));
    for (const name of ['seasonal_naive', 'last_value', 'holt_winters_add']) {
      const f = createBaseline(name);
      await f.fit(viewAt(series(y), 160), { season: 24, horizon: 12 });
      const [fc] = await f.forecast([viewAt(series(y), 170)], 12);
      for (let h = 0; h < 12; h++) expect(fc!.p90[h]).toBeGreaterThanOrEqual(fc!.point[h]!);
      expect(fc!.p90.some((v, h) => v > fc!.point[h]!)).toBe(true);
      for (let h = 0; h < 12; h++) expect(fc!.p10![h]).toBeLessThanOrEqual(fc!.point[h]!);
      expect(fc!.p10!.some((v, h) => v < fc!.point[h]!)).toBe(true);
    }
  });

  it('createBaseline rejects an unknown name', () => {
    expect(() => createBaseline('arima')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
