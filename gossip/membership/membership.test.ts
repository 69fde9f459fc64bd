// Proves the member table's rules: incarnations order claims (newer alive overrides, older news
// is ignored), claims about oneself are refuted above the claim (and old ones answered with its
// alive), left is final and never refuted
// by others, a suspicion runs out into dead unless refuted, and a suspicion merged from a
// push-pull keeps its accuser, so it is not counted as an independent confirmation.
import { describe, expect, it } from 'vitest';
import { FakeClock, seededRandom } from '../../src/core/index.ts';
import type { Update } from '../wire/messages.ts';
import { Awareness } from './awareness.ts';
import { Membership, type MembershipConfig } from './membership.ts';

const CONFIG: MembershipConfig = { suspicionMult: 3, suspicionMaxTimeoutMult: 6, probeIntervalMs: 500, lifeguard: true, deadRetainMs: 60_000, membersMax: 16 };

function table(config: Partial<MembershipConfig> = {}) {
  const clock = new FakeClock();
  const broadcasts: Update[] = [];
  const events: string[] = [];
  const awareness = new Awareness(8);
  const m = new Membership({
    self: { id: 'a', region: 'r', address: 'h:1', tags: {} },
    clock,
    random: seededRandom(1),
    awareness,
    config: { ...CONFIG, ...config },
    hooks: {
      broadcast: (_name, u) => void broadcasts.push(u),
      changed: (r, prev) => void events.push(`${r.id}:${prev?.state ?? 'new'}->${r.state}@${r.incarnation}`),
      suspected: (r, from, source) => void events.push(`suspected ${r.id} by ${from} (${source})`),
      refuted: (inc) => void events.push(`refuted ${inc}`),
      died: (r, local) => void events.push(`died ${r.id} local=${local}`),
      full: (id) => void events.push(`full ${id}`),
    },
  });
  for (const id of ['b', 'c', 'd', 'e']) m.onAlive({ kind: 'alive', member: id, region: 'r', incarnation: 1, address: `h:${id}`, tags: {} });
  events.length = 0;
  broadcasts.length = 0;
  return { clock, m, events, broadcasts, awareness };
}

describe('Membership', () => {
  it('orders claims by incarnation', () => {
    const { m } = table();
    m.onSuspect({ kind: 'suspect', member: 'b', incarnation: 0, from: 'c' });
    expect(m.get('b')!.state).toBe('alive');
    m.onSuspect({ kind: 'suspect', member: 'b', incarnation: 1, from: 'c' });
    expect(m.get('b')!.state).toBe('suspect');
    m.onAlive({ kind: 'alive', member: 'b', region: 'r', incarnation: 1, address: 'h:b', tags: {} });
    expect(m.get('b')!.state).toBe('suspect');
    m.onAlive({ kind: 'alive', member: 'b', region: 'r', incarnation: 2, address: 'h:b2', tags: { x: 'y' } });
    expect(m.get('b')).toMatchObject({ state: 'alive', incarnation: 2, address: 'h:b2', tags: { x: 'y' } });
    m.onDead({ kind: 'dead', member: 'b', incarnation: 1, from: 'c' });
    expect(m.get('b')!.state).toBe('alive');
    m.onDead({ kind: 'dead', member: 'b', incarnation: 2, from: 'c' });
    expect(m.get('b')!.state).toBe('dead');
    m.onAlive({ kind: 'alive', member: 'b', region: 'r', incarnation: 2, address: 'h:b', tags: {} });
    expect(m.get('b')!.state).toBe('dead');
    m.onAlive({ kind: 'alive', member: 'b', region: 'r', incarnation: 3, address: 'h:b', tags: {} });
    expect(m.get('b')!.state).toBe('alive');
  });

  it('refutes any claim about itself above the claim, and raises its health score', () => {
    const { m, events, broadcasts, awareness } = table();
    m.onSuspect({ kind: 'suspect', member: 'a', incarnation: 0, from: 'b' });
    expect(m.self().incarnation).toBe(1);
    m.onDead({ kind: 'dead', member: 'a', incarnation: 5, from: 'b' });
    expect(m.self().incarnation).toBe(6);
    m.onAlive({ kind: 'alive', member: 'a', region: 'r', incarnation: 9, address: 'h:1', tags: {} });
    expect(m.self().incarnation).toBe(10);
    m.onAlive({ kind: 'alive', member: 'a', region: 'r', incarnation: 10, address: 'h:1', tags: {} });
    expect(m.self().incarnation).toBe(10);
    m.onSuspect({ kind: 'suspect', member: 'a', incarnation: 3, from: 'b' });
    expect(m.self().incarnation).toBe(10);
    expect(events.filter((e) => e.startsWith('refuted'))).toEqual(['refuted 1', 'refuted 6', 'refuted 10']);
    expect(broadcasts.at(-1)).toMatchObject({ kind: 'alive', member: 'a', incarnation: 10 });
    expect(awareness.health).toBe(3);
  });

  it('answers an old claim about itself by gossiping its alive again, without raising its incarnation', () => {
    const { m, broadcasts, events } = table();
    m.onSuspect({ kind: 'suspect', member: 'a', incarnation: 4, from: 'b' });
    broadcasts.length = 0;
    m.onSuspect({ kind: 'suspect', member: 'a', incarnation: 2, from: 'c' });
    m.onDead({ kind: 'dead', member: 'a', incarnation: 1, from: 'c' });
    expect(m.self().incarnation).toBe(5);
    expect(broadcasts).toEqual([
      { kind: 'alive', member: 'a', region: 'r', incarnation: 5, address: 'h:1', tags: {} },
      { kind: 'alive', member: 'a', region: 'r', incarnation: 5, address: 'h:1', tags: {} },
    ]);
    expect(events.filter((e) => e.startsWith('refuted'))).toEqual(['refuted 5']);
  });

  it('answers an old claim about another member by gossiping the newer alive it holds', () => {
    const { m, broadcasts } = table();
    m.onAlive({ kind: 'alive', member: 'b', region: 'r', incarnation: 3, address: 'h:b', tags: {} });
    broadcasts.length = 0;
    m.onSuspect({ kind: 'suspect', member: 'b', incarnation: 2, from: 'c' });
    m.onDead({ kind: 'dead', member: 'b', incarnation: 1, from: 'c' });
    expect(m.get('b')).toMatchObject({ state: 'alive', incarnation: 3 });
    expect(broadcasts).toEqual([
      { kind: 'alive', member: 'b', region: 'r', incarnation: 3, address: 'h:b', tags: {} },
      { kind: 'alive', member: 'b', region: 'r', incarnation: 3, address: 'h:b', tags: {} },
    ]);
  });

  it('leaves for good: left is not refuted by it, nor turned dead by others', () => {
    const { m } = table();
    m.onLeft({ kind: 'left', member: 'c', incarnation: 1 });
    expect(m.get('c')!.state).toBe('left');
    m.onDead({ kind: 'dead', member: 'c', incarnation: 1, from: 'b' });
    m.onSuspect({ kind: 'suspect', member: 'c', incarnation: 1, from: 'b' });
    expect(m.get('c')!.state).toBe('left');
    m.onDead({ kind: 'dead', member: 'd', incarnation: 1, from: 'b' });
    m.onLeft({ kind: 'left', member: 'd', incarnation: 1 });
    expect(m.get('d')!.state).toBe('left');
    const u = m.leave();
    expect(u).toEqual({ kind: 'left', member: 'a', incarnation: 0 });
    m.onSuspect({ kind: 'suspect', member: 'a', incarnation: 0, from: 'b' });
    expect(m.self().incarnation).toBe(0);
  });

  it('turns an unrefuted suspicion into dead after the timeout (Lifeguard: max without confirmation, min with k)', () => {
    const { clock, m, events } = table();
    // 5 members: k = suspicionMult − 2 = 1; min = 3 × 1 × 500 = 1500 ms; max = 6 × 1500.
    m.onSuspect({ kind: 'suspect', member: 'b', incarnation: 1, from: 'c' });
    clock.advance(8_999);
    expect(m.get('b')!.state).toBe('suspect');
    clock.advance(1);
    expect(m.get('b')!.state).toBe('dead');
    m.onSuspect({ kind: 'suspect', member: 'd', incarnation: 1, from: 'c' });
    m.suspectLocally('d', 1);
    clock.advance(1_500);
    expect(m.get('d')!.state).toBe('dead');
    expect(events).toContain('died d local=true');
  });

  it('keeps a merged suspicion’s accuser: a push-pull is not a confirmation', () => {
    const { clock, m } = table();
    m.onSuspect({ kind: 'suspect', member: 'b', incarnation: 1, from: 'c' });
    const snapshot = (accuser: string) => [{ member: 'b', region: 'r', incarnation: 1, address: 'h:b', tags: {}, state: 'suspect' as const, accuser }];
    m.merge(snapshot('c'));
    m.merge(snapshot('c'));
    expect(m.suspicionOf('b')!.confirmations).toBe(0);
    clock.advance(1_500);
    expect(m.get('b')!.state).toBe('suspect');
    // Another member's own suspicion is one.
    m.merge(snapshot('d'));
    expect(m.suspicionOf('b')!.confirmations).toBe(1);
    expect(m.snapshot().find((s) => s.member === 'b')).toMatchObject({ state: 'suspect', accuser: 'c' });
  });

  it('refuses new members past membersMax after reaping what it can', () => {
    const { clock, m, events } = table({ membersMax: 6, deadRetainMs: 1_000 });
    m.onAlive({ kind: 'alive', member: 'f', region: 'r', incarnation: 1, address: 'h:f', tags: {} });
    m.onAlive({ kind: 'alive', member: 'g', region: 'r', incarnation: 1, address: 'h:g', tags: {} });
    expect(events).toContain('full g');
    m.onDead({ kind: 'dead', member: 'b', incarnation: 1, from: 'c' });
    clock.advance(1_000);
    m.onAlive({ kind: 'alive', member: 'g', region: 'r', incarnation: 1, address: 'h:g', tags: {} });
    expect(m.get('g')?.state).toBe('alive');
    expect(m.get('b')).toBeUndefined();
    expect(m.knownCount).toBe(6);
  });
});
