/**
 * `GET /v1/capacity` (needs the admin grant): the forecast pre-scaling's report for this region,
 * the ingress and capacity of now, the next steps' P50/P90 forecast, the plan (instances of each
 * component and the limiter ceiling per step, each decided a lead time ahead), and the model with
 * its backtest and live errors and whether the planner trusts it (`predictive`) or has fallen
 * back to the load controller alone (`reactive`). A gateway run without a planner answers 404.
 * Before the history has been read the report is there, with an empty forecast and plan.
 */
import type { Hono } from 'hono';
import { EdgeqError } from '../core/index.ts';
import type { CapacityReport, PlannerGauges } from '../../forecast/planner/types.ts';
import { authorize, type AuthVariables } from './auth.ts';

/** The planner as the gateway app sees it. */
export interface CapacitySource {
  report(): CapacityReport;
  gauges(): PlannerGauges;
}

/** Adds the capacity route to `app`. */
export function registerCapacityRoute(app: Hono<{ Variables: AuthVariables }>, deps: { capacity: CapacitySource | null | undefined }): void {
  app.get('/v1/capacity', (c) => {
    authorize(c, 'admin', '*');
    if (!deps.capacity) throw new EdgeqError('NOT_FOUND', 'this gateway runs without the forecast planner (--planner off)');
    return c.json(deps.capacity.report());
  });
}
