/**
 * A fitted model as it crosses from the retraining worker to the planner's thread. A baseline's
 * fitted state is plain data (its season, parameters and P90 offsets: numbers and Float64Arrays),
 * so its own fields are copied by structured clone and assigned onto a fresh instance of the same
 * class; the LSTM is saved as a model folder by the worker and loaded from it here.
 */
import { EdgeqError } from '../../src/core/index.ts';
import { createBaseline, isBaselineName } from '../baselines/index.ts';
import type { Forecaster } from '../forecaster.ts';

/** A fitted model in transit. */
export type ModelSnapshot =
  | { readonly kind: 'baseline'; readonly method: string; readonly fields: Record<string, unknown> }
  | { readonly kind: 'lstm'; readonly dir: string };

/** Fields that are caches, not fitted state: not carried (Holt-Winters' filter position refers to the worker's buffers). */
const CACHE_FIELDS = new Set(['cache']);

/** The snapshot of a fitted baseline (its own data fields). */
export function snapshotBaseline(model: Forecaster): ModelSnapshot {
  if (!isBaselineName(model.name)) throw new EdgeqError('INVALID_ARGUMENT', `not a baseline: "${model.name}"`, { details: { method: model.name } });
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(model)) {
    if (CACHE_FIELDS.has(k) || typeof v === 'function') continue;
    fields[k] = v;
  }
  return { kind: 'baseline', method: model.name, fields };
}

/** A fitted baseline rebuilt from its snapshot: a fresh instance of its class with the fitted fields. */
export function reviveBaseline(snapshot: Extract<ModelSnapshot, { kind: 'baseline' }>): Forecaster {
  const model = createBaseline(snapshot.method);
  const own = new Set(Object.keys(model));
  for (const [k, v] of Object.entries(snapshot.fields)) {
    // Only fields the class itself declares: a snapshot cannot graft anything else on.
    if (!own.has(k) || k === 'name') continue;
    (model as unknown as Record<string, unknown>)[k] = v;
  }
  return model;
}
