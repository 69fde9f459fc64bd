// Proves the piggyback queue: memberlist's retransmit limit, least-sent and newest first, an update
// replacing the queued one of the same name, the room in bytes and the count respected, and the
// bound evicting the most-sent.
import { describe, expect, it } from 'vitest';
import { BroadcastQueue, retransmitLimit } from './broadcast-queue.ts';

const b = (s: string) => Buffer.from(s);

describe('BroadcastQueue', () => {
  it('limits retransmits to mult × ceil(log10(n + 1))', () => {
    expect(retransmitLimit(4, 3)).toBe(4);
    expect(retransmitLimit(4, 9)).toBe(4);
    expect(retransmitLimit(4, 10)).toBe(8);
    expect(retransmitLimit(4, 200)).toBe(12);
    const q = new BroadcastQueue({ retransmitMult: 2, queueMax: 10 });
    q.enqueue('x', b('x'));
    const sent = Array.from({ length: 5 }, () => q.take(100, 3, 10).length);
    expect(sent).toEqual([1, 1, 0, 0, 0]);
    expect(q.size).toBe(0);
  });

  it('sends the least-sent first, newest first among equals', () => {
    const q = new BroadcastQueue({ retransmitMult: 4, queueMax: 10 });
    q.enqueue('a', b('a'));
    q.enqueue('b', b('b'));
    expect(q.take(1, 3, 10).map(String)).toEqual(['b']);
    q.enqueue('c', b('c'));
    expect(q.take(2, 3, 10).map(String)).toEqual(['c', 'a']);
    expect(q.take(3, 3, 10).map(String)).toEqual(['c', 'b', 'a']);
  });

  it('replaces the queued update of the same name, with a fresh count', () => {
    const q = new BroadcastQueue({ retransmitMult: 1, queueMax: 10 });
    q.enqueue('m', b('old'));
    q.enqueue('m', b('new'));
    expect(q.size).toBe(1);
    expect(q.take(100, 3, 10).map(String)).toEqual(['new']);
    expect(q.size).toBe(0);
  });

  it('fits the room and the count', () => {
    const q = new BroadcastQueue({ retransmitMult: 4, queueMax: 10 });
    q.enqueue('big', Buffer.alloc(50));
    q.enqueue('s1', b('1'));
    q.enqueue('s2', b('2'));
    expect(q.take(10, 3, 10).map((x) => x.length)).toEqual([1, 1]);
    expect(q.take(100, 3, 1).length).toBe(1);
  });

  it('evicts the most-sent, oldest update past its bound', () => {
    const q = new BroadcastQueue({ retransmitMult: 10, queueMax: 2 });
    q.enqueue('a', b('a'));
    q.take(100, 3, 10);
    q.enqueue('b', b('b'));
    q.enqueue('c', b('c'));
    expect(q.size).toBe(2);
    expect(q.dropped).toBe(1);
    expect(q.has('a')).toBe(false);
    expect(q.take(100, 3, 10).map(String).sort()).toEqual(['b', 'c']);
  });
});
