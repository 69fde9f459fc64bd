// Proves every forecaster in CONTRACT_SUBJECTS keeps the Forecaster contract: H non-negative finite
// steps (point and P90) per view, nothing read past a view's origin (not even through the shared
// buffer of a subarray), and the same forecasts however often and in whatever order it is asked.
import { describe, expect, it } from 'vitest';
import { viewAt, type Forecaster, type Series } from './forecaster.ts';
import { HoltWintersForecaster, LastValueForecaster, SeasonalNaiveForecaster } from './baselines/index.ts';
import { LstmForecaster } from './lstm/index.ts';

/** The forecasters under contract: add a model with one line (e.g. the LSTM with a tiny epoch cap). */
export const CONTRACT_SUBJECTS: readonly { readonly name: string; readonly create: () => Forecaster }[] = [
  { name: 'seasonal_naive', create: () => new SeasonalNaiveForecaster() },
  { name: 'last_value', create: () => new LastValueForecaster() },
  { name: 'holt_winters_add', create: () => new HoltWintersForecaster() },
  // A tiny training budget: the contract is about what forecasts may read and return, not their skill.
  { name: 'lstm', create: () => new LstmForecaster({ epochsMax: 2, windowsPerEpochMax: 256, seed: 7 }) },
];

const SEASON = 24;
const HORIZON = 12;
const ROWS = 24 * 30;
const N_TRAIN = Math.floor(0.8 * ROWS);

/** A daily cycle that dips to 0 (so clipping matters), a slow decline and deterministic noise. */
function synthetic(name: string, rows = ROWS): Series {
  const values = new Float64Array(rows);
  let state = 12345;
  for (let t = 0; t < rows; t++) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const noise = (state / 2 ** 31 - 0.5) * 20;
    values[t] = Math.max(0, 60 + 70 * Math.sin((2 * Math.PI * t) / SEASON) - 0.02 * t + noise);
  }
  const timestamps = Float64Array.from({ length: rows }, (_, t) => Date.UTC(2015, 0, 1) + t * 3_600_000);
  return { name, timestamps, values };
}

/** `series` with every value from `origin` on replaced by something no forecaster could miss. */
function withOtherFuture(series: Series, origin: number): Series {
  const values = Float64Array.from(series.values, (v, t) => (t < origin ? v : v * 100 + 10_000));
  return { name: `${series.name}-other-future`, timestamps: series.timestamps, values };
}

async function fitted(create: () => Forecaster, series: Series): Promise<Forecaster> {
  const f = create();
  await f.fit(viewAt(series, N_TRAIN), { season: SEASON, horizon: HORIZON, seed: 7 });
  return f;
}

const asArrays = (fs: readonly { point: Float64Array; p90: Float64Array }[]) => fs.map((f) => [Array.from(f.point), Array.from(f.p90)]);

describe.each(CONTRACT_SUBJECTS)('Forecaster contract: $name', ({ create }) => {
  const series = synthetic('contract');
  const origins = Array.from({ length: ROWS - HORIZON - N_TRAIN + 1 }, (_, i) => N_TRAIN + i);

  it('gives one forecast of H non-negative finite steps (point and P90) per view', async () => {
    const f = await fitted(create, series);
    const out = await f.forecast(
      origins.map((o) => viewAt(series, o)),
      HORIZON,
    );
    expect(out).toHaveLength(origins.length);
    for (const fc of out) {
      expect(fc.point).toHaveLength(HORIZON);
      expect(fc.p90).toHaveLength(HORIZON);
      for (const v of [...fc.point, ...fc.p90]) {
        expect(Number.isFinite(v)).toBe(true);
        expect(v).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it('never reads past the view: a different future changes nothing', async () => {
    const f = await fitted(create, series);
    for (const o of [N_TRAIN, N_TRAIN + 7, ROWS - HORIZON]) {
      const other = withOtherFuture(series, o);
      const [mine] = await f.forecast([viewAt(series, o)], HORIZON);
      const [theirs] = await f.forecast([viewAt(other, o)], HORIZON);
      expect(asArrays([theirs!])).toEqual(asArrays([mine!]));
    }
    // Fitting on a training view whose buffer holds another future gives the same model too.
    const g = await fitted(create, withOtherFuture(series, N_TRAIN));
    const views = [N_TRAIN, N_TRAIN + 30].map((o) => viewAt(series, o));
    expect(asArrays(await g.forecast(views, HORIZON))).toEqual(asArrays(await f.forecast(views, HORIZON)));
  });

  it('repeats: same forecasts on a second call, in reverse order, one by one, and after a refit', async () => {
    const f = await fitted(create, series);
    const views = origins.map((o) => viewAt(series, o));
    const first = asArrays(await f.forecast(views, HORIZON));
    expect(asArrays(await f.forecast(views, HORIZON))).toEqual(first);
    expect(asArrays(await f.forecast([...views].reverse(), HORIZON)).reverse()).toEqual(first);
    const oneByOne = [];
    for (const v of [views[40]!, views[3]!, views[40]!]) oneByOne.push(...asArrays(await f.forecast([v], HORIZON)));
    expect(oneByOne).toEqual([first[40], first[3], first[40]]);
    const g = await fitted(create, series);
    expect(asArrays(await g.forecast(views, HORIZON))).toEqual(first);
  });
});
