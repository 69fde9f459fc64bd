/**
 * Flow control (docs/flow-control.md): the token bucket, quotas with wildcards and their
 * enforcement (QuotaEnforcer at the gateway, QuotaBook at the broker), global quotas over the
 * mesh, max-min fair shares by weight, and the load controller (gradient law, and the seeds' rule
 * as the baseline) with the admission limiter the gateway's produce route runs (the controller,
 * fair shares by tenant weight, a concurrency limit).
 */
export { TokenBucket, type BucketSpec, type TakeResult } from './token-bucket.ts';
export { QuotaBook, QUOTA_BUCKETS_MAX, QUOTAS_MAX, type Admission } from './quota-book.ts';
export { parseQuota, resolveQuota, quotaKey, sameQuota, QUOTA_VALUE_MAX, DEFAULT_BURST_SEC, TENANT_NAME, QUOTA_TOPIC_NAME, type Quota, type QuotaLimits } from './quota.ts';
export { maxMinFairShares, jainIndex, type Claim } from './fair-share.ts';
export { GradientController, SeedsRuleController, GRADIENT_DEFAULTS, type CapacityController, type ControllerDecision, type GradientOptions } from './controller.ts';
export { AdaptiveThrottle, ADAPTIVE_K, REJECT_PROBABILITY_MAX, WINDOW_BUCKETS } from './adaptive-throttle.ts';
export { rateLimitHeaders, retryAfterSec, RATELIMIT_HEADERS_DRAFT, type PolicyState } from './headers.ts';
export { MemoryQuotaAdmin, type QuotaAdmin } from './quota-admin.ts';
export { GlobalShare, GLOBAL_SHARE_DEFAULTS, type GlobalShareOptions } from './global-share.ts';
export { pressures, SIGNAL_NAMES, SIGNAL_TARGETS_DEFAULT, type LoadSignals, type LoadSignalSource, type SignalName, type SignalTargets } from './signals.ts';
export { QuotaEnforcer, QUOTA_REFRESH_MS, globalShareBound, type QuotaEnforcerOptions, type QuotaInForce } from './quota-enforcer.ts';
export { GlobalQuotaCatalogue, globalQuotaKey } from './quota-catalogue.ts';
export {
  AdmissionLimiter,
  LIMITER_CONTROLLERS,
  LIMITER_INTERVAL_MS_DEFAULT,
  LIMITER_INTERVAL_MS_MIN,
  LIMITER_INTERVAL_MS_MAX,
  LIMITER_INITIAL_PER_SEC_DEFAULT,
  LIMITER_PER_SEC_MAX,
  LIMITER_FLOOR_FRACTION,
  LIMITER_TENANTS_MAX,
  TENANT_IDLE_INTERVALS_MAX,
  CONCURRENCY_MIN,
  CONCURRENCY_TARGET_MULTIPLE,
  CONCURRENCY_MAX,
  BINDING_PRESSURE_MIN,
  CAPACITY_POLICY,
  type AdmissionLimiterOptions,
  type AdmissionTicket,
  type LimiterControllerName,
  type LimiterView,
  type SignalView,
  type TenantView,
} from './limiter.ts';
export { registerLimiterMetrics } from './limiter-metrics.ts';
export { LatencyWindow, LATENCY_SAMPLES_MAX } from './latency-window.ts';
export { parseTenantWeights, DEFAULT_TENANT_WEIGHT, TENANT_WEIGHT_MAX, TENANT_WEIGHTS_MAX } from './tenant-weights.ts';
