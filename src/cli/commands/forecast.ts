/**
 * `edgeq forecast …`: train the LSTM traffic forecaster on a trace, predict with a saved model,
 * and run the evaluation protocol (forecast/PROTOCOL: /work/shared/data/traffic/PROTOCOL.md) for
 * the LSTM and the baselines. Other tools drive these commands, so stdout carries only the result
 * (one JSON document with --json) and every progress line goes to stderr.
 *
 * The LSTM module (TensorFlow.js) is imported only by the commands that use it, so the baselines
 * and the rest of the CLI never pay for loading it.
 */
import type { Command } from 'commander';
import { EdgeqError } from '../../core/errors.ts';
import { findGaps, readSeriesCsv, requireRows } from '../../../forecast/csv.ts';
import { viewAt, type Forecaster } from '../../../forecast/forecaster.ts';
import { backtest, FORECAST_CHUNK_VIEWS, planBacktest, type BacktestResult } from '../../../forecast/backtest.ts';
import { BASELINE_NAMES, createBaseline } from '../../../forecast/baselines/index.ts';
import { selectBest } from '../../../forecast/select.ts';
import { registerForecastPlanCommand } from './forecast-plan.ts';

/** Every method the backtest knows, in report order. */
export const FORECAST_METHODS = ['lstm', ...BASELINE_NAMES] as const;
/** The protocol's horizon (PROTOCOL.md §1), the default of every command. */
const DEFAULT_HORIZON = '12';

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function progress(line: string): void {
  process.stderr.write(`edgeq forecast: ${line}\n`);
}

/** Parses a flag that must be a positive (or, with `min` 0, non-negative) integer. */
function integerFlag(flag: string, raw: string, min = 1): number {
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new EdgeqError('INVALID_ARGUMENT', `${flag} must be ${min === 0 ? 'a non-negative' : 'a positive'} integer, got "${raw}"`, { details: { flag, value: raw } });
  }
  return value;
}

/** Parses a flag that must be a plain decimal number (range checks are the consumer's). */
function numberFlag(flag: string, raw: string): number {
  const value = /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isFinite(value)) throw new EdgeqError('INVALID_ARGUMENT', `${flag} must be a decimal number, got "${raw}"`, { details: { flag, value: raw } });
  return value;
}

/** The LSTM's point-path peak term (LstmOptions.peakWeight / peakQuantile) from the flags. */
interface PeakFlags {
  peakWeight?: string;
  peakQuantile?: string;
}

function lstmOptionsFrom(opts: PeakFlags): LstmOptionsLite {
  return {
    ...(opts.peakWeight === undefined ? {} : { peakWeight: numberFlag('--peak-weight', opts.peakWeight) }),
    ...(opts.peakQuantile === undefined ? {} : { peakQuantile: numberFlag('--peak-quantile', opts.peakQuantile) }),
  };
}

const peakWeightHelp = "weight of the LSTM point path's peak term (0 = off, the default; up to 100)";
const peakQuantileHelp = "quantile of the actual window peak the LSTM point path's peak is trained to (0..1, default 0.5)";

function strideFlag(raw: string): 1 | 12 {
  const stride = integerFlag('--stride', raw);
  if (stride !== 1 && stride !== 12) throw new EdgeqError('INVALID_ARGUMENT', `--stride must be 1 or 12, got "${raw}"`, { details: { flag: '--stride', value: raw } });
  return stride;
}

function methodsFlag(raw: string): string[] {
  const names = [...new Set(raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0))];
  const unknown = names.filter((n) => !(FORECAST_METHODS as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new EdgeqError('INVALID_ARGUMENT', `--methods: unknown method(s) "${unknown.join(',') || raw}" (known: ${FORECAST_METHODS.join(', ')})`, { details: { flag: '--methods', value: raw } });
  }
  return names;
}

/** What these commands use of the LSTM (forecast/lstm/, owned by its own module). */
interface LstmModel extends Forecaster {
  /** Input steps the model reads before an origin. */
  readonly window: number;
  save(dir: string): Promise<void>;
}

/** The LSTM options these commands set (the constructor checks their ranges). */
interface LstmOptionsLite {
  readonly peakWeight?: number;
  readonly peakQuantile?: number;
}

/** The LSTM module's export these commands need. */
interface LstmModule {
  readonly LstmForecaster: { new (options?: LstmOptionsLite): LstmModel; load(dir: string): Promise<LstmModel> };
}

async function loadLstmModule(): Promise<LstmModule> {
  return (await import('../../../forecast/lstm/index.ts')) as LstmModule;
}

/** A new, unfitted forecaster by its report name. */
async function createForecaster(name: string, lstmOptions: LstmOptionsLite): Promise<Forecaster> {
  if (name === 'lstm') return new (await loadLstmModule()).LstmForecaster(lstmOptions);
  return createBaseline(name);
}

const fixed = (v: number, digits: number): string => (Number.isFinite(v) ? v.toFixed(digits) : String(v));

/** The backtest figures as an aligned text table. */
function table(results: readonly BacktestResult[]): string {
  const header = ['method', 'MASE', 'sMAPE%', 'peak', 'under', 'over', 'origins', 'train ms', 'backend'];
  const rows = results.map((r) => [r.method, fixed(r.mase, 4), fixed(r.smape, 2), fixed(r.peakCapture, 3), fixed(r.peakUnder, 3), fixed(r.peakOver, 3), String(r.origins), fixed(r.trainMs, 0), r.backend]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd()).join('\n');
}

/** Registers `edgeq forecast train|predict|backtest`. */
export function registerForecastCommands(program: Command): void {
  const forecast = program.command('forecast').description('traffic forecasting: train the LSTM, predict, backtest against the baselines');
  registerForecastPlanCommand(forecast);

  forecast
    .command('train')
    .description('train the LSTM on every row of a trace CSV and save it to a folder')
    .requiredOption('--csv <file>', 'trace CSV (timestamp,value)')
    .requiredOption('--season <steps>', 'season length in steps (one day: 288 at 5 min, 48 at 30 min)')
    .option('--horizon <steps>', 'steps forecast at each origin', DEFAULT_HORIZON)
    .requiredOption('--out <dir>', 'folder to save the model to')
    .option('--budget-ms <ms>', 'wall-clock training budget')
    .option('--seed <n>', 'seed for anything random')
    .option('--peak-weight <w>', peakWeightHelp)
    .option('--peak-quantile <q>', peakQuantileHelp)
    .action(async (opts: { csv: string; season: string; horizon: string; out: string; budgetMs?: string; seed?: string } & PeakFlags) => {
      const season = integerFlag('--season', opts.season);
      const horizon = integerFlag('--horizon', opts.horizon);
      const budgetMs = opts.budgetMs === undefined ? undefined : integerFlag('--budget-ms', opts.budgetMs);
      const seed = opts.seed === undefined ? undefined : integerFlag('--seed', opts.seed, 0);
      const lstmOptions = lstmOptionsFrom(opts);
      const series = await readSeriesCsv(opts.csv);
      const { LstmForecaster } = await loadLstmModule();
      const model = new LstmForecaster(lstmOptions);
      requireRows(series, model.window + horizon, 'one window plus the horizon');
      const n = series.values.length;
      progress(`training lstm on ${n} rows of ${opts.csv} (season ${season}, horizon ${horizon})`);
      const report = await model.fit(viewAt(series, n), { season, horizon, ...(budgetMs === undefined ? {} : { budgetMs }), ...(seed === undefined ? {} : { seed }) });
      await model.save(opts.out);
      progress(`saved to ${opts.out} after ${Math.round(report.trainMs)} ms on ${report.backend}`);
      print(JSON.stringify({ model: model.name, out: opts.out, rows: n, season, horizon, window: model.window, trainMs: report.trainMs, backend: report.backend, details: report.details ?? {} }));
    });

  forecast
    .command('predict')
    .description('forecast with a saved LSTM at every origin from N to rows − horizon (each from the rows before it)')
    .requiredOption('--model <dir>', 'folder of a saved model')
    .requiredOption('--csv <file>', 'trace CSV (timestamp,value)')
    .requiredOption('--from <n>', 'first origin (row index of the first forecast step)')
    .option('--horizon <steps>', 'steps forecast at each origin', DEFAULT_HORIZON)
    .option('--json', 'print one JSON array', false)
    .action(async (opts: { model: string; csv: string; from: string; horizon: string; json: boolean }) => {
      const from = integerFlag('--from', opts.from, 0);
      const horizon = integerFlag('--horizon', opts.horizon);
      const { LstmForecaster } = await loadLstmModule();
      const model = await LstmForecaster.load(opts.model);
      const series = await readSeriesCsv(opts.csv);
      const rows = series.values.length;
      if (from < model.window || from > rows - horizon) {
        throw new EdgeqError('INVALID_ARGUMENT', `--from must be between the model's window (${model.window}) and rows − horizon (${rows} − ${horizon} = ${rows - horizon}), got ${from}`, {
          details: { flag: '--from', value: from, window: model.window, rows, horizon },
        });
      }
      const out: { origin: number; forecast: number[]; p90: number[] }[] = [];
      // Bounded: origins run from `from` to rows − horizon, FORECAST_CHUNK_VIEWS views per call.
      for (let start = from; start <= rows - horizon; start += FORECAST_CHUNK_VIEWS) {
        const origins: number[] = [];
        for (let o = start; o < start + FORECAST_CHUNK_VIEWS && o <= rows - horizon; o++) origins.push(o);
        const forecasts = await model.forecast(
          origins.map((o) => viewAt(series, o)),
          horizon,
        );
        origins.forEach((origin, i) => {
          const f = forecasts[i]!;
          out.push({ origin, forecast: Array.from(f.point, (v) => Math.max(0, v)), p90: Array.from(f.p90, (v) => Math.max(0, v)) });
        });
      }
      if (opts.json) print(JSON.stringify(out));
      else for (const e of out) print(`${e.origin}\t${e.forecast.map((v) => fixed(v, 2)).join(' ')}\tp90 ${e.p90.map((v) => fixed(v, 2)).join(' ')}`);
    });

  forecast
    .command('backtest')
    .description('run the evaluation protocol (rolling origins on the last 20%) for the LSTM and the baselines, and select the best')
    .requiredOption('--csv <file>', 'trace CSV (timestamp,value)')
    .requiredOption('--season <steps>', 'season length in steps (one day: 288 at 5 min, 48 at 30 min)')
    .option('--horizon <steps>', 'steps forecast at each origin', DEFAULT_HORIZON)
    .option('--stride <steps>', 'origin stride: 1 (primary) or 12 (secondary)', '1')
    .option('--methods <list>', `comma-separated methods (${FORECAST_METHODS.join(',')})`, FORECAST_METHODS.join(','))
    .option('--budget-ms <ms>', 'wall-clock training budget of the LSTM')
    .option('--seed <n>', 'seed for anything random')
    .option('--peak-weight <w>', peakWeightHelp)
    .option('--peak-quantile <q>', peakQuantileHelp)
    .option('--json', 'print one JSON document', false)
    .action(async (opts: { csv: string; season: string; horizon: string; stride: string; methods: string; budgetMs?: string; seed?: string; json: boolean } & PeakFlags) => {
      const season = integerFlag('--season', opts.season);
      const horizon = integerFlag('--horizon', opts.horizon);
      const stride = strideFlag(opts.stride);
      const methods = methodsFlag(opts.methods);
      const budgetMs = opts.budgetMs === undefined ? undefined : integerFlag('--budget-ms', opts.budgetMs);
      const seed = opts.seed === undefined ? undefined : integerFlag('--seed', opts.seed, 0);
      // Every forecaster is built (and its options checked) before anything is read or trained.
      const lstmOptions = lstmOptionsFrom(opts);
      const forecasters = [];
      for (const method of methods) forecasters.push(await createForecaster(method, lstmOptions));
      const series = await readSeriesCsv(opts.csv);
      const options = { season, horizon, stride, ...(budgetMs === undefined ? {} : { budgetMs }), ...(seed === undefined ? {} : { seed }) };
      // Checks the split before any training, so a short file fails fast with INVALID_DATA.
      const plan = planBacktest(series, options);
      const gaps = findGaps(series);
      if (gaps.length > 0) progress(`${gaps.length} gap(s) kept as-is, each row one step (PROTOCOL.md §1): lines ${gaps.map((g) => g.line).join(', ')}`);
      const results: BacktestResult[] = [];
      for (const forecaster of forecasters) {
        const result = await backtest(series, forecaster, options);
        progress(`${forecaster.name} stride ${stride}: MASE ${fixed(result.mase, 4)}, sMAPE ${fixed(result.smape, 2)}%, peak capture ${fixed(result.peakCapture, 3)} over ${result.origins} origins`);
        results.push(result);
      }
      const selected = selectBest(results);
      if (opts.json) {
        print(JSON.stringify({ csv: opts.csv, rows: plan.rows, nTrain: plan.nTrain, season, horizon, stride, origins: plan.origins.length, gaps, results, selected }));
      } else {
        print(table(results));
        print(`selected: ${selected.method} (${selected.reason})`);
      }
    });
}
