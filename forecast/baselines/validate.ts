/**
 * Input checks every baseline shares: fit options, the horizon of a forecast call, and views
 * (a view whose `values` is longer than its origin would let a model read the future).
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { FitOptions, SeriesView } from '../forecaster.ts';

/** Throws INVALID_ARGUMENT unless `value` is a positive integer. */
export function requirePositiveInteger(value: number, what: string): void {
  if (!Number.isInteger(value) || value < 1) throw new EdgeqError('INVALID_ARGUMENT', `${what} must be a positive integer, got ${value}`, { details: { [what]: value } });
}

/** Checks the season and horizon of a fit. */
export function checkFitOptions(options: FitOptions): void {
  requirePositiveInteger(options.season, 'season');
  requirePositiveInteger(options.horizon, 'horizon');
}

/**
 * Checks a view before a model reads it: exactly `origin` values (truncated at its origin) and at
 * least `minValues` of them; `model` and `what` word the "too few rows" error.
 */
export function checkView(view: SeriesView, minValues: number, model: string, what: string): void {
  if (view.values.length !== view.origin) {
    throw new EdgeqError('INVALID_ARGUMENT', `${model}: a view at origin ${view.origin} must hold exactly ${view.origin} values, got ${view.values.length}`, {
      details: { origin: view.origin, values: view.values.length },
    });
  }
  if (view.origin < minValues) {
    throw new EdgeqError('INVALID_DATA', `${model}: too few rows for ${what}: the view at origin ${view.origin} (ending at line ${view.origin + 1}) has ${view.origin} rows, need ${minValues}`, {
      details: { line: view.origin + 1, origin: view.origin, minRows: minValues },
    });
  }
}

/** Throws INVALID_ARGUMENT when forecast() is called before fit(). */
export function notFitted(model: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `${model}: forecast() called before fit()`, { details: { model } });
}
