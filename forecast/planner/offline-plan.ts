/**
 * The offline plan: replays a whole series through a fitted forecaster as the planner would have
 * run it, one decision per step. Shared by `edgeq forecast plan` and the pre-scaling benchmark so
 * both compute the same plan from the same rows.
 *
 * The entry for step t is decided at t − lead: the forecast comes from origin o = t − lead (a view
 * of the rows before o, so nothing at or after t − lead can be read) and provisions for its
 * p90[lead] (0-based: the step o + lead = t).
 */
import { EdgeqError } from '../../src/core/index.ts';
import { FORECAST_CHUNK_VIEWS } from '../backtest.ts';
import { viewAt, type Forecast, type Forecaster, type Series, type SeriesView } from '../forecaster.ts';
import { instancesFor, type PlanShape } from './plan-arithmetic.ts';

/** What an offline plan needs besides the series and the model. */
export interface OfflinePlanOptions {
  /** First planned step (row index). */
  readonly from: number;
  /** Steps between the decision and the step it provisions (how long an instance takes to be ready). */
  readonly lead: number;
  /** Steps the forecaster forecasts at each origin; lead must be below it. */
  readonly horizon: number;
  /** Season m in steps (one day). */
  readonly season: number;
  readonly shape: PlanShape;
  /** Steps of history the model needs before an origin beyond a season plus one (the LSTM's window). */
  readonly historyMin?: number;
  /** Sees every forecast made (origin t − lead, all H steps), e.g. to score the band over the whole horizon. */
  readonly observe?: (origin: number, forecast: Forecast) => void;
}

/** One planned step. */
export interface OfflinePlanEntry {
  readonly t: number;
  /** instancesFor(p90, shape). */
  readonly instances: number;
  /** The forecast's P90 for step t, made at t − lead (clipped at 0, never below the point forecast). */
  readonly p90: number;
}

/** Rows before an origin that every plan needs: one season for the seasonal lags plus one step. */
function historyNeeded(options: Pick<OfflinePlanOptions, 'season' | 'historyMin'>): number {
  return Math.max(options.season + 1, options.historyMin ?? 0);
}

/** Checks the lead against the horizon: p90[lead] must exist (lead ≤ H − 1); typed errors naming the value. */
export function checkPlanLead(lead: number, horizon: number): void {
  if (!Number.isSafeInteger(horizon) || horizon < 2) {
    throw new EdgeqError('INVALID_ARGUMENT', `--horizon must be an integer of at least 2 (a lead of 1 needs a second step), got ${String(horizon)}`, { details: { flag: '--horizon', value: horizon } });
  }
  // p90[lead] must exist: lead ≤ H − 1. Lead 0 would decide a step at the step itself (no time to scale).
  if (!Number.isSafeInteger(lead) || lead < 1 || lead > horizon - 1) {
    throw new EdgeqError('INVALID_ARGUMENT', `--lead must be an integer in [1, horizon − 1 = ${horizon - 1}], got ${String(lead)}`, { details: { flag: '--lead', value: lead, horizon } });
  }
}

/**
 * Checks lead, horizon, season and from against a series of `rows` rows (`name` labels errors);
 * typed errors naming the flag and the value. Call it before training so bad input fails fast.
 */
export function checkOfflinePlan(rows: number, options: Omit<OfflinePlanOptions, 'shape'>, name = 'series'): void {
  const { from, lead, horizon, season } = options;
  if (!Number.isSafeInteger(season) || season < 1) {
    throw new EdgeqError('INVALID_ARGUMENT', `--season must be a positive integer, got ${String(season)}`, { details: { flag: '--season', value: season } });
  }
  checkPlanLead(lead, horizon);
  if (!Number.isSafeInteger(from) || from < 0 || from > rows - 1) {
    throw new EdgeqError('INVALID_ARGUMENT', `--from must be a row index in [0, rows − 1 = ${rows - 1}], got ${String(from)}`, { details: { flag: '--from', value: from, rows } });
  }
  const need = historyNeeded(options);
  if (rows - 1 - lead < need) {
    throw new EdgeqError(
      'INVALID_DATA',
      `${name}: too little history for the season: ${rows} rows leave at most ${Math.max(0, rows - 1 - lead)} before the last decision (t − lead with lead ${lead}), need ${need} (season ${season} plus one step${need > season + 1 ? ', or the model window' : ''})`,
      { details: { file: name, rows, season, lead, need } },
    );
  }
  if (from - lead < need) {
    throw new EdgeqError(
      'INVALID_ARGUMENT',
      `--from ${from} leaves too little history for the season: ${Math.max(0, from - lead)} rows before the first decision (from − lead), need ${need} (season ${season} plus one step); --from must be in [${lead + need}, ${rows - 1}]`,
      { details: { flag: '--from', value: from, rows, season, lead, need } },
    );
  }
}

/**
 * The view a plan's model is trained on: the rows before from − lead, so that even the model of
 * the first decision (taken at from − lead) has seen nothing at or after it.
 */
export function planTrainingView(series: Series, options: Pick<OfflinePlanOptions, 'from' | 'lead'>): SeriesView {
  return viewAt(series, options.from - options.lead);
}

/** One entry per t = from … rows − 1 (see the file comment); the forecaster must be fitted. */
export async function offlinePlan(series: Series, forecaster: Forecaster, options: OfflinePlanOptions): Promise<OfflinePlanEntry[]> {
  const rows = series.values.length;
  checkOfflinePlan(rows, options, series.name);
  const { from, lead, horizon, shape } = options;
  const out: OfflinePlanEntry[] = [];
  // Bounded: rows − from steps, FORECAST_CHUNK_VIEWS views per forecast call.
  for (let start = from; start < rows; start += FORECAST_CHUNK_VIEWS) {
    const end = Math.min(rows, start + FORECAST_CHUNK_VIEWS);
    const views: SeriesView[] = [];
    for (let t = start; t < end; t++) views.push(viewAt(series, t - lead));
    const forecasts = await forecaster.forecast(views, horizon);
    if (forecasts.length !== views.length) {
      throw new EdgeqError('INVALID_MODEL', `${forecaster.name}: ${forecasts.length} forecasts for ${views.length} views`, { details: { method: forecaster.name } });
    }
    forecasts.forEach((f, i) => {
      const t = start + i;
      options.observe?.(t - lead, f);
      const point = f.point[lead];
      const upper = f.p90[lead];
      if (typeof point !== 'number' || typeof upper !== 'number' || !Number.isFinite(point) || !Number.isFinite(upper)) {
        throw new EdgeqError('INVALID_MODEL', `${forecaster.name}: no finite forecast for step ${t} (origin ${t - lead}, step ${lead} of ${f.p90.length})`, { details: { method: forecaster.name, t } });
      }
      // As the backtest scores it (PROTOCOL.md §5): clipped at 0, the band never below the point.
      const p90 = Math.max(0, point, upper);
      out.push({ t, instances: instancesFor(p90, shape), p90 });
    });
  }
  return out;
}
