/**
 * The drill's checked workload (producers and readers over the gateways) and the drain after the
 * heal (issue 16). Each record names its partition explicitly: round-robin from a seeded start,
 * skipping partitions with a request of the same producer still in flight (see producer.ts), so
 * `ProducedRecord.partition` is where the checker looks and per-producer order is checkable.
 */
export {
  CheckedWorkload,
  POLLS_KEPT_MAX,
  PRODUCED_RECORDS_MAX,
  PRODUCE_TIMEOUT_MS_DEFAULT,
  TOPIC_VISIBLE_MS_MAX,
  WORKLOAD_DURATION_MS_DEFAULT,
  WORKLOAD_PARTITIONS_DEFAULT,
  WORKLOAD_PARTITIONS_MAX,
  WORKLOAD_RATE_MAX,
  WORKLOAD_REGIONS_MAX,
  type CheckedWorkloadOptions,
  type RegionStats,
  type WorkloadRegion,
  type WorkloadStats,
} from './workload.ts';
export { PRODUCER_INFLIGHT_MAX, PRODUCE_RETRIES_MAX, SCHEDULE_CATCHUP_MAX, type WorkloadRecord } from './producer.ts';
export { READ_WAIT_MS, READ_PAGE_RECORDS, READER_POLLS_MAX } from './reader.ts';
export { classifyProduce, retryAfterMs, RETRY_CODES, RETRY_AFTER_MS_DEFAULT, RETRY_AFTER_MS_MAX, type Classified } from './classify.ts';
export { drain, DRAIN_PAGE_RECORDS, DRAIN_PAGES_MAX, DRAIN_REGION_ATTEMPTS, DRAIN_REQUEST_TIMEOUT_MS, DRAIN_RETRY_BACKOFF_MS, type DrainOptions, type DrainResult } from './drain.ts';
export type { FetchLike } from './http.ts';
