// Proves the range assignor gives the exact contiguous ranges Kafka's RangeAssignor gives.
import { describe, expect, it } from 'vitest';
import { rangeAssignor } from './range.ts';

describe('rangeAssignor', () => {
  it('hands the first members one extra partition, topic by topic', () => {
    const out = rangeAssignor.assign(
      [
        { memberId: 'c2', topics: ['t0', 't1'] },
        { memberId: 'c0', topics: ['t0', 't1'] },
        { memberId: 'c1', topics: ['t1', 't0'] },
      ],
      new Map([['t0', 7], ['t1', 2]]),
    );
    expect(Object.fromEntries(out)).toEqual({
      c0: [{ topic: 't0', partitions: [0, 1, 2] }, { topic: 't1', partitions: [0] }],
      c1: [{ topic: 't0', partitions: [3, 4] }, { topic: 't1', partitions: [1] }],
      c2: [{ topic: 't0', partitions: [5, 6] }],
    });
  });

  it('splits each topic only among its own subscribers', () => {
    const out = rangeAssignor.assign(
      [
        { memberId: 'a', topics: ['x'] },
        { memberId: 'b', topics: ['x', 'y'] },
      ],
      new Map([['x', 3], ['y', 3]]),
    );
    expect(Object.fromEntries(out)).toEqual({
      a: [{ topic: 'x', partitions: [0, 1] }],
      b: [{ topic: 'x', partitions: [2] }, { topic: 'y', partitions: [0, 1, 2] }],
    });
  });
});
