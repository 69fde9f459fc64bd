// Proves a running agent's receive path drops bad datagrams, counted by reason, and applies
// nothing of them: a table (another key, another cluster, bad version, MAC-only, oversized, garbage) and a
// seeded fuzz of 100,000 random and mutated datagrams, plus 20,000 sealed random payloads
// that must not break it; afterwards the agent still probes and the mesh still has one view.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/core/index.ts';
import { testSeed } from '../../src/testing/index.ts';
import { SimCluster, SIM_KEY } from '../sim/sim-cluster.ts';
import { MeshCodec } from '../wire/codec.ts';
import { Keyring } from '../wire/keyring.ts';
import { encodeUpdate, type Update } from '../wire/messages.ts';
import { ALL_DROP_REASONS, type DropReason } from './stats.ts';

const LIMITS = { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 };
const good = new MeshCodec({ clusterName: 'sim', keyring: new Keyring([SIM_KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: LIMITS });
const wrongKey = new MeshCodec({ clusterName: 'sim', keyring: new Keyring(['x'.repeat(32)]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: LIMITS });
const macOnly = new MeshCodec({ clusterName: 'sim', keyring: new Keyring([SIM_KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: LIMITS, macOnly: 'send' });
const otherCluster = new MeshCodec({ clusterName: 'other', keyring: new Keyring([SIM_KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: LIMITS });

/** Updates that would change the target's view if they were applied. */
function harmful(c: SimCluster): Update[] {
  const m1 = c.agents[0]!.member('m1')!;
  return [
    { kind: 'alive', member: 'evil', region: 'r', incarnation: 9, address: '203.0.113.9:1', tags: {} },
    { kind: 'suspect', member: 'm1', incarnation: m1.incarnation, from: 'evil' },
    { kind: 'dead', member: 'm2', incarnation: 99, from: 'evil' },
    { kind: 'suspect', member: 'm0', incarnation: 50, from: 'evil' },
    { kind: 'state', key: 'evil/key', version: c.clock.nowMs() * 1000, member: 'evil', deleted: false, json: true, value: Buffer.from('1') },
  ];
}

/** What must not change: every member's state and incarnation in m0's view, and m0's state. */
function fingerprint(c: SimCluster): string {
  const a = c.agents[0]!;
  return JSON.stringify({ members: a.members().map((m) => [m.member, m.state, m.incarnation]), state: a.state(), health: a.health() });
}

function dropsOf(c: SimCluster): Record<DropReason, number> {
  return c.agents[0]!.stats().drops;
}

function delta(before: Record<DropReason, number>, after: Record<DropReason, number>): Partial<Record<DropReason, number>> {
  const d: Partial<Record<DropReason, number>> = {};
  for (const r of ALL_DROP_REASONS) if (after[r] !== before[r]) d[r] = after[r] - before[r];
  return d;
}

describe('bad datagrams into a running agent', () => {
  it('drops each kind with its reason and applies nothing', async () => {
    const c = await SimCluster.create({ members: 3, seed: testSeed('auth-table') });
    const to = c.addresses[0]!;
    const updates = harmful(c).map(encodeUpdate);
    const primary = { type: 'gossip' as const };
    const before = fingerprint(c);
    const drops = dropsOf(c);
    const table: [Buffer, DropReason][] = [
      [wrongKey.encodePacket('m1', primary, updates), 'bad-mac'],
      [otherCluster.encodePacket('m1', primary, updates), 'wrong-cluster'],
      [Buffer.concat([Buffer.from([3]), good.encodePacket('m1', primary, updates).subarray(1)]), 'bad-version'],
      [macOnly.encodePacket('m1', primary, updates), 'mac-only'],
      [Buffer.alloc(1401, 1), 'oversized'],
      [Buffer.from('GET / HTTP/1.1\r\nHost: mesh.example\r\nAccept: */*\r\n\r\n'), 'bad-version'],
      [Buffer.from([2, 0, 0]), 'malformed'],
      [good.encodePacket('m0', primary, updates), 'from-self'],
      [good.encodePacket('m1', { type: 'ping', seq: 1, target: 'someone-else', sourceAddr: c.addresses[1]! }), 'wrong-target'],
    ];
    for (const [bytes] of table) expect(c.network.inject(to, bytes)).toBe(true);
    const expected: Partial<Record<DropReason, number>> = {};
    for (const [, reason] of table) expected[reason] = (expected[reason] ?? 0) + 1;
    expect(delta(drops, dropsOf(c))).toEqual(expected);
    expect(fingerprint(c)).toBe(before);
    c.run(5_000);
    expect(c.converged()).toBe(true);
    expect(c.agents[0]!.member('evil')).toBeUndefined();
    await c.stop();
  });

  it('survives a seeded fuzz of 100,000 random and mutated datagrams, then 20,000 authenticated random payloads', async () => {
    const seed = testSeed('auth-fuzz');
    const random = seededRandom(seed);
    const c = await SimCluster.create({ members: 3, seed });
    const to = c.addresses[0]!;
    const int = (n: number) => Math.floor(random() * n);
    const valid = [
      ...harmful(c).map((u) => good.encodePacket('m1', { type: 'gossip' }, [encodeUpdate(u)])),
      good.encodePacket('m1', { type: 'gossip' }, harmful(c).map(encodeUpdate)),
      good.encodePacket('m2', { type: 'ping-req', seq: 7, target: 'm1', targetAddr: c.addresses[1]!, sourceAddr: '203.0.113.9:1', nack: true }, [encodeUpdate(harmful(c)[0]!)]),
      good.encodePacket('m2', { type: 'ack', seq: 12345 }, [encodeUpdate(harmful(c)[2]!)]),
    ];
    // Every mutation changes the bytes, so none can be the valid datagram it started from.
    const mutate = (b: Buffer): Buffer => {
      const x = Buffer.from(b);
      switch (int(4)) {
        case 0: {
          // Flip 1-4 distinct bytes, each XORed with a non-zero value.
          const at = new Set<number>();
          for (let k = 1 + int(4); k > 0; k--) at.add(int(x.length));
          for (const i of at) x[i] = x[i]! ^ (1 + int(255));
          return x;
        }
        case 1:
          return x.subarray(0, int(x.length));
        case 2:
          return Buffer.concat([x, Buffer.from(Array.from({ length: 1 + int(64) }, () => int(256)))]);
        default: {
          // Replace one byte by another and drop up to 3 after it.
          const at = int(x.length);
          return Buffer.concat([x.subarray(0, at), Buffer.from([x[at]! ^ (1 + int(255))]), x.subarray(at + 1 + int(4))]);
        }
      }
    };
    const before = fingerprint(c);
    const drops = dropsOf(c);
    const received = c.agents[0]!.stats().messagesReceived;
    const N = 100_000;
    for (let i = 0; i < N; i++) {
      const bytes = i % 2 === 0 ? Buffer.from(Array.from({ length: int(1500) }, () => int(256))) : mutate(valid[int(valid.length)]!);
      c.network.inject(to, bytes);
    }
    const d = delta(drops, dropsOf(c));
    const total = Object.values(d).reduce((s, n) => s + n, 0);
    expect(c.agents[0]!.stats().messagesReceived - received).toBe(N);
    expect(total).toBe(N);
    for (const r of ['oversized', 'bad-version', 'bad-mac', 'malformed', 'wrong-cluster'] as const) expect(d[r] ?? 0).toBeGreaterThan(0);
    expect(fingerprint(c)).toBe(before);

    // Authenticated garbage: correctly sealed, random type and payload. It may parse (it is
    // authenticated) or be dropped, but it must never throw out of the receive path.
    const keyring = new Keyring([SIM_KEY]);
    const aad = Buffer.from([2, 3, ...Buffer.from('sim')]);
    for (let i = 0; i < 20_000; i++) {
      const plain = Buffer.concat([Buffer.from([1 + int(6), 2, ...Buffer.from('m9')]), Buffer.from(Array.from({ length: int(300) }, () => int(256)))]);
      const out = Buffer.alloc(aad.length + 12 + plain.length + 16);
      aad.copy(out);
      keyring.sealInto(out, aad.length, aad, plain);
      expect(() => c.network.inject(to, out)).not.toThrow();
    }
    const probes = c.agents[0]!.stats().probes;
    c.run(10_000);
    expect(c.agents[0]!.stats().probes).toBeGreaterThan(probes + 10);
    expect(c.runUntil(() => c.converged(), 20_000)).not.toBeNull();
    await c.stop();
  }, 60_000);
});
