import { describe, expect, it } from 'vitest';
import { jainIndex, maxMinFairShares } from './fair-share.ts';

describe('maxMinFairShares', () => {
  it('a tenant asking 10x its share gets its share, the others what they ask', () => {
    const s = maxMinFairShares(300, [
      { key: 'noisy', demand: 1000, weight: 1 },
      { key: 'a', demand: 100, weight: 1 },
      { key: 'b', demand: 50, weight: 1 },
    ]);
    expect(s.get('a')).toBe(100);
    expect(s.get('b')).toBe(50);
    expect(s.get('noisy')).toBeCloseTo(150, 9);
  });

  it('splits by weight when everyone wants more, and never gives more than asked in all', () => {
    const s = maxMinFairShares(100, [
      { key: 'x', demand: 1000, weight: 3 },
      { key: 'y', demand: 1000, weight: 1 },
    ]);
    expect(s.get('x')).toBeCloseTo(75, 9);
    expect(s.get('y')).toBeCloseTo(25, 9);
    const under = maxMinFairShares(1000, [{ key: 'x', demand: 10, weight: 1 }, { key: 'y', demand: 0, weight: 1 }]);
    expect(under.get('x')).toBe(10);
    expect(under.get('y')).toBe(0);
  });

  it('Jain index: 1 when equal by weight, 1/n when one takes all', () => {
    expect(jainIndex([5, 5, 5])).toBe(1);
    expect(jainIndex([9, 0, 0])).toBeCloseTo(1 / 3, 9);
    const shares = maxMinFairShares(90, [{ key: 'a', demand: 900, weight: 1 }, { key: 'b', demand: 900, weight: 1 }, { key: 'c', demand: 900, weight: 1 }]);
    expect(jainIndex([...shares.values()])).toBeCloseTo(1, 9);
  });
});
