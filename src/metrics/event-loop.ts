/**
 * The event-loop delay every edgeq process exports (brokers and gateways alike), as a Prometheus
 * summary: Node's own delay histogram (monitorEventLoopDelay) gives the quantiles, read and reset
 * at each scrape so they cover the time since the previous scrape (prom-client's
 * nodejs_eventloop_lag_* do the same), and `_sum`/`_count` add up every sample since start.
 *
 * It is a summary, not a gauge with a `quantile` label: Prometheus reserves that label for
 * summaries, and `promtool check metrics` refuses it anywhere else. prom-client's Summary computes
 * quantiles from values it observes one by one; the delay samples live inside Node's histogram, so
 * the class below keeps prom-client's registration and exposition and answers `get()` from it.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Summary, type Registry } from 'prom-client';

const NS_PER_SECOND = 1e9;
/** monitorEventLoopDelay's sampling resolution: 10 ms is prom-client's own choice for its lag metrics. */
const EVENT_LOOP_RESOLUTION_MS = 10;
/** Quantiles reported; 1 is the maximum. */
const QUANTILES = [0.5, 0.9, 0.99, 1] as const;

/** The summary's name. */
export const EVENT_LOOP_DELAY_METRIC = 'edgeq_event_loop_delay_seconds';
const HELP = 'Event-loop delay: quantiles since the previous scrape (1 = the maximum), sum and count of every sample since start.';

/** What a prom-client metric's `get()` answers (the registry formats it). */
type SummaryObject = Awaited<ReturnType<Summary['get']>>;

class EventLoopDelaySummary extends Summary {
  private sumSeconds = 0;
  private count = 0;

  constructor(
    private readonly loop: IntervalHistogram,
    registers: Registry[],
  ) {
    super({ name: EVENT_LOOP_DELAY_METRIC, help: HELP, percentiles: [...QUANTILES], registers });
  }

  override async get(): Promise<SummaryObject> {
    const loop = this.loop;
    // Before the first sample the histogram reports NaN/huge values: report 0 instead.
    const has = loop.count > 0;
    const quantile = (q: number): number => (!has ? 0 : q === 1 ? loop.max : loop.percentile(q * 100)) / NS_PER_SECOND;
    const values: SummaryObject['values'] = QUANTILES.map((q) => ({ labels: { quantile: q }, value: quantile(q) }));
    if (has) {
      this.sumSeconds += (loop.mean * loop.count) / NS_PER_SECOND;
      this.count += loop.count;
    }
    loop.reset();
    values.push({ metricName: `${EVENT_LOOP_DELAY_METRIC}_sum`, labels: {}, value: this.sumSeconds }, { metricName: `${EVENT_LOOP_DELAY_METRIC}_count`, labels: {}, value: this.count });
    // Name, help, type and aggregator as prom-client's Summary answers them (it has no values of
    // its own: nothing is observed into it).
    return { ...(await super.get()), values };
  }
}

/** Registers `edgeq_event_loop_delay_seconds` (a summary); disable the returned histogram on close. */
export function registerEventLoopDelay(registers: Registry[]): IntervalHistogram {
  const loop = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  loop.enable();
  new EventLoopDelaySummary(loop, registers);
  return loop;
}
