/**
 * The planner's report as the mesh carries it (`region/<name>`'s `forecast` slot), and back: every
 * region publishes the next hour's P50, its P10–P90 band and its plan, so that when a region dies the regions
 * taking its traffic can add its expected traffic to their own plans (failover awareness).
 * Entries come from other processes, so what is read is checked, never trusted.
 */
import { FORECAST_SUMMARY_POINTS_MAX, type ForecastSummary } from '../../gossip/region/index.ts';
import type { CapacityForecastPoint, CapacityModel, CapacityPlanPoint } from './types.ts';

/** The summary covers the next hour: what "expected traffic" means to another region's plan. */
export const FORECAST_SUMMARY_SPAN_MS = 3_600_000;

/** Rounded to 0.1 record/s: finer would make every entry differ and defeat the mesh's change check. */
const round = (x: number) => Math.round(x * 10) / 10;

/** The mesh summary of a planner report, or `{kind: 'none'}` when it has no forecast yet. */
export function summarizeForMesh(report: { step: number; forecast: readonly CapacityForecastPoint[]; plan: readonly CapacityPlanPoint[]; model: CapacityModel }, nowMs: number): ForecastSummary {
  const stepMs = report.step;
  const first = report.forecast[0];
  if (first === undefined || !(stepMs > 0)) return { kind: 'none' };
  const within = report.forecast.filter((f) => f.t < first.t + FORECAST_SUMMARY_SPAN_MS);
  const perPoint = Math.ceil(within.length / FORECAST_SUMMARY_POINTS_MAX);
  const p50: number[] = [];
  const p90: number[] = [];
  const p10: number[] = [];
  for (let i = 0; i < within.length; i += perPoint) {
    const group = within.slice(i, i + perPoint);
    p50.push(round(group.reduce((n, f) => n + f.p50, 0) / group.length));
    p90.push(round(Math.max(...group.map((f) => f.p90))));
    p10.push(round(Math.min(...group.map((f) => f.p10))));
  }
  let broker = 0;
  let gateway = 0;
  let ceilingPerSec = 0;
  for (const p of report.plan) {
    broker = Math.max(broker, p.instances.broker);
    gateway = Math.max(gateway, p.instances.gateway);
    ceilingPerSec = Math.max(ceilingPerSec, Number.isFinite(p.ceilingPerSec) ? p.ceilingPerSec : 0);
  }
  return { kind: 'forecast', generatedAtMs: nowMs, t0: first.t, pointMs: perPoint * stepMs, p50, p90, p10, plan: { broker, gateway, ceilingPerSec: round(ceilingPerSec) }, method: report.model.method, mode: report.model.mode };
}

const finiteNonNegative = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/** A summary read from the mesh if it is well-formed, else null (a malformed one is ignored, not fatal). */
export function parseForecastSummary(value: unknown): Extract<ForecastSummary, { kind: 'forecast' }> | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if (v['kind'] !== 'forecast') return null;
  const { t0, pointMs, p50, p90, p10, plan, generatedAtMs, method, mode } = v;
  if (!finiteNonNegative(t0) || !finiteNonNegative(generatedAtMs) || !finiteNonNegative(pointMs) || pointMs <= 0) return null;
  if (!Array.isArray(p50) || !Array.isArray(p90) || p50.length !== p90.length || p50.length === 0 || p50.length > FORECAST_SUMMARY_POINTS_MAX) return null;
  if (!p50.every(finiteNonNegative) || !p90.every(finiteNonNegative)) return null;
  // A peer from before the lower band publishes none: its band then starts at its P50.
  if (p10 !== undefined && (!Array.isArray(p10) || p10.length !== p50.length || !p10.every(finiteNonNegative))) return null;
  if (typeof plan !== 'object' || plan === null) return null;
  const pl = plan as Record<string, unknown>;
  if (!finiteNonNegative(pl['broker']) || !finiteNonNegative(pl['gateway']) || !finiteNonNegative(pl['ceilingPerSec'])) return null;
  if (typeof method !== 'string' || (mode !== 'predictive' && mode !== 'reactive')) return null;
  return { kind: 'forecast', t0, pointMs, p50: p50 as number[], p90: p90 as number[], p10: p10 === undefined ? [...(p50 as number[])] : (p10 as number[]), plan: { broker: pl['broker'] as number, gateway: pl['gateway'] as number, ceilingPerSec: pl['ceilingPerSec'] as number }, generatedAtMs, method, mode };
}

/**
 * A summary back as forecast points on this planner's steps (`stepMs`), scaled by `share` (the
 * part of that region's traffic this region takes): each step reads the point that covers it.
 * Without `range`, the summary's own span; with it, the steps [from, from + steps × stepMs), where
 * a step past the summary's end holds its last point: a region dead for longer than the hour it
 * published still has clients, and its latest expectation is the best one there is.
 */
export function expandSummary(summary: Extract<ForecastSummary, { kind: 'forecast' }>, stepMs: number, share: number, range?: { from: number; steps: number }): CapacityForecastPoint[] {
  const out: CapacityForecastPoint[] = [];
  const last = summary.p50.length - 1;
  const end = summary.t0 + summary.p50.length * summary.pointMs;
  const start = range ? Math.ceil(range.from / stepMs) * stepMs : Math.ceil(summary.t0 / stepMs) * stepMs;
  const stop = range ? start + Math.min(range.steps, EXPAND_STEPS_MAX) * stepMs : end;
  // Bounded: at most EXPAND_STEPS_MAX steps, or the summary's span (an hour of steps at most).
  for (let t = start; t < stop && out.length < EXPAND_STEPS_MAX; t += stepMs) {
    const i = Math.min(last, Math.max(0, Math.floor((t - summary.t0) / summary.pointMs)));
    out.push({ t, p50: summary.p50[i]! * share, p90: summary.p90[i]! * share, p10: summary.p10[i]! * share });
  }
  return out;
}

/** Most steps one expansion yields (twice the planner's longest horizon). */
export const EXPAND_STEPS_MAX = 7200;
