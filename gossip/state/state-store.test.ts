// Proves the versioned state: JSON and bytes values, last writer wins whatever the merge order,
// tombstones that win like writes and are purged after their bound (and an expired tombstone
// still removing an older value), every bound refusing a local write with a typed error and
// changing nothing, and learned entries over a bound or from the future dropped.
import { describe, expect, it } from 'vitest';
import { FakeClock, isEdgeqError, seededRandom } from '../../src/core/index.ts';
import type { StateUpdate } from '../wire/messages.ts';
import { HybridClock } from './hlc.ts';
import { StateStore, type StateLimits } from './state-store.ts';

const LIMITS: StateLimits = { stateEntriesMax: 4, stateValueBytesMax: 64, stateBytesMax: 200, tombstoneRetainMs: 60_000, futureDriftMsMax: 10_000 };

function store(clock = new FakeClock(), limits: Partial<StateLimits> = {}): StateStore {
  return new StateStore({ ...LIMITS, ...limits }, clock, new HybridClock(clock));
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return isEdgeqError(err) ? err.code : 'not an EdgeqError';
  }
  return 'no error';
}

describe('StateStore', () => {
  it('holds JSON and bytes values with their version and writer', () => {
    const clock = new FakeClock();
    const s = store(clock);
    const { update, entry } = s.set('region/us-east', { ok: true, n: 3 }, 'a');
    expect(update).toMatchObject({ kind: 'state', key: 'region/us-east', member: 'a', deleted: false, json: true });
    expect(entry).toEqual({ key: 'region/us-east', value: { ok: true, n: 3 }, version: clock.nowMs() * 1000, member: 'a', updatedAtMs: clock.nowMs(), deleted: false });
    expect(Object.isFrozen(entry.value)).toBe(true);
    s.set('blob', new Uint8Array([1, 2, 3]), 'a');
    const blob = s.view('blob')!.value as Buffer;
    expect([...blob]).toEqual([1, 2, 3]);
    blob[0] = 9;
    expect([...(s.view('blob')!.value as Buffer)]).toEqual([1, 2, 3]);
  });

  it('converges to the same entries whatever order updates arrive in', () => {
    const source = new FakeClock();
    const updates: StateUpdate[] = [];
    const writers = [store(source), store(source), store(source)];
    for (let i = 0; i < 30; i++) {
      const w = writers[i % 3]!;
      const key = `k${i % 4}`;
      const r = i % 7 === 0 ? w.delete(key, `w${i % 3}`) : w.set(key, { i }, `w${i % 3}`);
      updates.push(r.update);
      if (i % 5 === 0) source.advance(1);
    }
    const random = seededRandom(5);
    const results = Array.from({ length: 5 }, () => {
      const s = store(source, { stateEntriesMax: 100, stateBytesMax: 10_000 });
      const shuffled = [...updates].sort(() => random() - 0.5);
      for (const u of [...shuffled, ...shuffled]) s.merge(u);
      return JSON.stringify(s.all().sort((a, b) => a.key.localeCompare(b.key)));
    });
    expect(new Set(results).size).toBe(1);
  });

  it('breaks equal versions by the greater member id', () => {
    const s = store();
    const base = { kind: 'state' as const, key: 'k', version: 5, deleted: false, json: true };
    expect(s.merge({ ...base, member: 'a', value: Buffer.from('1') })).toBe('applied');
    expect(s.merge({ ...base, member: 'b', value: Buffer.from('2') })).toBe('applied');
    expect(s.merge({ ...base, member: 'a', value: Buffer.from('3') })).toBe('stale');
    expect(s.view('k')!.value).toBe(2);
  });

  it('keeps a tombstone until its bound, then purges it', () => {
    const clock = new FakeClock();
    const s = store(clock);
    s.set('k', 1, 'a');
    clock.advance(1);
    const { entry } = s.delete('k', 'a');
    expect(entry).toMatchObject({ key: 'k', value: undefined, deleted: true });
    // An older write arriving later loses to the tombstone.
    expect(s.merge({ kind: 'state', key: 'k', version: entry.version - 1, member: 'z', deleted: false, json: true, value: Buffer.from('9') })).toBe('stale');
    // Written at +1 ms: purged at +1 + 60 000.
    clock.advance(59_999);
    expect(s.expire()).toBe(0);
    clock.advance(1);
    expect(s.expire()).toBe(1);
    expect(s.view('k')).toBeUndefined();
    expect(s.bytes).toBe(0);
  });

  it('lets an already expired tombstone remove an older value, and not keep itself', () => {
    const clock = new FakeClock();
    const s = store(clock);
    s.merge({ kind: 'state', key: 'k', version: 1000, member: 'a', deleted: false, json: true, value: Buffer.from('1') });
    expect(s.merge({ kind: 'state', key: 'k', version: 2000, member: 'a', deleted: true, json: false, value: Buffer.alloc(0) })).toBe('applied');
    expect(s.view('k')).toBeUndefined();
    expect(s.merge({ kind: 'state', key: 'x', version: 2000, member: 'a', deleted: true, json: false, value: Buffer.alloc(0) })).toBe('expired');
    expect(s.size).toBe(0);
  });

  it('refuses bad local writes with typed errors and changes nothing', () => {
    const s = store();
    s.set('a', 1, 'm');
    const before = JSON.stringify(s.all());
    expect(code(() => s.set('has space', 1, 'm'))).toBe('INVALID_ARGUMENT');
    expect(code(() => s.set('', 1, 'm'))).toBe('INVALID_ARGUMENT');
    expect(code(() => s.set('x'.repeat(129), 1, 'm'))).toBe('INVALID_ARGUMENT');
    expect(code(() => s.set('k', undefined, 'm'))).toBe('INVALID_ARGUMENT');
    expect(code(() => s.set('k', 10n, 'm'))).toBe('INVALID_ARGUMENT');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(code(() => s.set('k', circular, 'm'))).toBe('INVALID_ARGUMENT');
    expect(code(() => s.set('k', 'x'.repeat(63), 'm'))).toBe('MESSAGE_TOO_LARGE');
    expect(JSON.stringify(s.all())).toBe(before);
    s.set('b', 1, 'm');
    s.set('c', 1, 'm');
    s.set('d', 1, 'm');
    expect(code(() => s.set('e', 1, 'm'))).toBe('STORAGE_FULL');
    expect(s.size).toBe(4);
    s.set('a', 2, 'm');
    expect(s.view('a')!.value).toBe(2);
  });

  it('refuses writes past the total bytes bound', () => {
    const s = store(new FakeClock(), { stateEntriesMax: 100, stateBytesMax: 100 });
    s.set('a', 'x'.repeat(40), 'm');
    s.set('b', 'x'.repeat(40), 'm');
    expect(code(() => s.set('c', 'x'.repeat(40), 'm'))).toBe('STORAGE_FULL');
    expect(s.bytes).toBe(2 * (1 + 42));
  });

  it('drops learned entries that are full, from the future or not JSON', () => {
    const clock = new FakeClock();
    const s = store(clock, { stateEntriesMax: 1 });
    const now = clock.nowMs() * 1000;
    const u = (key: string, version: number, value = '1'): StateUpdate => ({ kind: 'state', key, version, member: 'a', deleted: false, json: true, value: Buffer.from(value) });
    expect(s.merge(u('a', now))).toBe('applied');
    expect(s.merge(u('b', now))).toBe('full');
    expect(s.merge(u('a', now + 10_001_000))).toBe('future');
    expect(s.merge(u('a', now + 1, '{not json'))).toBe('malformed');
    expect(s.view('a')!.version).toBe(now);
  });
});
