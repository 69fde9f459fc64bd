/**
 * `resumeFrom: '<region>'`: where a group that moved here from another region starts a partition
 * it has never committed in this region. The region's exchange leader keeps, for every group the
 * old region published, the translated position as commits of the internal group
 * `__geo.<region>.<group>` (docs/geo.md); this reads them with OffsetFetch.
 */
import { errorOf } from '../protocol/index.ts';
import type { Cluster } from './cluster.ts';
import type { TopicPartition } from './group-member.ts';
import { retry, type RetryOptions } from './retry.ts';

/** The internal group that holds `group`'s position translated from `region`. */
export function geoGroupId(region: string, group: string): string {
  return `__geo.${region}.${group}`;
}

/** Prefix of every translated group (never published again as a group of its own). */
export const GEO_GROUP_PREFIX = '__geo.';

/** Committed offset and metadata per `topic\u0000partition` of another group (only partitions with a commit). */
export async function fetchCommitsOf(cluster: Cluster, groupId: string, partitions: readonly TopicPartition[], retryOptions: RetryOptions = {}): Promise<Map<string, { offset: number; metadata: string }>> {
  const byTopic = new Map<string, number[]>();
  for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  const res = await retry(
    async () => {
      const conn = await cluster.coordinatorFor(groupId);
      const r = await conn.request('OffsetFetch', { groupId, topics: [...byTopic].map(([name, ps]) => ({ name, partitions: ps })) });
      const err = errorOf(r.error, { groupId });
      if (err) {
        if (err.code === 'COORDINATOR_NOT_AVAILABLE' || err.code === 'CONNECTION_CLOSED') cluster.invalidateCoordinator(groupId);
        throw err;
      }
      return r;
    },
    { ...retryOptions, clock: cluster.clock },
  );
  const out = new Map<string, { offset: number; metadata: string }>();
  for (const t of res.topics) {
    for (const p of t.partitions) {
      if ((!p.error || p.error.code === 0) && p.offset >= 0) out.set(`${t.name}\u0000${p.partition}`, { offset: p.offset, metadata: p.metadata ?? '' });
    }
  }
  return out;
}
