/**
 * prom-client's default process and Node.js metrics (CPU, memory, GC, handles, event-loop lag),
 * as every edgeq process exports them, less three series whose names break Prometheus' naming
 * rules: `nodejs_active_{handles,requests,resources}_total` are gauges, and `_total` is the
 * counter suffix, so `promtool check metrics` refuses them. Nothing is lost: each is the sum of
 * the same-named gauge without the suffix, which carries a `type` label.
 */
import { collectDefaultMetrics, type Registry } from 'prom-client';

/** Default series that are gauges named like counters. */
const GAUGES_NAMED_AS_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Registers the default process metrics in `registry`. */
export function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
}
