// Proves the mesh agent's SWIM behaviour on the simulated network (seeded, printed): a suspect
// refutes with a higher incarnation (told at once by whoever learns of its suspicion), a crashed member is declared dead and rejoins above its old
// incarnation, a member that leaves is left (not dead), a blackholed pair stays alive through
// ping-req, key rotation with two keys, events, and the versioned state converging (last writer
// wins, tombstones expiring after their bound, push-pull healing a partition).
import { afterEach, describe, expect, it } from 'vitest';
import { testSeed } from '../../src/testing/index.ts';
import { SimClock } from '../sim/sim-clock.ts';
import { SimCluster, SIM_KEY } from '../sim/sim-cluster.ts';
import { SimNetwork } from '../sim/sim-network.ts';
import { MeshCodec, type MacOnlyMode } from '../wire/codec.ts';
import { Keyring } from '../wire/keyring.ts';
import { encodeUpdate } from '../wire/messages.ts';
import { MeshAgent, type MemberChange } from './mesh-agent.ts';

const clusters: SimCluster[] = [];
afterEach(async () => {
  for (const c of clusters.splice(0)) await c.stop();
});

async function mesh(members: number, label: string, options: Partial<Parameters<typeof SimCluster.create>[0]> = {}): Promise<SimCluster> {
  const c = await SimCluster.create({ members, seed: testSeed(label), ...options });
  clusters.push(c);
  return c;
}

describe('membership', () => {
  it('forms one view with every member alive, regions and addresses as advertised', async () => {
    const c = await mesh(5, 'agent-view');
    const a = c.agents[0]!;
    expect(a.self()).toEqual({ region: 'region-0', member: 'm0', incarnation: 0, address: c.addresses[0] });
    const members = a.members();
    expect(members).toHaveLength(5);
    expect(members[0]).toMatchObject({ member: 'm0', state: 'alive', phi: 0, lastHeardMs: 0 });
    for (const m of members.slice(1)) {
      expect(m).toMatchObject({ state: 'alive', incarnation: 0, address: c.addresses[c.ids.indexOf(m.member)] });
      expect(m.region).toBe(`region-${c.ids.indexOf(m.member) % 3}`);
    }
    c.run(10_000);
    for (const m of a.members().slice(1)) {
      expect(m.lastHeardMs).toBeGreaterThanOrEqual(0);
      expect(m.lastHeardMs).toBeLessThan(5_000);
      expect(m.phi).toBeGreaterThanOrEqual(0);
      expect(m.phi).toBeLessThan(8);
    }
  });

  it('a suspect refutes with a higher incarnation and stays alive', async () => {
    const c = await mesh(3, 'agent-refute');
    let suspectedAt = -1;
    c.agents[0]!.observe({ suspicion: (e) => void (e.member === 'm2' && suspectedAt < 0 && (suspectedAt = c.elapsedMs)) });
    c.partition([2], [0, 1]);
    expect(c.runUntil(() => suspectedAt >= 0, 10_000)).not.toBeNull();
    c.heal();
    // Refuted once the suspicion reaches m2 (buddy ping, gossip) and its alive comes back: well within the 9 s an unconfirmed suspicion waits.
    expect(c.runUntil(() => c.converged(), 5_000)).not.toBeNull();
    const m2 = c.agents[2]!;
    expect(m2.self().incarnation).toBeGreaterThanOrEqual(1);
    expect(m2.stats().refutations).toBeGreaterThanOrEqual(1);
    expect(c.falseDeaths).toEqual([]);
    for (const i of [0, 1]) expect(c.agents[i]!.member('m2')).toMatchObject({ state: 'alive', incarnation: m2.self().incarnation });
  });

  it('a member that learns of a suspicion tells the suspect at once (Lifeguard buddy), which refutes in one round trip', async () => {
    // Gossip and probes 10 s apart: neither can carry the suspicion to m3 within the 200 ms below.
    const c = await mesh(5, 'agent-tell-suspect', { config: { gossipIntervalMs: 10_000, probeIntervalMs: 10_000, probeTimeoutMs: 200 } });
    const codec = new MeshCodec({ clusterName: 'sim', keyring: new Keyring([SIM_KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 22, limits: { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 } });
    const suspicion = encodeUpdate({ kind: 'suspect', member: 'm3', incarnation: 0, from: 'm1' });
    c.network.inject(c.addresses[0]!, codec.encodePacket('m1', { type: 'gossip' }, [suspicion]));
    expect(c.agents[0]!.memberStatus('m3')).toEqual({ state: 'suspect', incarnation: 0 });
    // m0 → m3 (25 ms), m3 refutes and acks (25 ms): m0 sees m3 alive at incarnation 1.
    expect(c.runUntil(() => c.agents[0]!.memberStatus('m3')?.incarnation === 1, 200, 10)).not.toBeNull();
    expect(c.agents[3]!.self().incarnation).toBe(1);
    expect(c.agents[0]!.memberStatus('m3')?.state).toBe('alive');
  });

  it('a crashed member is declared dead everywhere, then rejoins above its old incarnation', async () => {
    const c = await mesh(4, 'agent-rejoin');
    const changes: MemberChange[] = [];
    c.agents[0]!.onMemberChange((ch) => ch.member.member === 'm3' && changes.push(ch));
    c.crash(3);
    const detectMs = c.runUntil(() => c.allKnowGone(3), 30_000);
    expect(detectMs).not.toBeNull();
    expect(changes.map((ch) => [ch.previous, ch.member.state])).toEqual([
      ['alive', 'suspect'],
      ['suspect', 'dead'],
    ]);
    const deadAt = c.agents[0]!.member('m3')!.incarnation;
    const back = await c.restart(3);
    expect(back.self().incarnation).toBe(0);
    expect(c.runUntil(() => c.converged(), 10_000)).not.toBeNull();
    expect(back.self().incarnation).toBeGreaterThan(deadAt);
    expect(changes.at(-1)).toMatchObject({ previous: 'dead', member: { state: 'alive', incarnation: back.self().incarnation } });
  });

  it('a member that leaves is left everywhere, not dead, and is not probed again', async () => {
    const c = await mesh(4, 'agent-leave');
    const leaving = c.agents[3]!;
    const done = leaving.leave();
    c.run(1_000);
    await done;
    c.agents[3] = null;
    expect(c.runUntil(() => [0, 1, 2].every((i) => c.agents[i]!.member('m3')?.state === 'left'), 5_000)).not.toBeNull();
    c.run(30_000);
    for (const i of [0, 1, 2]) {
      expect(c.agents[i]!.member('m3')?.state).toBe('left');
      expect(c.agents[i]!.stats().deaths).toBe(0);
    }
    expect(c.falseSuspicions.filter((e) => e.target === 'm3')).toEqual([]);
    expect(() => leaving.setState('k', 1)).toThrow(/stopped/);
  });

  it('a blackholed pair stays alive through ping-req via the third member', async () => {
    const c = await mesh(3, 'agent-blackhole');
    c.partition([0], [1]);
    c.run(60_000);
    expect(c.falseDeaths).toEqual([]);
    for (const [i, j] of [[0, 1], [1, 0]] as const) expect(c.agents[i]!.member(`m${j}`)?.state).toBe('alive');
    // The direct pings fail every time; ping-reqs through m2 answer.
    expect(c.agents[0]!.stats().probesFailed).toBe(0);
  });
});

describe('key rotation', () => {
  async function agents(keys: string[][], seed: number, macOnly: MacOnlyMode[] = []): Promise<{ clock: SimClock; agents: MeshAgent[] }> {
    const clock = new SimClock();
    const net = new SimNetwork({ clock, seed });
    const list = keys.map(
      (k, i) =>
        new MeshAgent({ clusterName: 'c', member: `k${i}`, region: 'r', keys: k, advertise: `10.0.0.${i + 1}:1`, seeds: i === 0 ? [] : ['10.0.0.1:1'], clock, transport: net.endpoint(`10.0.0.${i + 1}:1`), randomSeed: seed + i, ...(macOnly[i] ? { macOnly: macOnly[i] } : {}) }),
    );
    for (const a of list) await a.start();
    return { clock, agents: list };
  }
  const A = 'a'.repeat(32);
  const B = 'b'.repeat(32);

  it('members mid-rotation (sending with A or B, accepting both) form one mesh', async () => {
    const seed = testSeed('agent-rotation');
    const { clock, agents: list } = await agents([[A, B], [B, A], [A, B]], seed);
    clock.advance(10_000);
    for (const a of list) {
      expect(a.members().filter((m) => m.state === 'alive')).toHaveLength(3);
      expect(a.stats().drops['bad-mac']).toBe(0);
    }
    for (const a of list) await a.stop();
  });

  it('a primary key change: the old key is still accepted while members switch, then dropped', async () => {
    const seed = testSeed('agent-rotation-steps');
    // Step 2 of a rotation: k0 already sends with B, k1 and k2 still send with A; all accept both.
    const { clock, agents: list } = await agents([[B, A], [A, B], [A, B]], seed);
    clock.advance(10_000);
    for (const a of list) expect(a.members().filter((m) => m.state === 'alive')).toHaveLength(3);
    list[0]!.setState('during/rotation', 1);
    clock.advance(5_000);
    for (const a of list) {
      expect(a.stateOf('during/rotation')?.value).toBe(1);
      expect(a.stats().drops['bad-mac']).toBe(0);
    }
    for (const a of list) await a.stop();
  });

  it("a rolling upgrade from the MAC-only wire: 'send' and 'accept' members form one mesh; an 'off' member refuses 'send' as mac-only", async () => {
    const seed = testSeed('agent-mac-only');
    const mixed = await agents([[A], [A], [A]], seed, ['send', 'accept', 'accept']);
    mixed.clock.advance(10_000);
    for (const a of mixed.agents) expect(a.members().filter((m) => m.state === 'alive')).toHaveLength(3);
    for (const a of mixed.agents) await a.stop();
    // A member still sending MAC-only cannot join a member that accepts encrypted messages only.
    const strict = await agents([[A], [A]], seed + 1, ['off', 'send']);
    strict.clock.advance(10_000);
    expect(strict.agents[0]!.member('k1')).toBeUndefined();
    expect(strict.agents[0]!.stats().drops['mac-only']).toBeGreaterThan(0);
    for (const a of strict.agents) await a.stop();
  });

  it('a member holding only a key the others do not accept is dropped as bad-mac and never joins', async () => {
    const seed = testSeed('agent-rotation-bad');
    const { clock, agents: list } = await agents([[A], [A], [B]], seed);
    clock.advance(10_000);
    expect(list[0]!.member('k2')).toBeUndefined();
    expect(list[0]!.stats().drops['bad-mac']).toBeGreaterThan(0);
    expect(list[2]!.members()).toHaveLength(1);
    for (const a of list) await a.stop();
  });
});

describe('versioned state', () => {
  it('converges everywhere, last writer wins on (version, member), with events', async () => {
    const c = await mesh(5, 'agent-state');
    const seen: string[] = [];
    c.agents[4]!.onStateChange((e) => seen.push(`${e.key}=${JSON.stringify(e.value)}@${e.member}`));
    // Same ms on both writers: the version ties are broken by member id, everywhere alike.
    c.agents[0]!.setState('region/a', { v: 0 });
    c.agents[1]!.setState('region/a', { v: 1 });
    c.agents[2]!.setState('blob', new Uint8Array([1, 2, 3]));
    const same = () => {
      const views = c.live().map((i) => JSON.stringify(c.agents[i]!.state().sort((x, y) => x.key.localeCompare(y.key))));
      return new Set(views).size === 1 && c.agents[4]!.state().length === 2;
    };
    expect(c.runUntil(same, 5_000)).not.toBeNull();
    expect(c.agents[3]!.stateOf('region/a')).toMatchObject({ value: { v: 1 }, member: 'm1', deleted: false });
    expect([...(c.agents[3]!.stateOf('blob')!.value as Buffer)]).toEqual([1, 2, 3]);
    expect(seen).toContain('region/a={"v":1}@m1');
  });

  it('a deletion converges as a tombstone and is purged everywhere after its bound', async () => {
    const c = await mesh(3, 'agent-tombstone', { limits: { tombstoneRetainMs: 20_000 } });
    c.agents[0]!.setState('topic/orders', { partitions: 3 });
    expect(c.runUntil(() => c.live().every((i) => c.agents[i]!.stateOf('topic/orders')?.deleted === false), 5_000)).not.toBeNull();
    c.agents[1]!.deleteState('topic/orders');
    expect(c.runUntil(() => c.live().every((i) => c.agents[i]!.stateOf('topic/orders')?.deleted === true), 5_000)).not.toBeNull();
    // A late write with an older version does not bring it back.
    expect(c.agents[2]!.stateOf('topic/orders')).toMatchObject({ member: 'm1', value: undefined });
    c.run(15_000);
    expect(c.agents[0]!.stateOf('topic/orders')?.deleted).toBe(true);
    c.run(6_000);
    for (const i of c.live()) expect(c.agents[i]!.stateOf('topic/orders')).toBeUndefined();
  });

  it('push-pull brings both sides of a healed partition to the same state and view', async () => {
    const c = await mesh(6, 'agent-heal');
    c.partition([0, 1, 2], [3, 4, 5]);
    c.agents[0]!.setState('region/east', { side: 'a' });
    c.agents[4]!.setState('region/west', { side: 'b' });
    c.agents[1]!.setState('shared', 'a');
    c.run(5);
    c.agents[5]!.setState('shared', 'b');
    // Long enough for both sides to declare the other dead and for every piggyback to be spent.
    c.run(40_000);
    expect(c.agents[0]!.member('m4')?.state).toBe('dead');
    expect(c.agents[0]!.queuedUpdates()).toBe(0);
    expect(c.agents[3]!.stateOf('region/east')).toBeUndefined();
    const pushPullsBefore = c.sum((a) => a.stats().pushPulls);
    c.heal();
    const ms = c.runUntil(() => {
      if (!c.converged()) return false;
      return c.live().every((i) => {
        const a = c.agents[i]!;
        return a.stateOf('region/east') !== undefined && a.stateOf('region/west') !== undefined && a.stateOf('shared')?.value === 'b';
      });
    }, 10_000);
    expect(ms).not.toBeNull();
    expect(ms!).toBeLessThanOrEqual(3_000);
    expect(c.sum((a) => a.stats().pushPulls)).toBeGreaterThan(pushPullsBefore);
  });
});
