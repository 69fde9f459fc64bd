/**
 * Scratch tuning/evaluation script for the LSTM forecaster (not a product command: the other
 * engineer's backtester and `bench:forecast` are the official evaluation). It scores the LSTM and
 * the seasonal-naive and last-value baselines under PROTOCOL.md (stride 1, H = 12, MASE scaled by
 * the in-sample daily seasonal-naive MAE, sMAPE, peak capture, peak-under, peak-under of P90).
 *
 * Usage: node --import tsx bench/lstm-tune.ts [--baselines-only] [--official] [--out file.json]
 *   [--save-dir dir] [trace ...]
 * Options for the LSTM come from the env var LSTM_OPTS as JSON (a Partial<LstmOptions>), the seed
 * from LSTM_SEED (default 1).
 *
 * Tuning notes (2026-11-29, wasm backend with SIMD, 2 shared cores, so timings are noisy; tuned on
 * nyc_taxi, Twitter_volume_AAPL and elb_request_count_8c0756 only):
 * - W = 24 recent steps + one-day lag per input step + per-target-step lags (1 day, mean of 1..3
 *   days, 1 week when >= 2000 windows remain) beat seasonal naive and Holt-Winters by a wide
 *   margin on all three (MASE 0.621 / 0.772 / 0.757); an epoch of 4096 windows takes 4-6 s, so a
 *   288-step window was never needed.
 * - levelInputs (features and targets relative to the window median): 0.612 / 0.765 / 0.777, mean
 *   0.718 vs 0.717; adopted by a rule fixed before looking at the other traces (mean within 1 %,
 *   no trace worse by more than 3 %), for robustness to level shifts.
 * - Point forecast = P50. On noisy series (Twitter, ELB) a median's max over 12 steps sits well
 *   below the max of 12 noisy actuals, so its peak-under rate is far above seasonal naive's
 *   (whose forecast is itself a noisy day); the P90 band's peak-under is far below it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger } from '../src/core/index.ts';
import { viewAt, type Forecast, type Series, type SeriesView } from '../forecast/forecaster.ts';
import type { LstmOptions } from '../forecast/lstm/index.ts';

const log = createLogger({ name: 'lstm-tune' });
const dataDir = '/work/shared/data/traffic';
const horizonSteps = 12;
/** Origins forecast per LSTM call: bounds the size of one inference tensor. */
const originsPerBatch = 512;

const allTraces = [
  'nyc_taxi',
  'Twitter_volume_AAPL',
  'elb_request_count_8c0756',
  'Twitter_volume_AMZN',
  'Twitter_volume_GOOG',
  'Twitter_volume_FB',
  'Twitter_volume_IBM',
  'Twitter_volume_KO',
  'ec2_network_in_257a54',
];

/** Reads a NAB CSV (timestamps as UTC). */
export function readTrace(name: string): Series {
  const text = readFileSync(path.join(dataDir, `${name}.csv`), 'utf8');
  const lines = text.trim().split('\n').slice(1);
  const timestamps = new Float64Array(lines.length);
  const values = new Float64Array(lines.length);
  lines.forEach((line, i) => {
    const [ts, v] = line.split(',');
    timestamps[i] = Date.parse(`${(ts ?? '').replace(' ', 'T')}Z`);
    values[i] = Number(v);
  });
  return { name, timestamps, values };
}

/** Season length of a trace per PROTOCOL §1. */
export function seasonOf(name: string): number {
  return name === 'nyc_taxi' ? 48 : 288;
}

interface Scores {
  mase: number;
  smape: number;
  peakCapture: number;
  peakUnder: number;
  peakOver: number;
  peakUnderP90: number;
}

/** Scores forecasts made at origins nTrain..n-H (PROTOCOL §6). */
function score(series: Series, nTrain: number, m: number, forecasts: readonly Forecast[]): Scores {
  const y = series.values;
  let q = 0;
  for (let t = m; t < nTrain; t++) q += Math.abs((y[t] ?? 0) - (y[t - m] ?? 0));
  q /= nTrain - m;
  let absSum = 0;
  let smapeSum = 0;
  let captured = 0;
  let under = 0;
  let over = 0;
  let underP90 = 0;
  forecasts.forEach((f, k) => {
    const o = nTrain + k;
    let aMax = -Infinity;
    let fMax = -Infinity;
    let p90Max = -Infinity;
    for (let h = 0; h < horizonSteps; h++) {
      const a = y[o + h] ?? 0;
      const p = f.point[h] ?? 0;
      absSum += Math.abs(a - p);
      smapeSum += a === 0 && p === 0 ? 0 : (200 * Math.abs(a - p)) / (Math.abs(a) + Math.abs(p));
      aMax = Math.max(aMax, a);
      fMax = Math.max(fMax, p);
      p90Max = Math.max(p90Max, f.p90[h] ?? 0);
    }
    if (aMax === 0) {
      if (fMax === 0) captured++;
      else over++;
    } else if (Math.abs(fMax - aMax) <= 0.1 * aMax) captured++;
    else if (fMax < 0.9 * aMax) under++;
    else over++;
    if (p90Max < 0.9 * aMax) underP90++;
  });
  const k = forecasts.length;
  return {
    mase: absSum / (k * horizonSteps) / q,
    smape: smapeSum / (k * horizonSteps),
    peakCapture: captured / k,
    peakUnder: under / k,
    peakOver: over / k,
    peakUnderP90: underP90 / k,
  };
}

function seasonalNaive(view: SeriesView, m: number): Forecast {
  const point = new Float64Array(horizonSteps);
  for (let h = 0; h < horizonSteps; h++) point[h] = view.values[view.origin + h - m] ?? 0;
  return { point, p90: point };
}

function lastValue(view: SeriesView): Forecast {
  const point = new Float64Array(horizonSteps).fill(view.values[view.origin - 1] ?? 0);
  return { point, p90: point };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const baselinesOnly = args.includes('--baselines-only');
  const withOfficial = args.includes('--official');
  const outIdx = args.indexOf('--out');
  const outFile = outIdx >= 0 ? args[outIdx + 1] : undefined;
  const saveIdx = args.indexOf('--save-dir');
  const saveDir = saveIdx >= 0 ? args[saveIdx + 1] : undefined;
  const names = args.filter((a, i) => !a.startsWith('--') && i !== outIdx + 1 && i !== saveIdx + 1);
  const traces = names.length > 0 ? names : allTraces;
  const opts = JSON.parse(process.env.LSTM_OPTS ?? '{}') as Partial<LstmOptions>;
  const rows: Record<string, unknown>[] = [];
  for (const name of traces) {
    const series = readTrace(name);
    const n = series.values.length;
    const nTrain = Math.floor(0.8 * n);
    const m = seasonOf(name);
    const views: SeriesView[] = [];
    for (let o = nTrain; o + horizonSteps <= n; o++) views.push(viewAt(series, o));
    const sn = score(series, nTrain, m, views.map((v) => seasonalNaive(v, m)));
    const lv = score(series, nTrain, m, views.map((v) => lastValue(v)));
    const row: Record<string, unknown> = {
      trace: name,
      snMase: round(sn.mase),
      snSmape: round(sn.smape),
      snPeakUnder: round(sn.peakUnder),
      lvMase: round(lv.mase),
      lvPeakUnder: round(lv.peakUnder),
    };
    if (withOfficial) {
      // The other engineer's backtester and Holt-Winters, when present (they may still be in flux).
      try {
        const { backtest } = await import('../forecast/backtest.ts');
        const { createBaseline } = await import('../forecast/baselines/index.ts');
        const hw = await backtest(series, createBaseline('holt_winters_add'), { season: m, horizon: horizonSteps, stride: 1 });
        Object.assign(row, { hwMase: round(hw.mase), hwPeakUnder: round(hw.peakUnder) });
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'holt-winters backtest unavailable');
      }
    }
    if (!baselinesOnly) {
      const { LstmForecaster } = await import('../forecast/lstm/index.ts');
      const model = new LstmForecaster(opts);
      const report = await model.fit(viewAt(series, nTrain), { season: m, horizon: horizonSteps, seed: Number(process.env.LSTM_SEED ?? 1) });
      const t0 = Date.now();
      const forecasts: Forecast[] = [];
      for (let i = 0; i < views.length; i += originsPerBatch) {
        forecasts.push(...(await model.forecast(views.slice(i, i + originsPerBatch), horizonSteps)));
      }
      const inferMs = Date.now() - t0;
      if (saveDir !== undefined) await model.save(path.join(saveDir, name));
      const s = score(series, nTrain, m, forecasts);
      Object.assign(row, {
        mase: round(s.mase),
        smape: round(s.smape),
        peakCapture: round(s.peakCapture),
        peakUnder: round(s.peakUnder),
        peakOver: round(s.peakOver),
        peakUnderP90: round(s.peakUnderP90),
        trainMs: report.trainMs,
        inferMs,
        backend: report.backend,
        ...report.details,
      });
      if (withOfficial) {
        try {
          const { scoreBacktest } = await import('../forecast/backtest.ts');
          const r = await scoreBacktest(series, model, { season: m, horizon: horizonSteps, stride: 1 }, report);
          Object.assign(row, { officialMase: round(r.mase), officialSmape: round(r.smape), officialPeakUnder: round(r.peakUnder), officialPeakCapture: round(r.peakCapture), p90Coverage: r.details.p90Coverage });
        } catch (err) {
          log.warn({ err: (err as Error).message }, 'official backtest unavailable');
        }
      }
    }
    log.info(row, 'trace scored');
    rows.push(row);
  }
  if (outFile !== undefined) writeFileSync(outFile, JSON.stringify({ opts, rows }, null, 2));
}

await main();
