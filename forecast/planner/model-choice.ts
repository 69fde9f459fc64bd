/**
 * Which model the planner forecasts with, by how much history it has (m = season, H = horizon):
 *
 * - fewer than m + 1 steps: `last_value` (nothing seasonal can be said yet);
 * - at least m + 1 steps: `seasonal_naive` (yesterday, one season ago, is known for every h ≤ m);
 * - at least SELECTION_SEASONS_MIN·m + SELECTION_HORIZONS_MIN·H steps: selection by backtest MASE
 *   among the baselines. Three seasons leave the backtest's training part (80%) 2.4 seasons, more
 *   than Holt-Winters' two-season initial state and the MASE scale's one; four horizons leave its
 *   test part (20%) 0.6·m + 0.8·H ≥ H steps (H ≤ m), so at least one full window is scored.
 * - at least LSTM_SEASONS_MIN·m steps, the LSTM joins the candidates: its default input history is
 *   three seasons (three daily lags), and a week leaves the backtest's training part 5.6 seasons,
 *   so more than two seasons of training windows (at 1-minute steps, thousands).
 *
 * Cold-start models are fitted in the calling thread: they are cheap (at most SELECTION history,
 * a few seasons). Selection runs the backtests and the winner's fit wherever the ModelFactory puts
 * them (the default: a worker thread, retrain-client.ts).
 */
import { EdgeqError } from '../../src/core/index.ts';
import { scoreBacktest, planBacktest } from '../backtest.ts';
import { createBaseline, LastValueForecaster, SeasonalNaiveForecaster, seasonalNaivePoint } from '../baselines/index.ts';
import type { FitOptions, Forecast, Forecaster, Series, SeriesView } from '../forecaster.ts';
import { selectBest, type Candidate } from '../select.ts';

/** Seasons of history before selection by backtest (see the module comment). */
export const SELECTION_SEASONS_MIN = 3;
/** Horizons of history, on top of the seasons, before selection (see the module comment). */
export const SELECTION_HORIZONS_MIN = 4;
/** Seasons of history before the LSTM is a candidate (see the module comment). */
export const LSTM_SEASONS_MIN = 7;
/** The baselines selection backtests, in report order. */
export const SELECTION_BASELINES = ['seasonal_naive', 'holt_winters_add', 'last_value'] as const;

/** What the planner forecasts with at a given history length. */
export type ModelPhase = 'empty' | 'last_value' | 'seasonal_naive' | 'selection';
/** The two cold-start methods. */
export type ColdStartMethod = 'last_value' | 'seasonal_naive';

/** Steps of history selection needs (see the module comment). */
export function selectionMinSteps(season: number, horizon: number): number {
  return SELECTION_SEASONS_MIN * season + SELECTION_HORIZONS_MIN * horizon;
}

/** The phase of a history of `steps` steps. */
export function phaseFor(steps: number, season: number, horizon: number): ModelPhase {
  if (steps < 1) return 'empty';
  if (steps < season + 1) return 'last_value';
  if (steps < selectionMinSteps(season, horizon)) return 'seasonal_naive';
  return 'selection';
}

/** The methods selection backtests for a history of `steps` steps (the LSTM only when `lstm`). */
export function candidatesFor(steps: number, season: number, horizon: number, lstm: boolean): string[] {
  if (phaseFor(steps, season, horizon) !== 'selection') return [];
  const out: string[] = [...SELECTION_BASELINES];
  if (lstm && horizon <= season && steps >= LSTM_SEASONS_MIN * season) out.push('lstm');
  return out;
}

/**
 * A forecaster with no band (P90 = P50) for histories too short to measure one: the cold-start
 * methods' fits need the horizon on top of their minimum history to see a single error.
 */
class BandlessForecaster implements Forecaster {
  constructor(
    readonly name: ColdStartMethod,
    private readonly season: number,
  ) {}

  async fit(): Promise<{ trainMs: number; backend: string }> {
    return { trainMs: 0, backend: 'js' };
  }

  async forecast(views: readonly SeriesView[], horizon: number): Promise<Forecast[]> {
    return views.map((view) => {
      const point = new Float64Array(horizon);
      if (this.name === 'last_value' || view.origin < this.season) point.fill(Math.max(0, view.values[view.origin - 1] ?? 0));
      else seasonalNaivePoint(view.values, view.origin, this.season, point);
      return { point, p90: Float64Array.from(point) };
    });
  }
}

/** A cold-start model fitted on `train` (the whole history): with its P90 band when the history allows one. */
export async function fitColdStart(method: ColdStartMethod, train: SeriesView, options: FitOptions): Promise<Forecaster> {
  const need = method === 'last_value' ? 1 + options.horizon : options.season + options.horizon;
  if (train.origin < need) return new BandlessForecaster(method, options.season);
  const model = method === 'last_value' ? new LastValueForecaster() : new SeasonalNaiveForecaster();
  await model.fit(train, options);
  return model;
}

/** Builds a candidate by name: the baselines here, anything else (the LSTM) through `other`. */
export type CandidateBuilder = (method: string) => Forecaster | Promise<Forecaster>;

/** What selection found and the winner, fitted on the whole history. */
export interface Selected {
  readonly method: string;
  readonly forecaster: Forecaster;
  readonly backtestMase: number;
  readonly ranking: readonly Candidate[];
  /** Candidates that could not be backtested, with why (too short for the LSTM's windows, …). */
  readonly skipped: readonly { readonly method: string; readonly reason: string }[];
}

/** Fresh baseline by name, or `build(method)` for the others. */
async function candidate(method: string, build: CandidateBuilder | undefined): Promise<Forecaster> {
  if ((SELECTION_BASELINES as readonly string[]).includes(method)) return createBaseline(method);
  if (build === undefined) throw new EdgeqError('INVALID_ARGUMENT', `no builder for candidate "${method}"`, { details: { method } });
  return build(method);
}

/**
 * Backtests every candidate on `series` (fit on its first 80%, score stride 1 on the rest), picks
 * the lowest MASE (select.ts), then fits a fresh instance of the winner on the whole series. Heavy:
 * run it off the event loop (retrain-worker.ts). A candidate whose backtest fails is skipped; when
 * every one fails, the error says why each did.
 */
export async function selectModel(series: Series, candidates: readonly string[], options: FitOptions & { build?: CandidateBuilder }): Promise<Selected> {
  const { season, horizon } = options;
  const fit = { season, horizon, ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }), ...(options.seed === undefined ? {} : { seed: options.seed }) };
  const bt = { ...fit, stride: 1 as const };
  const plan = planBacktest(series, bt);
  const results = [];
  const skipped: { method: string; reason: string }[] = [];
  for (const method of candidates) {
    try {
      const model = await candidate(method, options.build);
      const report = await model.fit({ origin: plan.nTrain, values: series.values.subarray(0, plan.nTrain), timestamps: series.timestamps }, fit);
      results.push(await scoreBacktest(series, model, bt, report));
    } catch (err) {
      skipped.push({ method, reason: (err as Error).message });
    }
  }
  if (results.length === 0) {
    throw new EdgeqError('INVALID_DATA', `no candidate could be backtested on ${series.values.length} steps: ${skipped.map((s) => `${s.method}: ${s.reason}`).join('; ')}`, {
      details: { steps: series.values.length, skipped },
    });
  }
  const selection = selectBest(results);
  const winner = await candidate(selection.method, options.build);
  const n = series.values.length;
  await winner.fit({ origin: n, values: series.values.subarray(0, n), timestamps: series.timestamps }, fit);
  return { method: selection.method, forecaster: winner, backtestMase: selection.mase, ranking: selection.ranking, skipped };
}

/** One retraining: the history and the candidates model-choice named for it. */
export interface RetrainRequest {
  /** The history's records/s, oldest first (the planner's own copy: the factory may transfer it). */
  readonly values: Float64Array;
  /** Each step's start (epoch ms) and the `horizon` steps after the last (the calendar is known ahead). */
  readonly timestamps: Float64Array;
  readonly season: number;
  readonly horizon: number;
  readonly candidates: readonly string[];
  /** Aborted when the planner closes: the factory stops its work (terminates its worker). */
  readonly signal: AbortSignal;
}

/** How the planner's models are built and fitted: injected (tests script it; default retrain-client.ts). */
export interface ModelFactory {
  /** Whether the LSTM may be a candidate. */
  readonly lstm: boolean;
  /** A cold-start model fitted on the whole history, in the calling thread (default `fitColdStart`). */
  coldStart?(method: ColdStartMethod, train: SeriesView, options: FitOptions): Promise<Forecaster>;
  /** Selection and the winner's fit, off the event loop; resolves with the fitted winner. */
  retrain(request: RetrainRequest): Promise<Selected>;
}
