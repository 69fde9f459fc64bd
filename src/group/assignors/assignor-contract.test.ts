// Proves every built-in assignor honours the Assignor contract: full, exclusive coverage of
// subscribed partitions, subscriptions respected, order-independent output and its balance promise.
import { describe, expect, it } from 'vitest';
import type { TopicPartitions } from '../../protocol/index.ts';
import { seededRandom } from '../../core/index.ts';
import { randInt, testSeed } from '../../testing/index.ts';
import { ASSIGNORS, assignorByName, rangeAssignor, roundRobinAssignor, type Assignor, type AssignorMember } from './index.ts';

interface Case {
  members: AssignorMember[];
  partitionsPerTopic: Map<string, number>;
}

/** The balance each assignor promises, checked on top of the shared contract. */
const BALANCE: Record<string, (c: Case, out: Map<string, TopicPartitions[]>) => void> = {
  // Per topic, the subscribers' counts differ by at most one.
  range(c, out) {
    for (const [topic] of c.partitionsPerTopic) {
      const counts = c.members
        .filter((m) => m.topics.includes(topic))
        .map((m) => out.get(m.memberId)!.find((tp) => tp.topic === topic)?.partitions.length ?? 0);
      if (counts.length > 0) expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
  },
  // When everyone subscribes to the same topics, total counts differ by at most one.
  roundrobin(c, out) {
    const key = (m: AssignorMember): string => [...new Set(m.topics)].sort().join(',');
    if (new Set(c.members.map(key)).size !== 1) return;
    const counts = c.members.map((m) => out.get(m.memberId)!.reduce((n, tp) => n + tp.partitions.length, 0));
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  },
};

function shuffle<T>(rand: () => number, xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = randInt(rand, 0, i);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

function randomCase(rand: () => number): Case {
  const topicCount = randInt(rand, 1, 5);
  const partitionsPerTopic = new Map<string, number>();
  for (let t = 0; t < topicCount; t++) partitionsPerTopic.set(`topic-${t}`, randInt(rand, 0, 12));
  const topics = [...partitionsPerTopic.keys(), 'missing-topic'];
  const same = rand() < 0.4;
  const shared = topics.filter(() => rand() < 0.6);
  const members: AssignorMember[] = [];
  for (let m = randInt(rand, 1, 7); m > 0; m--) {
    const mine = same ? shared : topics.filter(() => rand() < 0.5);
    members.push({ memberId: `member-${randInt(rand, 0, 1e6)}-${m}`, topics: mine });
  }
  return { members, partitionsPerTopic };
}

function checkContract(assignor: Assignor, c: Case, out: Map<string, TopicPartitions[]>): void {
  expect([...out.keys()].sort()).toEqual(c.members.map((m) => m.memberId).sort());
  const owner = new Map<string, string>();
  for (const m of c.members) {
    for (const tp of out.get(m.memberId)!) {
      expect(m.topics, `${m.memberId} got ${tp.topic} it does not subscribe to`).toContain(tp.topic);
      for (const p of tp.partitions) {
        const key = `${tp.topic}/${p}`;
        expect(owner.has(key), `${key} assigned twice`).toBe(false);
        owner.set(key, m.memberId);
      }
    }
  }
  for (const [topic, n] of c.partitionsPerTopic) {
    const subscribed = c.members.some((m) => m.topics.includes(topic));
    for (let p = 0; p < n; p++) expect(owner.has(`${topic}/${p}`), `${topic}/${p} coverage`).toBe(subscribed);
  }
  expect(owner.size).toBe(
    [...c.partitionsPerTopic].reduce((s, [t, n]) => s + (c.members.some((m) => m.topics.includes(t)) ? n : 0), 0),
  );
  BALANCE[assignor.name]!(c, out);
}

describe.each([...ASSIGNORS.values()])('assignor contract: $name', (assignor) => {
  it('has a balance rule in this contract', () => {
    expect(BALANCE[assignor.name]).toBeDefined();
  });

  it('covers, respects subscriptions, balances and is order-independent on random inputs', () => {
    const seed = testSeed(`assignor-${assignor.name}`);
    const rand = seededRandom(seed);
    for (let i = 0; i < 300; i++) {
      const c = randomCase(rand);
      const out = assignor.assign(c.members, c.partitionsPerTopic);
      checkContract(assignor, c, out);
      const shuffled: Case = {
        members: shuffle(rand, c.members).map((m) => ({ memberId: m.memberId, topics: shuffle(rand, m.topics) })),
        partitionsPerTopic: new Map(shuffle(rand, [...c.partitionsPerTopic])),
      };
      const again = assignor.assign(shuffled.members, shuffled.partitionsPerTopic);
      expect(Object.fromEntries(again)).toEqual(Object.fromEntries(out));
    }
  });

  it('gives every member an empty list when there is nothing to assign', () => {
    const out = assignor.assign([{ memberId: 'a', topics: ['nope'] }, { memberId: 'b', topics: [] }], new Map([['t', 3]]));
    expect(Object.fromEntries(out)).toEqual({ a: [], b: [] });
  });

  it('refuses duplicate member ids and bad partition counts', () => {
    expect(() => assignor.assign([{ memberId: 'a', topics: ['t'] }, { memberId: 'a', topics: ['t'] }], new Map([['t', 1]]))).toThrow(
      /twice/,
    );
    expect(() => assignor.assign([{ memberId: 'a', topics: ['t'] }], new Map([['t', -1]]))).toThrow(/partition count/);
  });
});

describe('assignor registry', () => {
  it('finds the built-ins by name and refuses unknown names with INVALID_ARGUMENT', () => {
    expect(assignorByName('range')).toBe(rangeAssignor);
    expect(assignorByName('roundrobin')).toBe(roundRobinAssignor);
    expect(() => assignorByName('sticky')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
