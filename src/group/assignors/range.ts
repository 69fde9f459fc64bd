/**
 * Kafka's RangeAssignor: topic by topic, the members subscribed to the topic (sorted by id) each
 * take a contiguous range of its partitions; with n partitions and c members the first n % c
 * members take floor(n / c) + 1, the rest floor(n / c). Co-partitioned topics thus land on the
 * same member, at the cost of imbalance across many topics.
 */
import type { TopicPartitions } from '../../protocol/index.ts';
import { normaliseInput, toAssignment, type Assignor, type AssignorMember } from './assignor.ts';

/** The `range` assignor. */
export const rangeAssignor: Assignor = {
  name: 'range',
  assign(members: readonly AssignorMember[], partitionsPerTopic: ReadonlyMap<string, number>): Map<string, TopicPartitions[]> {
    const input = normaliseInput(members, partitionsPerTopic);
    const owned = new Map<string, Map<string, number[]>>();
    for (const m of input.members) owned.set(m.memberId, new Map());
    for (const { topic, partitions } of input.topics) {
      const consumers = input.members.filter((m) => m.topics.has(topic));
      const per = Math.floor(partitions / consumers.length);
      const extra = partitions % consumers.length;
      consumers.forEach((c, i) => {
        const start = i * per + Math.min(i, extra);
        const length = per + (i < extra ? 1 : 0);
        const range = Array.from({ length }, (_, k) => start + k);
        owned.get(c.memberId)!.set(topic, range);
      });
    }
    return toAssignment(input.members, owned);
  },
};
