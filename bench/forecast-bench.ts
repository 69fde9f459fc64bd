/**
 * Forecast benchmark (`npm run bench:forecast`): the evaluation protocol (PROTOCOL.md beside the
 * traces) for every trace in the traffic folder × {lstm, seasonal_naive, holt_winters_add,
 * last_value}. Each method is fitted once on the training part, then scored at stride 1 (the
 * primary protocol) and at stride 12 (reported separately, never mixed).
 *
 * Traces run one after another, because each LSTM training uses the machine's cores. Results go
 * to bench/results/forecast.json, rewritten after every trace and method (`partial: true` until the end)
 * so that a run that is cut still leaves its figures.
 *
 * Options: --traces a,b (file names without .csv), --methods a,b, --dir (default
 * $EDGEQ_TRAFFIC_DIR, else ../shared/data/traffic from the repo root), --budget-ms, --seed, --out,
 * --peak-weight and --peak-quantile (the LSTM's point-path peak term, off by default).
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { backtest, scoreBacktest, type BacktestOptions, type BacktestResult } from '../forecast/backtest.ts';
import { BASELINE_NAMES, createBaseline } from '../forecast/baselines/index.ts';
import { dailySeasonSteps, findGaps, readSeriesCsv } from '../forecast/csv.ts';
import type { Forecaster } from '../forecast/forecaster.ts';
import { selectBest } from '../forecast/select.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    dir: { type: 'string' },
    traces: { type: 'string' },
    methods: { type: 'string' },
    'budget-ms': { type: 'string' },
    seed: { type: 'string' },
    // The LSTM's point-path peak term (LstmOptions.peakWeight / peakQuantile); off by default.
    'peak-weight': { type: 'string' },
    'peak-quantile': { type: 'string' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/forecast.json') },
  },
});

/** The protocol's horizon (PROTOCOL.md §1). */
const HORIZON = 12;
/** The two strides of PROTOCOL.md §3: 1 is primary, 12 secondary. */
const STRIDES = [1, 12] as const;
/** Every method, in report order. */
const METHODS = ['lstm', ...BASELINE_NAMES] as const;
/** At most this many traces in one run (the folder holds nine). */
const TRACES_MAX = 64;
/** The series whose MASE is not comparable (PROTOCOL.md §6): means are given with and without it. */
const EC2_TRACE = 'ec2_network_in_257a54';
/** PROTOCOL targets: the LSTM's MASE on nyc_taxi, and its training time on any trace. */
const TARGETS = { nycTaxiLstmMase: 0.8, trainMsMax: 5 * 60_000 };

const progress = (line: string): void => void process.stderr.write(`[forecast-bench] ${line}\n`);

const trafficDir = resolve(args.dir ?? process.env.EDGEQ_TRAFFIC_DIR ?? join(REPO_ROOT, '../shared/data/traffic'));
const budgetMs = args['budget-ms'] === undefined ? undefined : Number(args['budget-ms']);
const seed = args.seed === undefined ? undefined : Number(args.seed);
for (const [flag, v] of [['--budget-ms', budgetMs], ['--seed', seed]] as const) {
  if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new Error(`${flag} must be a non-negative integer`);
}

/** LSTM options from the flags; the constructor refuses out-of-range values. */
const lstmOptions = {
  ...(args['peak-weight'] === undefined ? {} : { peakWeight: Number(args['peak-weight']) }),
  ...(args['peak-quantile'] === undefined ? {} : { peakQuantile: Number(args['peak-quantile']) }),
};

const methods = args.methods === undefined ? [...METHODS] : args.methods.split(',').map((m) => m.trim()).filter((m) => m.length > 0);
for (const m of methods) if (!(METHODS as readonly string[]).includes(m)) throw new Error(`unknown method ${m} (known: ${METHODS.join(', ')})`);

const available = (await readdir(trafficDir)).filter((f) => f.endsWith('.csv')).map((f) => f.slice(0, -4));
// nyc_taxi first (it carries a target of its own), then the rest by name, ec2 last.
const rank = (t: string): number => (t === 'nyc_taxi' ? 0 : t === EC2_TRACE ? 2 : 1);
const traces = (args.traces === undefined ? available : args.traces.split(',').map((t) => t.trim().replace(/\.csv$/, '')))
  .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
  .slice(0, TRACES_MAX);
for (const t of traces) if (!available.includes(t)) throw new Error(`no trace ${t}.csv in ${trafficDir}`);

/** One line of results: a trace, a method, a stride. */
interface Row {
  trace: string;
  method: string;
  stride: number;
  mase: number;
  smape: number;
  peakCapture: number;
  peakUnder: number;
  peakOver: number;
  maseByHorizon: number[];
  origins: number;
  trainMs: number;
  backend: string;
  p90Coverage: number;
  epochs?: number;
  epochsMax?: number;
  trainBudgetMs?: number;
}

interface TraceInfo {
  trace: string;
  rows: number;
  nTrain: number;
  season: number;
  gaps: number;
}

const rows: Row[] = [];
const traceInfo: TraceInfo[] = [];
const failures: { trace: string; method: string; error: string }[] = [];
const startedAt = new Date().toISOString();

async function createForecaster(name: string): Promise<Forecaster> {
  if (name === 'lstm') {
    const { LstmForecaster } = await import('../forecast/lstm/index.ts');
    return new LstmForecaster(lstmOptions);
  }
  return createBaseline(name);
}

function toRow(trace: string, r: BacktestResult): Row {
  const d = r.details;
  const num = (k: string): number | undefined => (typeof d[k] === 'number' ? (d[k] as number) : undefined);
  const row: Row = {
    trace,
    method: r.method,
    stride: r.stride,
    mase: r.mase,
    smape: r.smape,
    peakCapture: r.peakCapture,
    peakUnder: r.peakUnder,
    peakOver: r.peakOver,
    maseByHorizon: r.maseByHorizon,
    origins: r.origins,
    trainMs: r.trainMs,
    backend: r.backend,
    p90Coverage: num('p90Coverage') ?? Number.NaN,
  };
  for (const k of ['epochs', 'epochsMax', 'trainBudgetMs'] as const) {
    const v = num(k);
    if (v !== undefined) row[k] = v;
  }
  return row;
}

const find = (trace: string, method: string, stride = 1): Row | undefined => rows.find((r) => r.trace === trace && r.method === method && r.stride === stride);
const mean = (xs: number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

/** Arithmetic means over traces (PROTOCOL.md §6), per stride and method, with and without ec2. */
function means(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const stride of STRIDES) {
    const perMethod: Record<string, unknown> = {};
    for (const method of methods) {
      const all = rows.filter((r) => r.stride === stride && r.method === method);
      if (all.length === 0) continue;
      const summary = (rs: Row[]) => ({
        traces: rs.length,
        mase: mean(rs.map((r) => r.mase)),
        smape: mean(rs.map((r) => r.smape)),
        peakCapture: mean(rs.map((r) => r.peakCapture)),
        peakUnder: mean(rs.map((r) => r.peakUnder)),
        peakOver: mean(rs.map((r) => r.peakOver)),
      });
      perMethod[method] = { withEc2: summary(all), withoutEc2: summary(all.filter((r) => r.trace !== EC2_TRACE)) };
    }
    out[`stride${stride}`] = perMethod;
  }
  return out;
}

/** The best stride-1 MASE per trace (automatic selection). */
function selection(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const trace of traces) {
    const results = rows.filter((r) => r.trace === trace && r.stride === 1);
    if (results.length > 0) out[trace] = selectBest(results.map((r) => ({ ...r, series: trace, details: {} }))).method;
  }
  return out;
}

/** A target: pass/fail (null when the figures it needs were not run), with the per-trace figures. */
interface Target {
  description: string;
  pass: boolean | null;
  perTrace: Record<string, unknown>;
}

/**
 * PROTOCOL targets, at stride 1 (the primary protocol), over the traces run so far. A trace where
 * the LSTM was asked for but failed fails the targets; without the LSTM they are null (not run).
 */
function targets(): Record<string, Target> {
  const ran = traceInfo.map((t) => t.trace);
  const lstmRequested = methods.includes('lstm');
  const all = (checks: (boolean | null)[]): boolean | null => (!lstmRequested || checks.length === 0 || checks.some((c) => c === null) ? null : checks.every(Boolean));
  const beats: Target = { description: 'LSTM MASE < seasonal_naive and < holt_winters_add on every trace', pass: null, perTrace: {} };
  const under: Target = { description: "LSTM peak-under rate < seasonal_naive's on every trace", pass: null, perTrace: {} };
  const training: Target = { description: `LSTM training < ${TARGETS.trainMsMax / 60_000} min on every trace`, pass: null, perTrace: {} };
  const checks: Record<'beats' | 'under' | 'training', (boolean | null)[]> = { beats: [], under: [], training: [] };
  for (const t of ran) {
    const l = find(t, 'lstm');
    if (l === undefined) {
      for (const [k, target] of [['beats', beats], ['under', under], ['training', training]] as const) {
        target.perTrace[t] = { lstm: null, pass: false };
        checks[k].push(false);
      }
      continue;
    }
    const sn = find(t, 'seasonal_naive');
    const hw = find(t, 'holt_winters_add');
    const b = sn === undefined || hw === undefined ? null : l.mase < sn.mase && l.mase < hw.mase;
    beats.perTrace[t] = { lstm: l.mase, seasonal_naive: sn?.mase ?? null, holt_winters_add: hw?.mase ?? null, pass: b };
    checks.beats.push(b);
    const u = sn === undefined ? null : l.peakUnder < sn.peakUnder;
    under.perTrace[t] = { lstm: l.peakUnder, seasonal_naive: sn?.peakUnder ?? null, pass: u };
    checks.under.push(u);
    const fast = l.trainMs < TARGETS.trainMsMax;
    training.perTrace[t] = { trainMs: l.trainMs, pass: fast };
    checks.training.push(fast);
  }
  beats.pass = all(checks.beats);
  under.pass = all(checks.under);
  training.pass = all(checks.training);
  const nyc = find('nyc_taxi', 'lstm');
  const nycRan = ran.includes('nyc_taxi') && lstmRequested;
  const nycTarget: Target = {
    description: `nyc_taxi LSTM MASE < ${TARGETS.nycTaxiLstmMase}`,
    pass: !nycRan ? null : nyc !== undefined && nyc.mase < TARGETS.nycTaxiLstmMase,
    perTrace: nycRan ? { nyc_taxi: nyc?.mase ?? null } : {},
  };
  return { lstmMaseBeatsBaselines: beats, lstmPeakUnderBelowSeasonalNaive: under, nycTaxiLstmMase: nycTarget, lstmTrainingUnder5Min: training };
}

async function writeResults(partial: boolean): Promise<void> {
  const lstmRow = rows.find((r) => r.method === 'lstm');
  const doc = {
    generatedAt: new Date().toISOString(),
    startedAt,
    partial,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, loadavg: loadavg() },
    backend: lstmRow?.backend ?? 'js',
    protocol: { horizon: HORIZON, trainFraction: 0.8, strides: STRIDES, refit: 'fit once on the training part; filter/window over newly observed values at each origin' },
    trafficDir,
    traces: traceInfo,
    methods,
    lstmOptions,
    rows,
    means: means(),
    selection: selection(),
    targets: targets(),
    failures,
  };
  await mkdir(dirname(args.out), { recursive: true });
  await writeFile(args.out, `${JSON.stringify(doc, null, 2)}\n`);
}

const fixed = (v: number | undefined, d: number): string => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(d));

function printTable(): void {
  const header = ['trace', 'method', 'stride', 'MASE', 'sMAPE%', 'peak', 'under', 'over', 'K', 'train s', 'backend'];
  const body = rows.map((r) => [r.trace, r.method, String(r.stride), fixed(r.mase, 4), fixed(r.smape, 2), fixed(r.peakCapture, 3), fixed(r.peakUnder, 3), fixed(r.peakOver, 3), String(r.origins), fixed(r.trainMs / 1000, 1), r.backend]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  process.stdout.write(`${[line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n')}\n`);
}

progress(`traces ${traces.join(', ')} from ${trafficDir}; methods ${methods.join(', ')}`);
for (const trace of traces) {
  const series = await readSeriesCsv(join(trafficDir, `${trace}.csv`));
  const season = dailySeasonSteps(series);
  const nTrain = Math.floor(0.8 * series.values.length);
  traceInfo.push({ trace, rows: series.values.length, nTrain, season, gaps: findGaps(series).length });
  for (const method of methods) {
    const options: BacktestOptions = { season, horizon: HORIZON, stride: 1, ...(budgetMs === undefined ? {} : { budgetMs }), ...(seed === undefined ? {} : { seed }) };
    try {
      const forecaster = await createForecaster(method);
      const primary = await backtest(series, forecaster, options);
      // One fit serves both strides: stride 12 only scores the fitted model at other origins.
      const secondary = await scoreBacktest(series, forecaster, { ...options, stride: 12 }, { trainMs: primary.trainMs, backend: primary.backend, details: primary.details });
      for (const r of [primary, secondary]) rows.push(toRow(trace, r));
      progress(`${trace} ${method}: MASE ${fixed(primary.mase, 4)} (stride 12: ${fixed(secondary.mase, 4)}), sMAPE ${fixed(primary.smape, 2)}, peak ${fixed(primary.peakCapture, 3)}, train ${fixed(primary.trainMs / 1000, 1)} s`);
    } catch (err) {
      // A failing method (e.g. the LSTM's runtime missing) is recorded; the others still run.
      failures.push({ trace, method, error: (err as Error).message });
      progress(`${trace} ${method}: FAILED ${(err as Error).message}`);
    }
    // After every method, not just every trace: one LSTM training can take minutes.
    await writeResults(true);
  }
}
await writeResults(false);
printTable();
progress(`selection (stride 1, lowest MASE): ${JSON.stringify(selection())}`);
progress(`targets: ${JSON.stringify(Object.fromEntries(Object.entries(targets()).map(([k, t]) => [k, t.pass])))}`);
progress(`wrote ${args.out}`);
