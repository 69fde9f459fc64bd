/**
 * The event-loop delay gauge every edgeq process exports (brokers and gateways alike): Node's own
 * delay histogram, read and reset at each scrape, so the figures cover the time since the previous
 * scrape (prom-client's nodejs_eventloop_lag_* do the same).
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

const NS_PER_SECOND = 1e9;
/** monitorEventLoopDelay's sampling resolution: 10 ms is prom-client's own choice for its lag metrics. */
const EVENT_LOOP_RESOLUTION_MS = 10;

/** Registers `edgeq_event_loop_delay_seconds{quantile}`; disable the returned histogram on close. */
export function registerEventLoopDelay(registers: Registry[]): IntervalHistogram {
  const loop = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  loop.enable();
  new Gauge<'quantile'>({
    name: 'edgeq_event_loop_delay_seconds',
    help: 'Event-loop delay since the previous scrape, by quantile (1 = the maximum).',
    labelNames: ['quantile'],
    registers,
    collect() {
      // Before the first sample the histogram reports NaN/huge values: report 0 instead.
      const has = loop.count > 0;
      for (const q of [0.5, 0.9, 0.99]) this.set({ quantile: String(q) }, has ? loop.percentile(q * 100) / NS_PER_SECOND : 0);
      this.set({ quantile: '1' }, has ? loop.max / NS_PER_SECOND : 0);
      loop.reset();
    },
  });
  return loop;
}
