/**
 * The planner's Prometheus series, for an autoscaler to scrape (read from the planner at scrape
 * time, nothing on the request path): the forecast for the step being decided now (its quantiles),
 * the instances to have ready by then, whether the planner trusts its forecast, and its live error.
 */
import { Gauge, Summary, type Registry } from 'prom-client';
import type { CapacitySource } from './capacity-route.ts';

/** What a prom-client metric's `get()` answers (the registry formats it). */
type SummaryObject = Awaited<ReturnType<Summary['get']>>;

/**
 * `edgeq_planner_forecast_records_per_second{quantile="0.1"|"0.5"|"0.9"}`: the forecast of the step
 * decided now, as the quantiles of its distribution. Exposed as a summary, not a gauge: Prometheus
 * keeps the `quantile` label for summaries (promtool refuses it on a gauge), and these are
 * quantiles of a distribution, the forecast's. There is no `_sum`/`_count`: nothing is observed
 * (a forecast is not a sample), and the exposition format leaves both out of a summary that has none.
 */
class ForecastQuantiles extends Summary {
  constructor(
    private readonly source: CapacitySource,
    registers: Registry[],
  ) {
    super({ name: 'edgeq_planner_forecast_records_per_second', help: 'Forecast ingress of the region (records/s) for the step decided now (a lead time ahead), by quantile of the forecast.', percentiles: [0.1, 0.5, 0.9], registers });
  }

  override async get(): Promise<SummaryObject> {
    const g = this.source.gauges();
    const values: SummaryObject['values'] = [
      { labels: { quantile: 0.1 }, value: g.p10 },
      { labels: { quantile: 0.5 }, value: g.p50 },
      { labels: { quantile: 0.9 }, value: g.p90 },
    ];
    return { ...(await super.get()), values };
  }
}

/** Registers the planner's series in `registry`. */
export function registerPlannerMetrics(registry: Registry, source: CapacitySource): void {
  const registers = [registry];
  new ForecastQuantiles(source, registers);
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
