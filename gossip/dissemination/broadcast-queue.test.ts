// Proves the piggyback queue: memberlist's retransmit limit, least-sent and newest first, an update
// replacing the queued one of the same name, the room in bytes and the count respected, and the
// bound evicting the most-sent.
import { describe, expect, it } from 'vitest';
import { BroadcastQueue, retransmitLimit, TAKE_SKIPS_MAX } from './broadcast-queue.ts';

/** An 8-byte update named by its first letter (real updates are at least 7 bytes). */
const b = (s: string) => Buffer.from(s.padEnd(8, '.'));
const names = (bufs: Buffer[]) => bufs.map((x) => String(x).replace(/\.+$/, ''));

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
    expect(names(q.take(8, 3, 10))).toEqual(['b']);
    q.enqueue('c', b('c'));
    expect(names(q.take(16, 3, 10))).toEqual(['c', 'a']);
    expect(names(q.take(24, 3, 10))).toEqual(['c', 'b', 'a']);
  });

  it('replaces the queued update of the same name, with a fresh count', () => {
    const q = new BroadcastQueue({ retransmitMult: 1, queueMax: 10 });
    q.enqueue('m', b('old'));
    q.enqueue('m', b('new'));
    expect(q.size).toBe(1);
    expect(names(q.take(100, 3, 10))).toEqual(['new']);
    expect(q.size).toBe(0);
  });

  it('fits the room and the count', () => {
    const q = new BroadcastQueue({ retransmitMult: 4, queueMax: 10 });
    q.enqueue('big', Buffer.alloc(50));
    q.enqueue('s1', b('1'));
    q.enqueue('s2', b('2'));
    expect(q.take(20, 3, 10).map((x) => x.length)).toEqual([8, 8]);
    expect(q.take(100, 3, 1).length).toBe(1);
  });

  it('gives up after TAKE_SKIPS_MAX updates that do not fit', () => {
    const q = new BroadcastQueue({ retransmitMult: 4, queueMax: 100 });
    q.enqueue('small', b('s'));
    for (let i = 0; i < TAKE_SKIPS_MAX; i++) q.enqueue(`big${i}`, Buffer.alloc(100));
    expect(q.take(50, 3, 10)).toEqual([]);
    q.enqueue('big-last', Buffer.alloc(100));
    q.remove('big0');
    expect(names(q.take(50, 3, 10))).toEqual([]);
    for (let i = 1; i < TAKE_SKIPS_MAX; i++) q.remove(`big${i}`);
    expect(names(q.take(50, 3, 10))).toEqual(['s']);
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
    expect(names(q.take(100, 3, 10)).sort()).toEqual(['b', 'c']);
  });
});
