/**
 * `edgeq forecast plan`: the planner's decisions replayed over a trace (forecast/planner/
 * offline-plan.ts), one entry per step t = N … rows − 1, each decided `lead` steps ahead from the
 * rows before t − lead. Other tools drive it (issue 15's exact shape), so stdout carries only the
 * JSON array and progress goes to stderr.
 *
 * The model is trained on the rows before N − lead (not N), so that even the first decisions,
 * taken at N − lead … N − 1, come from a model that saw nothing at or after them; with --model the
 * saved LSTM is used as it is and nothing is trained.
 */
import type { Command } from 'commander';
import { EdgeqError } from '../../core/errors.ts';
import { readSeriesCsv } from '../../../forecast/csv.ts';
import type { Forecaster } from '../../../forecast/forecaster.ts';
import { BASELINE_NAMES, createBaseline } from '../../../forecast/baselines/index.ts';
import type { LstmForecaster } from '../../../forecast/lstm/index.ts';
import { checkOfflinePlan, checkPlanLead, offlinePlan, planTrainingView } from '../../../forecast/planner/offline-plan.ts';
import { checkPlanShape, PLAN_HEADROOM_DEFAULT, PLAN_HEADROOM_MAX } from '../../../forecast/planner/plan-arithmetic.ts';

/** The methods a plan can forecast with; the LSTM is the planner's own. */
export const PLAN_METHODS = ['lstm', ...BASELINE_NAMES] as const;
/** The protocol's horizon (PROTOCOL.md §1). */
const DEFAULT_HORIZON = '12';

const progress = (line: string): void => void process.stderr.write(`edgeq forecast plan: ${line}\n`);

function badFlag(flag: string, raw: string, what: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `${flag} must be ${what}, got "${raw}"`, { details: { flag, value: raw } });
}

/** An integer flag at least `min`. */
function integerFlag(flag: string, raw: string, min: number): number {
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min) throw badFlag(flag, raw, `an integer of at least ${min}`);
  return value;
}

/** A decimal flag (a sign is read so that "-1" is refused as out of range, not as "not a number"). */
function decimalFlag(flag: string, raw: string, what: string): number {
  const text = raw.trim();
  const value = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(value)) throw badFlag(flag, raw, what);
  return value;
}

function methodFlag(raw: string): (typeof PLAN_METHODS)[number] {
  const found = PLAN_METHODS.find((m) => m === raw.trim());
  if (found === undefined) throw badFlag('--method', raw, `one of ${PLAN_METHODS.join(', ')}`);
  return found;
}

interface PlanFlags {
  csv: string;
  season: string;
  lead: string;
  perInstance: string;
  from: string;
  json: boolean;
  model?: string;
  headroom?: string;
  horizon: string;
  budgetMs?: string;
  seed?: string;
  method: string;
}

/** The saved LSTM, checked against the flags it must agree with. */
async function loadModel(dir: string, season: number, horizon: number): Promise<LstmForecaster> {
  const { LstmForecaster: Lstm } = await import('../../../forecast/lstm/index.ts');
  const model = await Lstm.load(dir);
  const meta = model.meta;
  if (meta === undefined || meta.season !== season || meta.horizon !== horizon) {
    throw new EdgeqError('INVALID_ARGUMENT', `--model ${dir} was trained for season ${meta?.season} and horizon ${meta?.horizon}, asked for --season ${season} --horizon ${horizon}`, {
      details: { flag: '--model', value: dir, modelSeason: meta?.season, modelHorizon: meta?.horizon, season, horizon },
    });
  }
  return model;
}

async function runPlan(opts: PlanFlags): Promise<void> {
  // Every flag is checked before the file is read or anything is trained.
  const season = integerFlag('--season', opts.season, 1);
  const horizon = integerFlag('--horizon', opts.horizon, 1);
  const lead = integerFlag('--lead', opts.lead, 0);
  const from = integerFlag('--from', opts.from, 0);
  const perInstance = decimalFlag('--per-instance', opts.perInstance, 'a positive number of records/s per instance');
  if (perInstance <= 0) throw badFlag('--per-instance', opts.perInstance, 'a positive number of records/s per instance');
  const headroom = opts.headroom === undefined ? PLAN_HEADROOM_DEFAULT : decimalFlag('--headroom', opts.headroom, `a fraction in [0, ${PLAN_HEADROOM_MAX}]`);
  if (headroom < 0 || headroom > PLAN_HEADROOM_MAX) throw badFlag('--headroom', opts.headroom ?? '', `a fraction in [0, ${PLAN_HEADROOM_MAX}]`);
  const method = methodFlag(opts.method);
  const budgetMs = opts.budgetMs === undefined ? undefined : integerFlag('--budget-ms', opts.budgetMs, 1);
  const seed = opts.seed === undefined ? undefined : integerFlag('--seed', opts.seed, 0);
  if (opts.model !== undefined && method !== 'lstm') throw badFlag('--method', opts.method, 'lstm (or left out) with --model, a saved LSTM');
  const shape = { perInstance, headroom };
  checkPlanShape(shape, 'plan');
  // Before any I/O: a bad lead is a bad flag whatever the file holds.
  checkPlanLead(lead, horizon);

  const series = await readSeriesCsv(opts.csv);
  const rows = series.values.length;
  let forecaster: Forecaster;
  let historyMin: number | undefined;
  if (opts.model !== undefined) {
    if (budgetMs !== undefined || seed !== undefined) progress('--budget-ms and --seed are ignored with --model (nothing is trained)');
    const model = await loadModel(opts.model, season, horizon);
    historyMin = model.window;
    checkOfflinePlan(rows, { from, lead, horizon, season, historyMin }, series.name);
    forecaster = model;
    progress(`loaded the LSTM from ${opts.model} (window ${model.window})`);
  } else {
    checkOfflinePlan(rows, { from, lead, horizon, season }, series.name);
    if (method === 'lstm') {
      const { LstmForecaster: Lstm } = await import('../../../forecast/lstm/index.ts');
      forecaster = new Lstm();
    } else {
      forecaster = createBaseline(method);
    }
    const train = planTrainingView(series, { from, lead });
    progress(`training ${method} on the ${train.origin} rows before from − lead = ${from} − ${lead} (season ${season}, horizon ${horizon})`);
    const report = await forecaster.fit(train, { season, horizon, ...(budgetMs === undefined ? {} : { budgetMs }), ...(seed === undefined ? {} : { seed }) });
    progress(`trained in ${Math.round(report.trainMs)} ms on ${report.backend}`);
    if (method === 'lstm') historyMin = (forecaster as LstmForecaster).window;
  }
  const plan = await offlinePlan(series, forecaster, { from, lead, horizon, season, shape, ...(historyMin === undefined ? {} : { historyMin }) });
  progress(`${plan.length} steps planned (t = ${from} … ${rows - 1}, lead ${lead}, ${perInstance} records/s per instance, headroom ${headroom})`);
  if (opts.json) process.stdout.write(`${JSON.stringify(plan)}\n`);
  else process.stdout.write(`${plan.map((e) => `${e.t}\t${e.instances}\t${e.p90}`).join('\n')}\n`);
}

/** Registers `edgeq forecast plan` on the `forecast` command. */
export function registerForecastPlanCommand(forecast: Command): void {
  forecast
    .command('plan')
    .description('the planner over a trace: instances per step t = N … rows − 1, each decided lead steps ahead from the P90')
    .requiredOption('--csv <file>', 'trace CSV (timestamp,value)')
    .requiredOption('--season <steps>', 'season length in steps (one day: 288 at 5 min, 48 at 30 min)')
    .requiredOption('--lead <steps>', 'steps between a decision and the step it provisions (1 … horizon − 1)')
    .requiredOption('--per-instance <rate>', 'records/s one instance serves')
    .requiredOption('--from <n>', 'first planned step (row index); the model trains on the rows before N − lead')
    .option('--json', 'print one JSON array', false)
    .option('--model <dir>', 'a model saved by `edgeq forecast train` (nothing is trained)')
    .option('--headroom <f>', `fraction over the P90 (0 … ${PLAN_HEADROOM_MAX}, default ${PLAN_HEADROOM_DEFAULT})`)
    .option('--horizon <steps>', 'steps forecast at each origin', DEFAULT_HORIZON)
    .option('--budget-ms <ms>', 'wall-clock training budget of the LSTM')
    .option('--seed <n>', 'seed for anything random')
    .option('--method <name>', `forecaster (${PLAN_METHODS.join('|')})`, 'lstm')
    .action(runPlan);
}
