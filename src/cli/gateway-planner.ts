/**
 * The gateway's forecast planner, composed (issue 15): the region's ingress history feeds the
 * planner one step at a time; each step's plan lifts the limiter's capacity ahead of forecast
 * peaks (pre-warm), and its report is what `GET /v1/capacity`, the planner gauges and the mesh's
 * forecast slot show. The mesh's view of dead regions adds their forecasts (failover awareness).
 *
 * Steps follow the history: the planner steps when a step closes (not on a timer of its own), so
 * every forecast is made from the step that just ended. A step that fails is logged and the next
 * one tries again: a planner bug must not stop the gateway or freeze the limiter at a stale plan
 * (the plan is withdrawn from the limiter until a step succeeds).
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger } from '../core/index.ts';
import type { AdmissionLimiter } from '../../ratelimit/index.ts';
import type { ForecastSummary } from '../../gossip/region/index.ts';
import { failoverDemand, LIMITER_CEILING_MIN, Planner, resolvePlannerOptions, summarizeForMesh, type CapacityReport, type FailoverMeshView, type IngressStep, type PlannerGauges, type PlannerOptions, type PlannerReport } from '../../forecast/planner/index.ts';
import { LIMITER_PER_SEC_MAX } from '../../ratelimit/index.ts';
import type { CapacitySource } from '../gateway/capacity-route.ts';
import type { PlannerSettings } from './planner-flags.ts';

/** What the planner reads the history through (src/gateway/ingress-history). */
export interface PlannerHistory {
  steps(): IngressStep[];
  lastStep(): IngressStep | null;
  on(event: 'step', cb: (step: IngressStep) => void): void;
}

export interface GatewayPlannerOptions {
  region: string;
  stepMs: number;
  settings: PlannerSettings;
  history: PlannerHistory;
  limiter: AdmissionLimiter | null;
  /** The mesh's members and region entries, once the mesh runs (null: none, or not yet). */
  mesh: () => FailoverMeshView | null;
  clock?: Clock;
  logger?: Logger;
}

export interface GatewayPlannerHandle {
  readonly source: CapacitySource;
  /** The mesh's forecast slot for this region. */
  summary(): ForecastSummary;
  close(): Promise<void>;
}

/** Builds the planner over the history and starts stepping it as steps close. */
export function startGatewayPlanner(o: GatewayPlannerOptions): GatewayPlannerHandle {
  const clock = o.clock ?? systemClock;
  const logger = (o.logger ?? silentLogger).child({ component: 'planner' });
  const planner = new Planner({
    ...plannerOptionsOf(o.settings, o.stepMs),
    history: () => o.history.steps(),
    extraDemand: () => {
      const view = o.mesh();
      if (!view) return [];
      // The steps the planner is planning now: from the step before this one over twice the horizon.
      const from = (Math.floor(clock.nowMs() / o.stepMs) - 1) * o.stepMs;
      return failoverDemand(view, o.stepMs, { from, steps: 2 * planner.options.horizon + 2 });
    },
    clock,
    logger,
  });
  // The planner logs its mode changes itself; a change withdraws or restores the lift at once.
  planner.on('mode', () => applyPlan());
  let closed = false;
  let running: Promise<void> | null = null;
  let pending = false;
  const applyPlan = () => {
    if (!o.limiter || !o.settings.prewarm) return;
    o.limiter.prewarm(prewarmLevel(planner.report()));
  };
  const step = () => {
    // One step at a time; a step closing while one runs is taken right after it (never queued deeper).
    if (running) {
      pending = true;
      return;
    }
    running = planner
      .step()
      .then(applyPlan, (err: unknown) => {
        logger.error({ code: toEdgeqError(err).code, err: toEdgeqError(err).message }, 'planner step failed');
        o.limiter?.prewarm(null);
      })
      .finally(() => {
        running = null;
        if (pending && !closed) {
          pending = false;
          step();
        }
      });
  };
  o.history.on('step', () => {
    if (!closed) step();
  });
  // The history read back at start: plan from it at once rather than a step later.
  step();

  const source: CapacitySource = {
    report(): CapacityReport {
      const r = planner.report();
      const last = o.history.lastStep();
      return {
        region: o.region,
        step: r.step,
        now: { ingressPerSec: last ? last.records : 0, capacityPerSec: o.limiter?.view().capacityPerSec ?? null },
        forecast: r.forecast,
        // Reactive mode plans no ceiling (Infinity: the load controller alone): JSON shows null.
        plan: r.plan.map((x) => ({ t: x.t, instances: x.instances, ceilingPerSec: Number.isFinite(x.ceilingPerSec) ? x.ceilingPerSec : null })),
        model: r.model,
      };
    },
    gauges(): PlannerGauges {
      const r = planner.report();
      // The step being decided now: the plan's last entry (current + lead).
      const decidedAt = r.current === null ? null : r.current + planner.options.leadSteps * r.step;
      const f = r.forecast.find((x) => x.t === decidedAt);
      const extra = r.extra.find((x) => x.t === decidedAt);
      const p = r.plan.find((x) => x.t === decidedAt);
      return {
        p50: (f?.p50 ?? 0) + (extra?.p50 ?? 0),
        p90: (f?.p90 ?? 0) + (extra?.p90 ?? 0),
        p10: (f?.p10 ?? 0) + (extra?.p10 ?? 0),
        desired: p?.instances ?? planner.desired(),
        mode: r.model.mode,
        liveMase: r.model.liveMase,
      };
    },
  };
  return {
    source,
    summary: () => summarizeForMesh(planner.report(), clock.nowMs()),
    close: async () => {
      closed = true;
      await running;
      await planner.close();
      o.limiter?.prewarm(null);
    },
  };
}

/** The planner's options from the gateway's settings (the step is the ingress history's). */
function plannerOptionsOf(settings: PlannerSettings, stepMs: number): Omit<PlannerOptions, 'history'> {
  const season = settings.seasonSteps ?? Math.max(2, Math.round(86_400_000 / stepMs));
  return {
    stepMs,
    season,
    leadSteps: Math.max(1, Math.ceil(settings.leadMs / stepMs)),
    perInstance: settings.perInstance,
    headroom: settings.headroom,
    maxInstances: { broker: settings.maxInstances, gateway: settings.maxInstances },
    retrainEveryMs: settings.retrainEveryMs,
  };
}

/**
 * Checks the planner's settings against the history's step before anything starts (a lead or a
 * season the planner refuses is a start-up INVALID_CONFIG, not a half-started gateway).
 */
export function checkPlannerSettings(settings: PlannerSettings, stepMs: number): void {
  try {
    resolvePlannerOptions({ ...plannerOptionsOf(settings, stepMs), history: () => [] });
  } catch (err) {
    const e = toEdgeqError(err);
    const key = String(e.details['key'] ?? '');
    const flag = PLANNER_OPTION_FLAGS[key.split('.')[0]!];
    if (!flag) throw e;
    const why = key === 'leadSteps' ? ` (a lead of ${Math.ceil(settings.leadMs / stepMs)} steps of ${stepMs} ms; the horizon is the next hour, at most a season)` : '';
    throw new EdgeqError('INVALID_CONFIG', `${flag}: ${e.message.replace(/^planner: /, '')}${why}`, { details: { key: flag, value: e.details['value'] } });
  }
}

/** The gateway flag behind each planner option, for start-up errors that name what the user set. */
const PLANNER_OPTION_FLAGS: Record<string, string> = {
  stepMs: '--ingress-step-ms',
  season: '--planner-season-steps',
  horizon: '--planner-season-steps',
  leadSteps: '--planner-lead-ms',
  perInstance: '--planner-per-broker/--planner-per-gateway',
  headroom: '--planner-headroom',
  maxInstances: '--planner-max-instances',
  retrainEveryMs: '--planner-retrain-ms',
};

/**
 * The limiter's pre-warm level after a step: the largest ceiling the plan sets for the current
 * step and the next one, so the lift is in place before the next step's ramp begins (the planner
 * runs just after a step boundary, so the current step has already started); null in reactive
 * mode or without a decision (the load controller alone).
 */
export function prewarmLevel(report: PlannerReport): number | null {
  if (report.model.mode !== 'predictive' || report.current === null) return null;
  let level = -Infinity;
  for (const p of report.plan) {
    if (p.t === report.current || p.t === report.current + report.step) level = Math.max(level, p.ceilingPerSec);
  }
  if (!Number.isFinite(level)) return null;
  return Math.min(LIMITER_PER_SEC_MAX, Math.max(LIMITER_CEILING_MIN, level));
}
