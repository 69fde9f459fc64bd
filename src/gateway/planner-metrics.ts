/**
 * The planner's Prometheus series, for an autoscaler to scrape (read from the planner at scrape
 * time, nothing on the request path): the forecast for the step being decided now, the instances
 * to have ready by then, whether the planner trusts its forecast, and its live error.
 */
import { Gauge, type Registry } from 'prom-client';
import type { CapacitySource } from './capacity-route.ts';

/** Registers the planner's series in `registry`. */
export function registerPlannerMetrics(registry: Registry, source: CapacitySource): void {
  const registers = [registry];
  new Gauge<'quantile'>({
    name: 'edgeq_planner_forecast_records_per_second',
    help: 'Forecast ingress of the region (records/s) for the step decided now (a lead time ahead), by quantile.',
    labelNames: ['quantile'],
    registers,
    collect() {
      const g = source.gauges();
      this.set({ quantile: '0.5' }, g.p50);
      this.set({ quantile: '0.9' }, g.p90);
    },
  });
  new Gauge<'component'>({
    name: 'edgeq_planner_desired_instances',
    help: 'Instances of each component the plan wants ready a lead time from now (start them now).',
    labelNames: ['component'],
    registers,
    collect() {
      const g = source.gauges();
      this.set({ component: 'broker' }, g.desired.broker);
      this.set({ component: 'gateway' }, g.desired.gateway);
    },
  });
  new Gauge({
    name: 'edgeq_planner_predictive',
    help: '1 while the planner trusts its forecast (predictive), 0 while it has fallen back to the load controller alone (reactive).',
    registers,
    collect() {
      this.set(source.gauges().mode === 'predictive' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'edgeq_planner_live_mase',
    help: 'Rolling MASE of the live forecasts against what arrived (NaN until scored).',
    registers,
    collect() {
      this.set(source.gauges().liveMase ?? NaN);
    },
  });
}
