// Proves the cold-start phases and candidates follow the documented history bounds, cold-start
// models forecast (bandless when too short for a band), selection picks the lowest backtest MASE
// and fits the winner on the whole history, a fitted baseline survives its snapshot, and the
// default factory does all of it in a worker thread with the same result as in this thread.
import { describe, expect, it } from 'vitest';
import { createBaseline } from '../baselines/index.ts';
import { noisyDailySine } from '../lstm/synthetic.test-helper.ts';
import type { Series } from '../forecaster.ts';
import { candidatesFor, fitColdStart, LSTM_SEASONS_MIN, phaseFor, selectionMinSteps, selectModel } from './model-choice.ts';
import { reviveBaseline, snapshotBaseline } from './model-snapshot.ts';
import { workerModelFactory } from './retrain-client.ts';

const m = 24;
const H = 6;
/** The series plus the H future timestamps the planner appends. */
function withFuture(s: Series): Series {
  const n = s.values.length;
  const step = s.timestamps[1]! - s.timestamps[0]!;
  const ts = new Float64Array(n + H);
  ts.set(s.timestamps);
  for (let h = 0; h < H; h++) ts[n + h] = s.timestamps[n - 1]! + (h + 1) * step;
  return { ...s, timestamps: ts };
}

describe('phases and candidates', () => {
  it('last_value, then seasonal_naive from m + 1 steps, then selection from 3m + 4H', () => {
    expect(selectionMinSteps(m, H)).toBe(3 * m + 4 * H);
    expect(phaseFor(0, m, H)).toBe('empty');
    expect(phaseFor(m, m, H)).toBe('last_value');
    expect(phaseFor(m + 1, m, H)).toBe('seasonal_naive');
    expect(phaseFor(selectionMinSteps(m, H) - 1, m, H)).toBe('seasonal_naive');
    expect(phaseFor(selectionMinSteps(m, H), m, H)).toBe('selection');
  });

  it('the LSTM joins the baselines only with a week of history, and only when allowed', () => {
    expect(candidatesFor(selectionMinSteps(m, H) - 1, m, H, true)).toEqual([]);
    expect(candidatesFor(LSTM_SEASONS_MIN * m - 1, m, H, true)).toEqual(['seasonal_naive', 'holt_winters_add', 'last_value']);
    expect(candidatesFor(LSTM_SEASONS_MIN * m, m, H, true)).toContain('lstm');
    expect(candidatesFor(LSTM_SEASONS_MIN * m, m, H, false)).not.toContain('lstm');
  });
});

describe('cold start', () => {
  it('forecasts without a band when the history is too short for one, with one after', async () => {
    const s = withFuture(noisyDailySine(3));
    const short = await fitColdStart('last_value', { origin: 3, values: s.values.subarray(0, 3), timestamps: s.timestamps }, { season: m, horizon: H });
    const [f] = await short.forecast([{ origin: 3, values: s.values.subarray(0, 3), timestamps: s.timestamps }], H);
    expect(Array.from(f!.point)).toEqual(new Array(H).fill(s.values[2]));
    expect(Array.from(f!.p90)).toEqual(Array.from(f!.point));
    const n = 2 * m;
    const sn = await fitColdStart('seasonal_naive', { origin: n, values: s.values.subarray(0, n), timestamps: s.timestamps }, { season: m, horizon: H });
    expect(sn.name).toBe('seasonal_naive');
    const [g] = await sn.forecast([{ origin: n, values: s.values.subarray(0, n), timestamps: s.timestamps }], H);
    expect(g!.point[0]).toBe(s.values[n - m]);
    expect(g!.p90.some((v, h) => v > g!.point[h]!)).toBe(true);
  });
});

describe('selection', () => {
  it('picks the lowest backtest MASE and fits the winner on the whole history', async () => {
    const s = withFuture(noisyDailySine(10));
    const sel = await selectModel(s, ['seasonal_naive', 'holt_winters_add', 'last_value', 'lstm'], { season: m, horizon: H });
    expect(sel.ranking.map((c) => c.method)).toHaveLength(3);
    expect(sel.method).toBe(sel.ranking[0]!.method);
    expect(sel.backtestMase).toBe(sel.ranking[0]!.mase);
    expect(sel.method).not.toBe('last_value'); // a daily sine: the seasonal models win
    expect(sel.skipped).toEqual([{ method: 'lstm', reason: expect.stringMatching(/no builder/) }]);
    const n = s.values.length;
    const [f] = await sel.forecaster.forecast([{ origin: n, values: s.values, timestamps: s.timestamps }], H);
    expect(f!.point).toHaveLength(H);
  });

  it('a fitted baseline survives its snapshot (structured clone) with identical forecasts', async () => {
    const s = withFuture(noisyDailySine(5));
    const n = s.values.length;
    const view = { origin: n, values: s.values, timestamps: s.timestamps };
    for (const name of ['seasonal_naive', 'holt_winters_add', 'last_value']) {
      const model = createBaseline(name);
      await model.fit(view, { season: m, horizon: H });
      const revived = reviveBaseline(structuredClone(snapshotBaseline(model)) as never);
      expect(revived.name).toBe(name);
      const [a] = await model.forecast([view], H);
      const [b] = await revived.forecast([view], H);
      expect(Array.from(b!.point)).toEqual(Array.from(a!.point));
      expect(Array.from(b!.p90)).toEqual(Array.from(a!.p90));
    }
  });

  it('the default factory selects and fits in a worker thread, same result as in this thread', async () => {
    const s = withFuture(noisyDailySine(10));
    const here = await selectModel(s, ['seasonal_naive', 'holt_winters_add', 'last_value'], { season: m, horizon: H });
    const factory = workerModelFactory({ lstm: false });
    const there = await factory.retrain({
      values: Float64Array.from(s.values),
      timestamps: Float64Array.from(s.timestamps),
      season: m,
      horizon: H,
      candidates: ['seasonal_naive', 'holt_winters_add', 'last_value', 'lstm'],
      signal: new AbortController().signal,
    });
    expect(there.method).toBe(here.method);
    expect(there.backtestMase).toBeCloseTo(here.backtestMase, 12);
    const view = { origin: s.values.length, values: s.values, timestamps: s.timestamps };
    const [a] = await here.forecaster.forecast([view], H);
    const [b] = await there.forecaster.forecast([view], H);
    expect(Array.from(b!.point)).toEqual(Array.from(a!.point));
  }, 60_000);

  it('an LSTM winner is trained in the worker, saved there and loaded here, and forecasts', async () => {
    // The LSTM as the only candidate, with a short training: the path a winning LSTM takes (a
    // nested training worker, a model folder, loaded on the planner's side) end to end.
    const s = withFuture(noisyDailySine(LSTM_SEASONS_MIN + 3));
    const factory = workerModelFactory({ lstm: { epochsMax: 2, trainBudgetMs: 20_000, windowsPerEpochMax: 256 }, seed: 7 });
    const chosen = await factory.retrain({
      values: Float64Array.from(s.values),
      timestamps: Float64Array.from(s.timestamps),
      season: m,
      horizon: H,
      candidates: ['lstm'],
      signal: new AbortController().signal,
    });
    expect(chosen.method).toBe('lstm');
    expect(Number.isFinite(chosen.backtestMase)).toBe(true);
    const view = { origin: s.values.length, values: s.values, timestamps: s.timestamps };
    const [f] = await chosen.forecaster.forecast([view], H);
    expect(f!.point).toHaveLength(H);
    expect(Array.from(f!.point).every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
    expect(Array.from(f!.p90).every((v, h) => v >= f!.point[h]!)).toBe(true);
  }, 120_000);

  it('an aborted retraining rejects and its worker stops', async () => {
    const s = withFuture(noisyDailySine(10));
    const abort = new AbortController();
    const run = workerModelFactory({ lstm: false }).retrain({ values: Float64Array.from(s.values), timestamps: Float64Array.from(s.timestamps), season: m, horizon: H, candidates: ['seasonal_naive'], signal: abort.signal });
    abort.abort();
    await expect(run).rejects.toThrow(/aborted/);
  });
});
