/**
 * Kafka's RoundRobinAssignor: every subscribed topic-partition, sorted by topic then partition,
 * is dealt in turn to the members sorted by id. A member not subscribed to the partition's topic
 * is skipped (the turn passes to the next one that is). When all members subscribe to the same
 * topics, partition counts differ by at most one.
 */
import type { TopicPartitions } from '../../protocol/index.ts';
import { normaliseInput, toAssignment, type Assignor, type AssignorMember } from './assignor.ts';

/** The `roundrobin` assignor. */
export const roundRobinAssignor: Assignor = {
  name: 'roundrobin',
  assign(members: readonly AssignorMember[], partitionsPerTopic: ReadonlyMap<string, number>): Map<string, TopicPartitions[]> {
    const input = normaliseInput(members, partitionsPerTopic);
    const owned = new Map<string, Map<string, number[]>>();
    for (const m of input.members) owned.set(m.memberId, new Map());
    const n = input.members.length;
    let next = 0;
    for (const { topic, partitions } of input.topics) {
      for (let p = 0; p < partitions; p++) {
        // A subscriber exists (the topic came from some member's subscription), so this loop
        // ends within n steps.
        while (!input.members[next % n]!.topics.has(topic)) next++;
        const m = input.members[next % n]!;
        next++;
        const byTopic = owned.get(m.memberId)!;
        const list = byTopic.get(topic);
        if (list) list.push(p);
        else byTopic.set(topic, [p]);
      }
    }
    return toAssignment(input.members, owned);
  },
};
