/**
 * ListOffsets against partition leaders: one request per leader, retried (with a metadata
 * refresh) while leaders move. Shared by the consumer (start positions) and the admin.
 */
import { EdgeqError } from '../core/index.ts';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, errorOf, type ListOffsetsTopic } from '../protocol/index.ts';
import { isStaleMetadataError, type Cluster } from './cluster.ts';
import type { TopicPartition, TopicPartitionOffset } from './group-member.ts';
import { withDeadline } from './hedged.ts';
import { retry, type RetryOptions } from './retry.ts';

/** Which offset to ask for: the first, the next to be written, or the first at/after a time. */
export type OffsetSpec = 'earliest' | 'latest' | { timestampMs: number };

function timestampOf(spec: OffsetSpec): number {
  if (spec === 'earliest') return EARLIEST_TIMESTAMP;
  if (spec === 'latest') return LATEST_TIMESTAMP;
  return spec.timestampMs;
}

/**
 * The offsets of `partitions` per `spec` (-1 where no record is at/after a timestamp). With
 * `timeoutMs`, every connect, request and retry fits in it (REQUEST_TIMED_OUT after): a frozen
 * leader cannot hold the caller for the connection's request timeout.
 */
export async function listOffsets(
  cluster: Cluster,
  partitions: readonly TopicPartition[],
  options: { spec: OffsetSpec; retry?: RetryOptions; timeoutMs?: number },
): Promise<TopicPartitionOffset[]> {
  if (partitions.length === 0) return [];
  const timestamp = timestampOf(options.spec);
  const deadlineMs = options.timeoutMs === undefined ? Infinity : cluster.clock.monotonicMs() + options.timeoutMs;
  const left = () => (deadlineMs === Infinity ? undefined : Math.max(1, deadlineMs - cluster.clock.monotonicMs()));
  const bounded = <T>(work: Promise<T>): Promise<T> => {
    const ms = left();
    return ms === undefined ? work : withDeadline(work, ms, cluster.clock, () => new EdgeqError('REQUEST_TIMED_OUT', `ListOffsets did not finish within ${options.timeoutMs} ms`, { details: { timeoutMs: options.timeoutMs } }));
  };
  return retry(async () => {
    await bounded(cluster.ensureFresh([...new Set(partitions.map((p) => p.topic))]));
    const byLeader = new Map<number, Map<string, ListOffsetsTopic>>();
    for (const tp of partitions) {
      const leader = cluster.leaderOf(tp.topic, tp.partition);
      const topics = byLeader.get(leader.leaderId) ?? new Map<string, ListOffsetsTopic>();
      byLeader.set(leader.leaderId, topics);
      const t = topics.get(tp.topic) ?? { name: tp.topic, partitions: [] };
      topics.set(tp.topic, t);
      t.partitions.push({ partition: tp.partition, timestamp, currentLeaderEpoch: leader.leaderEpoch });
    }
    const out: TopicPartitionOffset[] = [];
    await Promise.all(
      [...byLeader].map(async ([leaderId, topics]) => {
        const timeoutMs = left();
        const conn = await cluster.connectionTo(leaderId, timeoutMs === undefined ? {} : { timeoutMs });
        const res = await conn.request('ListOffsets', { topics: [...topics.values()] }, { timeoutMs: left() });
        for (const t of res.topics) {
          for (const p of t.partitions) {
            const err = errorOf(p.error, { topic: t.name, partition: p.partition });
            if (err) throw err;
            out.push({ topic: t.name, partition: p.partition, offset: p.offset });
          }
        }
      }),
    );
    if (out.length !== partitions.length) throw new EdgeqError('UNKNOWN', 'ListOffsets answer lacks partitions', { retriable: true });
    return out;
  }, {
    clock: cluster.clock,
    ...options.retry,
    ...(options.timeoutMs === undefined ? {} : { retryTimeMsMax: Math.min(options.timeoutMs, options.retry?.retryTimeMsMax ?? Infinity) }),
    onRetry: (err) => {
      if (isStaleMetadataError(err)) cluster.markStale(err);
    },
    // A partition missing from stale metadata may exist after a refresh: retry it once or twice.
    isRetriable: (e) => e.retriable || e.code === 'UNKNOWN_TOPIC_OR_PARTITION',
  });
}
