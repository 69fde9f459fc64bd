/**
 * The partition assignor interface. Assignors are pure functions of (members, partition counts):
 * in the classic protocol the group leader runs one client-side, so any two leaders given the
 * same input must produce the same assignment, whatever order the input came in.
 */
import { EdgeqError } from '../../core/index.ts';
import type { TopicPartitions } from '../../protocol/index.ts';

/** One member as the assignor sees it: its id and the topics it subscribes to. */
export interface AssignorMember {
  memberId: string;
  topics: readonly string[];
}

/** A partition assignment strategy, named as it is announced in JoinGroup protocols. */
export interface Assignor {
  /** The protocol name members announce (e.g. `range`). */
  readonly name: string;
  /**
   * Assigns every partition of every subscribed topic to one member subscribed to it. Returns an
   * entry for every member (an empty list when it gets nothing), topics sorted by name and
   * partitions ascending. Topics missing from `partitionsPerTopic` are skipped.
   */
  assign(
    members: readonly AssignorMember[],
    partitionsPerTopic: ReadonlyMap<string, number>,
  ): Map<string, TopicPartitions[]>;
}

/** Compares strings by code unit, independent of locale (every leader must sort alike). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A validated, sorted view of the input shared by the assignors. */
export interface NormalisedInput {
  /** Members sorted by id, each with its topics as a set. */
  members: { memberId: string; topics: ReadonlySet<string> }[];
  /** Subscribed topics that exist in `partitionsPerTopic`, sorted, with their partition counts. */
  topics: { topic: string; partitions: number }[];
}

/** Checks the input (unique member ids, sane partition counts) and sorts it. */
export function normaliseInput(
  members: readonly AssignorMember[],
  partitionsPerTopic: ReadonlyMap<string, number>,
): NormalisedInput {
  const seen = new Set<string>();
  const subscribed = new Set<string>();
  const sorted = members
    .map((m) => {
      if (seen.has(m.memberId)) {
        throw new EdgeqError('INVALID_ARGUMENT', `member ${m.memberId} appears twice`, { details: { memberId: m.memberId } });
      }
      seen.add(m.memberId);
      for (const t of m.topics) subscribed.add(t);
      return { memberId: m.memberId, topics: new Set(m.topics) };
    })
    .sort((a, b) => compareIds(a.memberId, b.memberId));
  const topics: { topic: string; partitions: number }[] = [];
  for (const topic of [...subscribed].sort(compareIds)) {
    const partitions = partitionsPerTopic.get(topic);
    if (partitions === undefined) continue;
    if (!Number.isSafeInteger(partitions) || partitions < 0) {
      throw new EdgeqError('INVALID_ARGUMENT', `topic ${topic} has a bad partition count ${partitions}`, { details: { topic } });
    }
    topics.push({ topic, partitions });
  }
  return { members: sorted, topics };
}

/** Turns per-member topic → partitions maps into the sorted output shape. */
export function toAssignment(
  members: readonly { memberId: string }[],
  owned: ReadonlyMap<string, Map<string, number[]>>,
): Map<string, TopicPartitions[]> {
  const out = new Map<string, TopicPartitions[]>();
  for (const m of members) {
    const byTopic = owned.get(m.memberId) ?? new Map<string, number[]>();
    const list = [...byTopic.entries()]
      .filter(([, ps]) => ps.length > 0)
      .sort(([a], [b]) => compareIds(a, b))
      .map(([topic, ps]) => ({ topic, partitions: [...ps].sort((x, y) => x - y) }));
    out.set(m.memberId, list);
  }
  return out;
}
