/**
 * Pre-scaling benchmark (`npm run bench:prescale`, issue 15): `--part sim` is the autoscaling
 * simulation on the real traces (bench/lib/prescale-sim.ts), `--part live` the live replay through
 * a deployment (bench/lib/prescale-live.ts), `--part all` (the default) both.
 *
 * The simulation, per trace: the test part (n_train = floor(0.8 n), PROTOCOL.md §2), lead 2 steps,
 * C = the test part's mean / 3 records/s per instance, at least 1 instance. Three plans at equal
 * cost: the LSTM's P90 through the offline plan (headroom PLAN_HEADROOM_DEFAULT), the reactive HPA
 * rule on the last known value, and seasonal naive's P90 through the same offline plan; both
 * rivals' headroom is tuned to the planner's instance-steps (never above).
 *
 * Results go to bench/results/prescale.json, rewritten after every trace (`partial: true` until the
 * end); a run of one part keeps the other part's figures from the file.
 *
 * Options: --part sim|live|all, --traces a,b, --dir (default $EDGEQ_TRAFFIC_DIR, else
 * ../shared/data/traffic from the repo root), --budget-ms, --seed (the LSTM's, as the forecast
 * bench), --out.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBaseline } from '../forecast/baselines/index.ts';
import { dailySeasonSteps, readSeriesCsv } from '../forecast/csv.ts';
import type { Forecaster, Series } from '../forecast/forecaster.ts';
import { offlinePlan, planTrainingView } from '../forecast/planner/offline-plan.ts';
import { oracleInstanceSteps, PLAN_HEADROOM_DEFAULT } from '../forecast/planner/plan-arithmetic.ts';
import { runPrescaleLive } from './lib/prescale-live.ts';
import { bandInstances, coverage, reactiveInstances, simulate, tuneHeadroom, type SimFigures, type Tuned } from './lib/prescale-sim.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    part: { type: 'string', default: 'all' },
    dir: { type: 'string' },
    traces: { type: 'string' },
    'budget-ms': { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/prescale.json') },
  },
});

/** The simulation settings. */
const LEAD = 2;
const HORIZON = 12;
/** C = the test part's mean / CAPACITY_DIVISOR. */
const CAPACITY_DIVISOR = 3;
const TRAIN_FRACTION = 0.8;
/** At most this many traces in one run (the folder holds nine). */
const TRACES_MAX = 64;
/** The targets. */
const TARGETS = {
  plannerCostOverOracleMax: 1.4,
  underVsReactiveMax: 0.7,
  nycTaxiUnderVsReactiveMax: 0.5,
  p90CoverageMin: 0.8,
  p90CoverageMax: 0.97,
};

const progress = (line: string): void => void process.stderr.write(`[prescale] ${line}\n`);

const part = args.part;
if (part !== 'sim' && part !== 'live' && part !== 'all') throw new Error(`--part must be sim, live or all, got ${part}`);
const trafficDir = resolve(args.dir ?? process.env.EDGEQ_TRAFFIC_DIR ?? join(REPO_ROOT, '../shared/data/traffic'));
const budgetMs = args['budget-ms'] === undefined ? undefined : Number(args['budget-ms']);
const seed = args.seed === undefined ? undefined : Number(args.seed);
for (const [flag, v] of [['--budget-ms', budgetMs], ['--seed', seed]] as const) {
  if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new Error(`${flag} must be a non-negative integer`);
}
const fitExtras = { ...(budgetMs === undefined ? {} : { budgetMs }), ...(seed === undefined ? {} : { seed }) };

/** One trace's simulation. */
interface SimRow {
  trace: string;
  rows: number;
  nTrain: number;
  testSteps: number;
  season: number;
  lead: number;
  perInstance: number;
  planner: SimFigures & { headroom: number };
  reactive: SimFigures & { headroom: number; tuned: Tuned };
  seasonalNaive: SimFigures & { headroom: number; tuned: Tuned };
  oracleInstanceSteps: number;
  /** Share of the test part's actuals at or below the P90 over every origin's whole horizon (the backtest's). */
  p90Coverage: number;
  /** The same at the plan's lead step only (what the plan provisions from). */
  p90CoverageAtLead: number;
  seasonalNaiveP90Coverage: number;
  lstm: { trainMs: number; backend: string; epochs: unknown; window: number };
  checks: Record<string, boolean>;
}

const simulation: SimRow[] = [];
const failures: { trace: string; error: string }[] = [];
const startedAt = new Date().toISOString();

async function fitted(forecaster: Forecaster, series: Series, season: number, nTrain: number): Promise<{ trainMs: number; backend: string; details: Record<string, unknown> }> {
  const report = await forecaster.fit(planTrainingView(series, { from: nTrain, lead: LEAD }), { season, horizon: HORIZON, ...fitExtras });
  return { trainMs: report.trainMs, backend: report.backend, details: report.details ?? {} };
}

async function simulateTrace(trace: string): Promise<SimRow> {
  const series = await readSeriesCsv(join(trafficDir, `${trace}.csv`));
  const season = dailySeasonSteps(series);
  const n = series.values.length;
  const nTrain = Math.floor(TRAIN_FRACTION * n);
  const demand = series.values.subarray(nTrain);
  const perInstance = demand.reduce((a, b) => a + b, 0) / demand.length / CAPACITY_DIVISOR;
  const base = { from: nTrain, lead: LEAD, horizon: HORIZON, season };

  const { LstmForecaster } = await import('../forecast/lstm/index.ts');
  const lstm = new LstmForecaster();
  progress(`${trace}: training the LSTM on ${nTrain - LEAD} rows (season ${season})`);
  const lstmFit = await fitted(lstm, series, season, nTrain);
  const plannerShape = { perInstance, headroom: PLAN_HEADROOM_DEFAULT };
  // The band over the whole horizon of every origin, as the backtest scores it (PROTOCOL.md §5):
  // the p90Coverage; the share at the plan's lead step alone is reported beside it.
  const band = { covered: 0, scored: 0 };
  const observe = (origin: number, f: { point: Float64Array; p90: Float64Array }) => {
    for (let h = 0; h < f.p90.length && origin + h < n; h++) {
      if (origin + h < nTrain) continue;
      band.scored++;
      if (series.values[origin + h]! <= Math.max(0, f.point[h]!, f.p90[h]!)) band.covered++;
    }
  };
  const plan = await offlinePlan(series, lstm, { ...base, shape: plannerShape, historyMin: lstm.window, observe });
  const plannerP90 = Float64Array.from(plan, (e) => e.p90);
  const planner = simulate(demand, Int32Array.from(plan, (e) => e.instances), perInstance);

  const sn = createBaseline('seasonal_naive');
  await fitted(sn, series, season, nTrain);
  const snPlan = await offlinePlan(series, sn, { ...base, shape: plannerShape });
  const snP90 = Float64Array.from(snPlan, (e) => e.p90);

  const target = planner.instanceSteps;
  const snTuned = tuneHeadroom((h) => simulate(demand, bandInstances(snP90, perInstance, h), perInstance).instanceSteps, target);
  const seasonalNaive = simulate(demand, bandInstances(snP90, perInstance, snTuned.headroom), perInstance);
  const reTuned = tuneHeadroom((h) => simulate(demand, reactiveInstances(series.values, nTrain, LEAD, perInstance, h), perInstance).instanceSteps, target);
  const reactive = simulate(demand, reactiveInstances(series.values, nTrain, LEAD, perInstance, reTuned.headroom), perInstance);

  const oracle = oracleInstanceSteps(demand, perInstance);
  const p90CoverageAtLead = coverage(demand, plannerP90);
  const p90Coverage = band.scored > 0 ? band.covered / band.scored : NaN;
  const checks: Record<string, boolean> = {
    plannerCostWithinOracle: planner.instanceSteps <= TARGETS.plannerCostOverOracleMax * oracle,
    underVsReactive: planner.underSteps <= TARGETS.underVsReactiveMax * reactive.underSteps,
    underVsSeasonalNaive: planner.underSteps < seasonalNaive.underSteps,
    p90Coverage: p90Coverage >= TARGETS.p90CoverageMin && p90Coverage <= TARGETS.p90CoverageMax,
  };
  if (trace === 'nyc_taxi') checks.nycTaxiUnderVsReactive = planner.underSteps <= TARGETS.nycTaxiUnderVsReactiveMax * reactive.underSteps;
  return {
    trace,
    rows: n,
    nTrain,
    testSteps: demand.length,
    season,
    lead: LEAD,
    perInstance,
    planner: { ...planner, headroom: PLAN_HEADROOM_DEFAULT },
    reactive: { ...reactive, headroom: reTuned.headroom, tuned: reTuned },
    seasonalNaive: { ...seasonalNaive, headroom: snTuned.headroom, tuned: snTuned },
    oracleInstanceSteps: oracle,
    p90Coverage,
    p90CoverageAtLead,
    seasonalNaiveP90Coverage: coverage(demand, snP90),
    lstm: { trainMs: lstmFit.trainMs, backend: lstmFit.backend, epochs: lstmFit.details.epochs ?? null, window: lstm.window },
    checks,
  };
}

/** A target over the traces run: pass only when every trace passes it. */
function targets(): Record<string, { description: string; pass: boolean | null; perTrace: Record<string, boolean> }> {
  const of = (key: string, description: string) => {
    const perTrace: Record<string, boolean> = {};
    for (const r of simulation) if (key in r.checks) perTrace[r.trace] = r.checks[key] as boolean;
    const values = Object.values(perTrace);
    // A trace that failed fails every target: its figures are missing, not good.
    return { description, pass: values.length === 0 ? null : failures.length === 0 && values.every(Boolean), perTrace };
  };
  return {
    plannerCostWithinOracle: of('plannerCostWithinOracle', `planner instance-steps <= ${TARGETS.plannerCostOverOracleMax} x the oracle's on every trace`),
    underVsReactive: of('underVsReactive', `planner under-provisioned steps <= ${TARGETS.underVsReactiveMax} x the reactive rule's at equal cost, on every trace`),
    underVsSeasonalNaive: of('underVsSeasonalNaive', "planner under-provisioned steps < the seasonal-naive planner's at equal cost, on every trace"),
    nycTaxiUnderVsReactive: of('nycTaxiUnderVsReactive', `planner under-provisioned steps <= ${TARGETS.nycTaxiUnderVsReactiveMax} x the reactive rule's on nyc_taxi`),
    p90Coverage: of('p90Coverage', `planner p90Coverage (the band over every origin's horizon, as the backtest scores it) in [${TARGETS.p90CoverageMin}, ${TARGETS.p90CoverageMax}] on every trace`),
  };
}

/** The file as it is now, so a run of one part keeps the other's figures. */
async function previous(): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(await readFile(args.out, 'utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

async function writeResults(partial: boolean, live: unknown | undefined): Promise<void> {
  const old = await previous();
  const ranSim = part !== 'live';
  const doc = {
    ...old,
    generatedAt: new Date().toISOString(),
    startedAt,
    partial,
    part,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, loadavg: loadavg() },
    options: ranSim
      ? { trafficDir, lead: LEAD, horizon: HORIZON, trainFraction: TRAIN_FRACTION, capacity: `test mean / ${CAPACITY_DIVISOR}`, instancesMin: 1, plannerHeadroom: PLAN_HEADROOM_DEFAULT, lstm: { budgetMs: budgetMs ?? 'default', seed: seed ?? 'default', training: 'rows before n_train − lead' } }
      : old.options,
    targets: ranSim ? targets() : old.targets,
    simulation: ranSim ? simulation : (old.simulation ?? null),
    simulationFailures: ranSim ? failures : old.simulationFailures,
    live: live === undefined ? (old.live ?? null) : live,
  };
  await mkdir(dirname(args.out), { recursive: true });
  await writeFile(args.out, `${JSON.stringify(doc, null, 2)}\n`);
}

const fixed = (v: number, d: number): string => (Number.isFinite(v) ? v.toFixed(d) : String(v));

function printTable(): void {
  const header = ['trace', 'method', 'under', 'shed', 'inst-steps', 'h', 'oracle', 'p90 cov'];
  const body: string[][] = [];
  for (const r of simulation) {
    for (const m of ['planner', 'reactive', 'seasonalNaive'] as const) {
      const f = r[m];
      body.push([r.trace, m, String(f.underSteps), fixed(f.shed, 0), String(f.instanceSteps), fixed(f.headroom, 4), String(r.oracleInstanceSteps), m === 'planner' ? fixed(r.p90Coverage, 3) : m === 'seasonalNaive' ? fixed(r.seasonalNaiveP90Coverage, 3) : '-']);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  process.stdout.write(`${[line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n')}\n`);
}

async function runSimulation(): Promise<void> {
  const available = (await readdir(trafficDir)).filter((f) => f.endsWith('.csv')).map((f) => f.slice(0, -4));
  const traces = (args.traces === undefined ? available : args.traces.split(',').map((t) => t.trim().replace(/\.csv$/, '')))
    .sort((a, b) => (a === 'nyc_taxi' ? -1 : b === 'nyc_taxi' ? 1 : a < b ? -1 : a > b ? 1 : 0))
    .slice(0, TRACES_MAX);
  for (const t of traces) if (!available.includes(t)) throw new Error(`no trace ${t}.csv in ${trafficDir}`);
  progress(`simulation on ${traces.join(', ')} from ${trafficDir}`);
  for (const trace of traces) {
    try {
      const r = await simulateTrace(trace);
      simulation.push(r);
      progress(
        `${trace}: under planner ${r.planner.underSteps} / reactive ${r.reactive.underSteps} (h ${fixed(r.reactive.headroom, 3)}) / seasonal naive ${r.seasonalNaive.underSteps} (h ${fixed(r.seasonalNaive.headroom, 3)}); ` +
          `instance-steps ${r.planner.instanceSteps} (oracle ${r.oracleInstanceSteps}); p90 coverage ${fixed(r.p90Coverage, 3)} (at the lead step ${fixed(r.p90CoverageAtLead, 3)}); checks ${JSON.stringify(r.checks)}`,
      );
    } catch (err) {
      failures.push({ trace, error: (err as Error).message });
      progress(`${trace}: FAILED ${(err as Error).message}`);
    }
    await writeResults(true, undefined);
  }
}

async function runLive(): Promise<unknown> {
  return runPrescaleLive({ trafficDir, progress });
}

if (part !== 'live') await runSimulation();
const live = part === 'sim' ? undefined : await runLive();
await writeResults(false, live);
if (part !== 'live') {
  printTable();
  progress(`targets: ${JSON.stringify(Object.fromEntries(Object.entries(targets()).map(([k, t]) => [k, t.pass])))}`);
}
progress(`wrote ${args.out}`);
