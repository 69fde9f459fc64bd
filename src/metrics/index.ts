/**
 * Prometheus metrics of a broker: its own registry (produce/fetch counters, produce and fsync
 * latency, per-partition gauges read at scrape time, event-loop delay, process metrics) and the
 * admin HTTP endpoint serving them as `GET /metrics`.
 */
export {
  BrokerMetrics,
  TENANT_LABELS_MAX,
  type AcksLabel,
  type BrokerMetricsOptions,
  type PartitionGaugeSource,
  type PartitionsSource,
} from './broker-metrics.ts';
export { ADMIN_HOST, startAdminServer, type AdminRoute, type AdminServer } from './admin-server.ts';
export { EVENT_LOOP_DELAY_METRIC, registerEventLoopDelay } from './event-loop.ts';
export { registerProcessMetrics } from './process-metrics.ts';
export { RecentP99, RECENT_SAMPLES_MAX, RECENT_WINDOW_MS } from './recent-p99.ts';
