// Proves the round-robin assignor deals partitions in Kafka's RoundRobinAssignor order.
import { describe, expect, it } from 'vitest';
import { roundRobinAssignor } from './round-robin.ts';

describe('roundRobinAssignor', () => {
  it('deals sorted topic-partitions across sorted members', () => {
    const out = roundRobinAssignor.assign(
      [
        { memberId: 'c1', topics: ['t1', 't0'] },
        { memberId: 'c0', topics: ['t0', 't1'] },
      ],
      new Map([['t1', 2], ['t0', 3]]),
    );
    // Order: t0-0 c0, t0-1 c1, t0-2 c0, t1-0 c1, t1-1 c0.
    expect(Object.fromEntries(out)).toEqual({
      c0: [{ topic: 't0', partitions: [0, 2] }, { topic: 't1', partitions: [1] }],
      c1: [{ topic: 't0', partitions: [1] }, { topic: 't1', partitions: [0] }],
    });
  });

  it('skips members not subscribed to the topic', () => {
    const out = roundRobinAssignor.assign(
      [
        { memberId: 'a', topics: ['t0'] },
        { memberId: 'b', topics: ['t0', 't1'] },
        { memberId: 'c', topics: ['t0', 't1'] },
      ],
      new Map([['t0', 1], ['t1', 3]]),
    );
    // t0-0 a; t1-0 b (a skipped); t1-1 c; t1-2 b (a skipped).
    expect(Object.fromEntries(out)).toEqual({
      a: [{ topic: 't0', partitions: [0] }],
      b: [{ topic: 't1', partitions: [0, 2] }],
      c: [{ topic: 't1', partitions: [1] }],
    });
  });
});
