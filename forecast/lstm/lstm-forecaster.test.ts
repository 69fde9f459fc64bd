/** Proves that the LSTM trains in a worker thread, beats last-value on a seasonal series, never peeks past the origin, repeats for a seed, honours its wall-clock budget and rejects too-short data. */
import { beforeAll, describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { viewAt, type Forecast, type FitReport, type Series } from '../forecaster.ts';
import { backendName } from '../runtime/index.ts';
import { LstmForecaster } from './index.ts';
import { burstyDailySine, noisyDailySine, syntheticHorizon, syntheticSeason, tinyOptions } from './synthetic.test-helper.ts';

const series: Series = noisyDailySine(40);
const nTrain = Math.floor(0.8 * series.values.length);
const fitOptions = { season: syntheticSeason, horizon: syntheticHorizon, seed: 3 };
const testOrigins = Array.from({ length: series.values.length - syntheticHorizon - nTrain + 1 }, (_, k) => nTrain + k);

function meanAbsError(forecasts: readonly Forecast[]): number {
  let sum = 0;
  forecasts.forEach((f, k) => {
    for (let h = 0; h < syntheticHorizon; h++) sum += Math.abs((f.point[h] ?? 0) - (series.values[(testOrigins[k] ?? 0) + h] ?? 0));
  });
  return sum / (forecasts.length * syntheticHorizon);
}

describe('LstmForecaster', () => {
  const model = new LstmForecaster(tinyOptions);
  let report: FitReport;
  let forecasts: Forecast[];

  beforeAll(async () => {
    report = await model.fit(viewAt(series, nTrain), fitOptions);
    forecasts = await model.forecast(testOrigins.map((o) => viewAt(series, o)), syntheticHorizon);
  }, 60_000);

  it('trains in a worker and reports backend, epochs and validation loss', () => {
    expect(model.name).toBe('lstm');
    expect(report.backend).toBe('wasm'); // tfjs-node is not installed here
    expect(backendName()).toBe('wasm'); // inference thread uses the same runtime
    expect(report.details?.epochs).toBeGreaterThanOrEqual(1);
    expect(report.details?.epochs).toBeLessThanOrEqual(tinyOptions.epochsMax ?? 0);
    expect(Number.isFinite(report.details?.bestValLoss)).toBe(true);
    expect(model.window).toBe(Math.max(tinyOptions.windowSteps! + syntheticSeason, tinyOptions.profileDays! * syntheticSeason));
  });

  it('forecasts the seasonal series much better than last value, with ordered non-negative quantiles', () => {
    const lastValue = testOrigins.map((o) => {
      const point = new Float64Array(syntheticHorizon).fill(series.values[o - 1] ?? 0);
      return { point, p90: point };
    });
    expect(meanAbsError(forecasts)).toBeLessThan(0.4 * meanAbsError(lastValue));
    for (const f of forecasts) {
      for (let h = 0; h < syntheticHorizon; h++) {
        expect(f.p10![h]!).toBeGreaterThanOrEqual(0);
        expect(f.p10![h]!).toBeLessThanOrEqual(f.point[h]!);
        expect(f.point[h]!).toBeLessThanOrEqual(f.p90[h]!);
      }
    }
  });

  it('gives the same forecast at origin o whatever follows o (no peeking)', async () => {
    const o = testOrigins[10]!;
    const tampered: Series = { ...series, values: Float64Array.from(series.values, (y, i) => (i >= o ? 1e6 - y : y)) };
    const [a] = await model.forecast([viewAt(series, o)], syntheticHorizon);
    const [b] = await model.forecast([viewAt(tampered, o)], syntheticHorizon);
    expect(Array.from(b!.point)).toEqual(Array.from(a!.point));
    expect(Array.from(b!.p90)).toEqual(Array.from(a!.p90));
  });

  it('repeats exactly for the same seed', async () => {
    const again = new LstmForecaster(tinyOptions);
    await again.fit(viewAt(series, nTrain), fitOptions);
    const views = testOrigins.slice(0, 20).map((o) => viewAt(series, o));
    const a = await model.forecast(views, syntheticHorizon);
    const b = await again.forecast(views, syntheticHorizon);
    expect(b.map((f) => Array.from(f.point))).toEqual(a.map((f) => Array.from(f.point)));
  }, 60_000);

  it('stops at the wall-clock budget and says so', async () => {
    const quick = new LstmForecaster(tinyOptions);
    const r = await quick.fit(viewAt(series, nTrain), { ...fitOptions, budgetMs: 1 });
    expect(r.details).toMatchObject({ stopReason: 'budget', epochs: 1, trainBudgetMs: 1 });
    const [f] = await quick.forecast([viewAt(series, nTrain)], syntheticHorizon);
    expect(f!.point.every(Number.isFinite)).toBe(true);
  }, 60_000);

  it('rejects a view with less history than the window as INVALID_DATA', async () => {
    const err = await model.forecast([viewAt(series, model.window - 1)], syntheticHorizon).catch((e: unknown) => e);
    expect(isEdgeqError(err, 'INVALID_DATA')).toBe(true);
  });

  it('rejects a training series too short for window + horizon as INVALID_DATA', async () => {
    const short = noisyDailySine(3);
    const err = await new LstmForecaster(tinyOptions).fit(viewAt(short, short.values.length), fitOptions).catch((e: unknown) => e);
    expect(isEdgeqError(err, 'INVALID_DATA')).toBe(true);
    expect((err as Error).message).toMatch(/too short/);
  });

  it('refuses to forecast before fit or load (INVALID_MODEL)', async () => {
    const err = await new LstmForecaster().forecast([viewAt(series, nTrain)], syntheticHorizon).catch((e: unknown) => e);
    expect(isEdgeqError(err, 'INVALID_MODEL')).toBe(true);
  });
});

describe('LstmForecaster with the point path peak term', () => {
  const bursty = burstyDailySine(40);
  const origins = testOrigins.map((o) => viewAt(bursty, o));

  /** Fraction of origins whose forecast peak is under 90% of the actual peak (PROTOCOL.md §6). */
  function peakUnder(forecasts: readonly Forecast[]): number {
    let under = 0;
    forecasts.forEach((f, k) => {
      const actual = bursty.values.subarray(testOrigins[k]!, testOrigins[k]! + syntheticHorizon);
      if (Math.max(...f.point) < 0.9 * Math.max(...actual)) under++;
    });
    return under / forecasts.length;
  }

  it('carries more of the window peaks than the plain median path', async () => {
    const plain = new LstmForecaster(tinyOptions);
    const peaked = new LstmForecaster({ ...tinyOptions, peakWeight: 2, peakQuantile: 0.7 });
    for (const m of [plain, peaked]) await m.fit(viewAt(bursty, nTrain), fitOptions);
    const [a, b] = [await plain.forecast(origins, syntheticHorizon), await peaked.forecast(origins, syntheticHorizon)];
    expect(peaked.meta?.training).toMatchObject({ peakWeight: 2, peakQuantile: 0.7 });
    expect(peakUnder(b)).toBeLessThan(peakUnder(a) - 0.2);
  }, 60_000);

  it.each([
    [{ peakWeight: -1 }, /peakWeight/],
    [{ peakWeight: Number.NaN }, /peakWeight/],
    [{ peakWeight: 101 }, /peakWeight/],
    [{ peakQuantile: 0 }, /peakQuantile/],
    [{ peakQuantile: 1 }, /peakQuantile/],
  ])('refuses %j as INVALID_ARGUMENT', (options, pattern) => {
    let err: unknown;
    try {
      new LstmForecaster(options);
    } catch (e) {
      err = e;
    }
    expect(isEdgeqError(err, 'INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toMatch(pattern);
  });
});
