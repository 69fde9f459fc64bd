/**
 * The Prometheus metrics of one broker, in a registry of its own: several brokers in one process
 * (tests, benches) must not collide in prom-client's global registry.
 *
 * Counters and histograms are updated on the hot path (one increment per produced batch, per
 * fetched partition, per fsync). Partition gauges cost nothing per append: they are computed at
 * scrape time from the broker's local replicas.
 *
 * Label cardinality is bounded: `topic` × `partition` by the broker's topic limits (partitionsMax,
 * 10 000 by default); `acks` has 3 values, `replica` 2, `quantile` 4. No label takes a client id,
 * a key or any other request-supplied string except a topic name the broker already holds, and
 * the `tenant` of the quota counters: a tenant is a client id, so the first TENANT_LABELS_MAX
 * tenants throttled get their own series and the rest share `tenant="other"`.
 */
import type { IntervalHistogram } from 'node:perf_hooks';
import { registerEventLoopDelay } from './event-loop.ts';
import { registerProcessMetrics } from './process-metrics.ts';
import { RecentP99 } from './recent-p99.ts';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the gauges read from one local replica (a broker `Partition` has this shape). */
export interface PartitionGaugeSource {
  readonly topic: string;
  readonly index: number;
  readonly highWatermark: number;
  readonly logEndOffset: number;
  readonly isr: readonly number[];
  readonly replicas: readonly number[];
  readonly role: string;
}

/** Where scrape-time gauges come from (the broker's TopicManager has this shape). */
export interface PartitionsSource {
  localPartitions(): readonly PartitionGaugeSource[];
}

/** How the producer asked for durability, as a label. */
export type AcksLabel = '0' | '1' | 'all';

/** Options of the metrics. */
export interface BrokerMetricsOptions {
  /** Prometheus default process/Node.js metrics (CPU, memory, GC, handles, event-loop lag); on by default. */
  processMetrics?: boolean;
  /** Labels on every series, e.g. `{ broker: '1' }` so several brokers can share a scrape job. */
  defaultLabels?: Record<string, string>;
}

const SECONDS_PER_MS = 1 / 1000;

/** Tenants with a series of their own in the quota counters (see the file comment). */
export const TENANT_LABELS_MAX = 100;
/** The tenant label of every tenant past TENANT_LABELS_MAX. */
export const TENANT_LABEL_OTHER = 'other';

/**
 * Latency buckets, in seconds: 0.1 ms (a page-cache append) up to 10 s (an acks=all produce near
 * its timeout). 14 buckets per series keeps each histogram ~16 samples.
 */
const PRODUCE_LATENCY_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10];
/** fsync on SSD is ~0.1-2 ms, on a loaded or network disk up to seconds. */
const FSYNC_LATENCY_BUCKETS_S = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/** One broker's metrics: counters fed by the handlers and the log, gauges read at scrape time. */
export class BrokerMetrics {
  /** The registry to scrape: `registry.metrics()` is the exposition text. */
  readonly registry = new Registry();
  private readonly produceRecords: Counter;
  private readonly produceBytes: Counter;
  private readonly fetchRecords: Counter<'replica'>;
  private readonly fetchBytes: Counter<'replica'>;
  private readonly fetchResponses: Counter<'replica'>;
  private readonly produceLatency: Histogram<'acks'>;
  private readonly fsyncLatency: Histogram;
  private readonly logAppendBatches: Counter;
  private readonly logAppendBytes: Counter;
  private readonly logReadBytes: Counter<'source'>;
  private readonly logCorruptSegments: Counter;
  private readonly eventLoop: IntervalHistogram;
  private readonly throttledRequests: Counter<'tenant'>;
  private readonly throttleSeconds: Counter<'tenant'>;
  private readonly tenantLabels = new Set<string>();
  /** fsyncs of the last seconds, for CellStatus (the gateways' load controllers read it). */
  private readonly recentFsync = new RecentP99();
  private partitions: PartitionsSource | null = null;

  constructor(options: BrokerMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.defaultLabels) this.registry.setDefaultLabels(options.defaultLabels);
    this.produceRecords = new Counter({ name: 'edgeq_produce_records_total', help: 'Records appended by produce requests (duplicates of idempotent retries excluded).', registers });
    this.produceBytes = new Counter({ name: 'edgeq_produce_bytes_total', help: 'Batch bytes appended by produce requests (duplicates excluded).', registers });
    this.fetchRecords = new Counter({
      name: 'edgeq_fetch_records_total',
      help: 'Records in the batches sent by fetch responses (whole stored batches, so a fetch from mid-batch counts the whole batch).',
      labelNames: ['replica'],
      registers,
    });
    this.fetchBytes = new Counter({ name: 'edgeq_fetch_bytes_total', help: 'Batch bytes sent by fetch responses.', labelNames: ['replica'], registers });
    this.fetchResponses = new Counter({
      name: 'edgeq_fetch_responses_total',
      help: 'Fetch responses sent, empty ones included (records or bytes per response show how well fetches batch).',
      labelNames: ['replica'],
      registers,
    });
    this.produceLatency = new Histogram({
      name: 'edgeq_produce_latency_seconds',
      help: 'Time to answer a produce request, from decoding to response (acks=all includes replication).',
      labelNames: ['acks'],
      buckets: PRODUCE_LATENCY_BUCKETS_S,
      registers,
    });
    this.fsyncLatency = new Histogram({ name: 'edgeq_fsync_latency_seconds', help: 'Duration of each log fdatasync.', buckets: FSYNC_LATENCY_BUCKETS_S, registers });
    this.logAppendBatches = new Counter({ name: 'edgeq_log_append_batches_total', help: 'Batches written to local logs (produce, replication and internal topics).', registers });
    this.logAppendBytes = new Counter({ name: 'edgeq_log_append_bytes_total', help: 'Bytes written to local logs (produce, replication and internal topics).', registers });
    this.logReadBytes = new Counter({
      name: 'edgeq_log_read_bytes_total',
      help: 'Bytes read from local logs (fetches, replication, internal replays), by source: the in-memory tail cache or the segment files.',
      labelNames: ['source'],
      registers,
    });
    this.logCorruptSegments = new Counter({
      name: 'edgeq_log_corrupt_segments_total',
      help: 'Files recovery moved aside (*.corrupt) when opening local logs: segments it could not keep and cut-off corrupt tails. Any increase needs an operator.',
      registers,
    });

    this.throttledRequests = new Counter({
      name: 'edgeq_quota_throttled_requests_total',
      help: 'Binary-protocol produce requests refused over a tenant quota (QUOTA_EXCEEDED, connection muted), by tenant (the client id).',
      labelNames: ['tenant'],
      registers,
    });
    this.throttleSeconds = new Counter({
      name: 'edgeq_quota_throttle_seconds_total',
      help: 'Throttle time handed to binary-protocol clients over their quota (the connection is not read for that long), by tenant.',
      labelNames: ['tenant'],
      registers,
    });

    const self = this;
    const partitionGauge = (name: string, help: string, value: (p: PartitionGaugeSource) => number) =>
      new Gauge<'topic' | 'partition'>({
        name,
        help,
        labelNames: ['topic', 'partition'],
        registers,
        // Rebuilt at each scrape: a deleted topic's series disappear instead of freezing.
        collect() {
          this.reset();
          for (const p of self.partitions?.localPartitions() ?? []) this.set({ topic: p.topic, partition: String(p.index) }, value(p));
        },
      });
    partitionGauge('edgeq_partition_high_watermark', 'High watermark of each local replica (the offset consumers read up to).', (p) => p.highWatermark);
    partitionGauge('edgeq_partition_log_end_offset', 'Log end offset of each local replica.', (p) => p.logEndOffset);
    partitionGauge('edgeq_partition_isr_size', 'In-sync replicas of each local replica, as this broker knows them (authoritative on the leader).', (p) => p.isr.length);
    partitionGauge('edgeq_partition_leader', '1 when this broker leads the partition, else 0.', (p) => (p.role === 'leader' ? 1 : 0));
    new Gauge({
      name: 'edgeq_under_replicated_partitions',
      help: 'Partitions led here whose ISR is smaller than their replica set.',
      registers,
      collect() {
        const led = (self.partitions?.localPartitions() ?? []).filter((p) => p.role === 'leader');
        this.set(led.filter((p) => p.isr.length < p.replicas.length).length);
      },
    });

    // Node's own event-loop delay histogram, read and reset at each scrape: the figures cover the
    // time since the previous scrape (prom-client's nodejs_eventloop_lag_* do the same).
    this.eventLoop = registerEventLoopDelay(registers);

    if (options.processMetrics !== false) registerProcessMetrics(this.registry);
  }

  /** Starts reading partition gauges from `source` (the broker's topics) at each scrape. */
  watchPartitions(source: PartitionsSource): void {
    this.partitions = source;
  }

  /** A produce request appended `records` records in `bytes` bytes. */
  recordProduce(records: number, bytes: number): void {
    if (records > 0) this.produceRecords.inc(records);
    if (bytes > 0) this.produceBytes.inc(bytes);
  }

  /** A produce request was answered after `durationMs`. */
  observeProduceLatency(acks: AcksLabel, durationMs: number): void {
    this.produceLatency.observe({ acks }, durationMs * SECONDS_PER_MS);
  }

  /** A fetch response carried `records` records in `bytes` bytes, to a consumer or a follower. */
  recordFetch(records: number, bytes: number, replica: boolean): void {
    const labels = { replica: replica ? 'true' : 'false' };
    this.fetchResponses.inc(labels);
    if (records > 0) this.fetchRecords.inc(labels, records);
    if (bytes > 0) this.fetchBytes.inc(labels, bytes);
  }

  /** A request of `tenant` was refused over its quota and its connection muted for `throttleMs`. */
  recordThrottle(tenant: string, throttleMs: number): void {
    if (!this.tenantLabels.has(tenant)) {
      if (this.tenantLabels.size >= TENANT_LABELS_MAX) tenant = TENANT_LABEL_OTHER;
      else this.tenantLabels.add(tenant);
    }
    this.throttledRequests.inc({ tenant });
    if (throttleMs > 0) this.throttleSeconds.inc({ tenant }, throttleMs * SECONDS_PER_MS);
  }

  /** The log observer every partition log reports to (fsyncs, appends, reads, corrupt segments). */
  readonly logObserver = {
    onFsync: (durationMs: number): void => {
      this.fsyncLatency.observe(durationMs * SECONDS_PER_MS);
      this.recentFsync.record(durationMs);
    },
    onAppend: (batches: number, bytes: number): void => {
      this.logAppendBatches.inc(batches);
      this.logAppendBytes.inc(bytes);
    },
    onRead: (source: 'cache' | 'file', bytes: number): void => this.logReadBytes.inc({ source }, bytes),
    onCorruptSegment: (): void => this.logCorruptSegments.inc(),
  };

  /** The p99 of this broker's fsyncs over the last few seconds (ms; 0 when none ran). */
  fsyncP99Ms(): number {
    return this.recentFsync.p99();
  }

  /** The exposition text of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** The exposition content type (for the HTTP answer). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the event-loop monitor and forgets the partitions. */
  close(): void {
    this.eventLoop.disable();
    this.partitions = null;
  }
}
