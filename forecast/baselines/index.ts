/** The baselines of PROTOCOL.md §7 and a factory by their report names. */
import { EdgeqError } from '../../src/core/index.ts';
import type { Forecaster } from '../forecaster.ts';
import { HoltWintersForecaster } from './holt-winters.ts';
import { LastValueForecaster } from './last-value.ts';
import { SeasonalNaiveForecaster } from './seasonal-naive.ts';

export { SeasonalNaiveForecaster, seasonalNaivePoint } from './seasonal-naive.ts';
export { LastValueForecaster } from './last-value.ts';
export {
  HoltWintersForecaster,
  HW_GRID,
  HW_INIT_DAYS_MAX,
  HW_LOGIT_BOUND,
  HW_NELDER_MEAD_ITERATIONS_MAX,
  holtWintersPoint,
  initialState,
  oneStepSse,
  runFilter,
  type HoltWintersParams,
  type HoltWintersState,
} from './holt-winters.ts';
export { nelderMead, NELDER_MEAD_ITERATIONS_MAX, type NelderMeadOptions, type NelderMeadResult } from './nelder-mead.ts';
export { applyBand, applyBands, BAND_QUANTILE, LOWER_BAND_QUANTILE, quantileSorted, ResidualBand, RESIDUAL_ORIGINS_MAX, type BandOffsets } from './residual-band.ts';

/** The baselines' names, in report order. */
export const BASELINE_NAMES = ['seasonal_naive', 'holt_winters_add', 'last_value'] as const;

/** A baseline's name. */
export type BaselineName = (typeof BASELINE_NAMES)[number];

/** True when `name` names a baseline. */
export function isBaselineName(name: string): name is BaselineName {
  return (BASELINE_NAMES as readonly string[]).includes(name);
}

/** A new, unfitted baseline by its report name; INVALID_ARGUMENT for any other name. */
export function createBaseline(name: string): Forecaster {
  switch (name) {
    case 'seasonal_naive':
      return new SeasonalNaiveForecaster();
    case 'last_value':
      return new LastValueForecaster();
    case 'holt_winters_add':
      return new HoltWintersForecaster();
    default:
      throw new EdgeqError('INVALID_ARGUMENT', `unknown baseline "${name}" (known: ${BASELINE_NAMES.join(', ')})`, { details: { name } });
  }
}
