// Proves the probe order visits every eligible member exactly once per round, in an order that
// changes between rounds, skips ineligible ones, and takes members added and removed mid-round.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/core/index.ts';
import { ProbeOrder } from './probe-order.ts';

describe('ProbeOrder', () => {
  it('is round-robin over a reshuffled list', () => {
    const o = new ProbeOrder(seededRandom(1));
    const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
    for (const id of ids) o.add(id);
    const rounds: string[][] = [];
    for (let r = 0; r < 3; r++) rounds.push(ids.map(() => o.next(() => true)!));
    for (const round of rounds) expect([...round].sort()).toEqual([...ids].sort());
    expect(rounds[1]).not.toEqual(rounds[2]);
  });

  it('skips ineligible members and returns null when none is', () => {
    const o = new ProbeOrder(seededRandom(2));
    for (const id of ['a', 'b', 'c']) o.add(id);
    const seen = new Set([o.next((id) => id !== 'b'), o.next((id) => id !== 'b'), o.next((id) => id !== 'b')]);
    expect(seen.has('b')).toBe(false);
    expect(o.next(() => false)).toBeNull();
  });

  it('takes additions and removals', () => {
    const o = new ProbeOrder(seededRandom(3));
    o.add('a');
    o.add('a');
    expect(o.size).toBe(1);
    o.add('b');
    o.remove('a');
    o.remove('zz');
    expect(o.next(() => true)).toBe('b');
    expect(o.next(() => true)).toBe('b');
  });
});
