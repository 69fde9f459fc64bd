// Proves the offline plan decides each step t from the forecast made at origin t − lead (reading no
// row at or after it), provisions for that forecast's p90[lead], batches its views, and refuses a
// bad lead, from or too short a series with typed errors naming the value.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../../src/core/index.ts';
import { FORECAST_CHUNK_VIEWS } from '../backtest.ts';
import type { Forecast, Forecaster, Series, SeriesView } from '../forecaster.ts';
import { checkOfflinePlan, offlinePlan, planTrainingView } from './offline-plan.ts';

const SEASON = 24;

function seriesOf(values: number[]): Series {
  return { name: 'test', timestamps: Float64Array.from(values, (_, i) => i * 300_000), values: Float64Array.from(values) };
}

/**
 * A scripted forecaster: step h of the forecast at origin o has point = 10·o + h and P90 = point +
 * the last value seen, so both the origin and the last row read show in the output.
 */
class Scripted implements Forecaster {
  readonly name = 'scripted';
  readonly calls: SeriesView[][] = [];
  async fit(): Promise<{ trainMs: number; backend: string }> {
    return { trainMs: 0, backend: 'js' };
  }
  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    this.calls.push([...views]);
    return views.map((v) => {
      const point = Float64Array.from({ length: horizon }, (_, h) => 10 * v.origin + h);
      const last = v.values[v.values.length - 1] ?? 0;
      return { point, p90: point.map((p) => p + last) };
    });
  }
}

const shape = { perInstance: 100, headroom: 0 };
const base = { lead: 2, horizon: 12, season: SEASON, shape };

describe('offlinePlan', () => {
  it('decides step t from origin t − lead and its p90[lead]', async () => {
    const values = Array.from({ length: 200 }, (_, i) => i % 7);
    const f = new Scripted();
    const plan = await offlinePlan(seriesOf(values), f, { ...base, from: 100 });
    expect(plan.map((e) => e.t)).toEqual(Array.from({ length: 100 }, (_, i) => 100 + i));
    for (const e of plan) {
      const o = e.t - 2;
      expect(e.p90).toBe(10 * o + 2 + (values[o - 1] as number));
      expect(e.instances).toBe(Math.max(1, Math.ceil(e.p90 / 100)));
    }
    for (const v of f.calls.flat()) expect(v.values.length).toBe(v.origin);
  });

  it('does not change an entry when the rows at and after t − lead are rewritten', async () => {
    const values = Array.from({ length: 200 }, (_, i) => 50 + (i % 9));
    const before = await offlinePlan(seriesOf(values), new Scripted(), { ...base, from: 100 });
    const t = 150;
    const rewritten = values.map((v, i) => (i >= t - 2 ? 10_000 : v));
    const after = await offlinePlan(seriesOf(rewritten), new Scripted(), { ...base, from: 100 });
    expect(after.filter((e) => e.t <= t)).toEqual(before.filter((e) => e.t <= t));
    expect(after.find((e) => e.t === t + 1)).not.toEqual(before.find((e) => e.t === t + 1));
  });

  it('batches at most FORECAST_CHUNK_VIEWS views per call', async () => {
    const f = new Scripted();
    const rows = FORECAST_CHUNK_VIEWS * 2 + 100;
    const plan = await offlinePlan(seriesOf(Array.from({ length: rows }, () => 1)), f, { ...base, from: 50 });
    expect(plan).toHaveLength(rows - 50);
    expect(f.calls.map((c) => c.length)).toEqual([FORECAST_CHUNK_VIEWS, FORECAST_CHUNK_VIEWS, rows - 50 - 2 * FORECAST_CHUNK_VIEWS]);
  });

  it('clips the P90 at 0 and never below the point; headroom raises the instances', async () => {
    const f: Forecaster = {
      name: 'negative',
      fit: async () => ({ trainMs: 0, backend: 'js' }),
      forecast: async (views, h) => views.map(() => ({ point: new Float64Array(h).fill(250), p90: new Float64Array(h).fill(-5) })),
    };
    const s = seriesOf(Array.from({ length: 60 }, () => 1));
    const [e] = await offlinePlan(s, f, { ...base, from: 59 });
    expect(e).toEqual({ t: 59, instances: 3, p90: 250 });
    const [h] = await offlinePlan(s, f, { ...base, from: 59, shape: { perInstance: 100, headroom: 0.5 } });
    expect(h?.instances).toBe(4);
  });

  it('trains on the rows before from − lead', () => {
    const view = planTrainingView(seriesOf(Array.from({ length: 80 }, (_, i) => i)), { from: 60, lead: 3 });
    expect(view.origin).toBe(57);
    expect(view.values.length).toBe(57);
  });

  it.each([
    [{ lead: 0 }, 'INVALID_ARGUMENT', /--lead must be an integer in \[1, horizon − 1 = 11\], got 0/],
    [{ lead: 12 }, 'INVALID_ARGUMENT', /--lead .* got 12/],
    [{ lead: 1.5 }, 'INVALID_ARGUMENT', /--lead .* got 1.5/],
    [{ horizon: 1, lead: 1 }, 'INVALID_ARGUMENT', /--horizon must be an integer of at least 2 .*got 1/],
    [{ from: 200 }, 'INVALID_ARGUMENT', /--from must be a row index in \[0, rows − 1 = 199\], got 200/],
    [{ from: 20 }, 'INVALID_ARGUMENT', /--from 20 leaves too little history for the season: 18 rows .*need 25 .*\[27, 199\]/],
    [{ from: 100, historyMin: 150 }, 'INVALID_ARGUMENT', /--from 100 .*need 150/],
  ])('refuses %j', (over, code, pattern) => {
    let caught: unknown;
    try {
      checkOfflinePlan(200, { ...base, from: 100, ...over });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(EdgeqError);
    expect((caught as EdgeqError).code).toBe(code);
    expect((caught as Error).message).toMatch(pattern);
  });

  it('refuses a series with too little history for the season (INVALID_DATA naming rows and season)', async () => {
    const short = seriesOf(Array.from({ length: 26 }, () => 1));
    await expect(offlinePlan(short, new Scripted(), { ...base, from: 25 })).rejects.toMatchObject({
      code: 'INVALID_DATA',
      message: expect.stringMatching(/too little history for the season: 26 rows .*season 24/),
    });
  });
});
