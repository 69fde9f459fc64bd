/** Proves the cell controller's rules deterministically, on a fake clock with the in-memory arbiter and real topic managers over memory storage: elections (preferred candidate, delays, lost compare-and-sets, answers after the event), ISR changes only by the leader in its epoch, fencing and demotion on lease expiry, atomic topic create and delete, fencing on a broken watch, no leading in an earlier incarnation's epoch, and producer ids. */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, isEdgeqError } from '../../src/core/index.ts';
import type { MemoryStorage } from '../../src/log/index.ts';
import type { CreateTopicInput, PartitionState } from '../../src/broker/index.ts';
import { MemoryArbiter, TXN_OPS_MAX, type WatchEvent } from '../arbiter/index.ts';
import { CellKeys } from './cell-keys.ts';
import { ArbiterCellController } from './cell-controller.ts';
import { advance, openTestHost, settle, TestArbiterView, type TestHost } from './test-support.ts';

const CELL = 'unit';
const LEASE_TTL_MS = 1000;

interface Member {
  id: number;
  controller: ArbiterCellController;
  host: TestHost;
  view: TestArbiterView;
}

/** A cell of controllers sharing one MemoryArbiter on one fake clock. */
class Harness {
  readonly clock = new FakeClock();
  readonly arbiter: MemoryArbiter;
  readonly members = new Map<number, Member>();

  constructor(options: { historyEventsMax?: number } = {}) {
    this.arbiter = new MemoryArbiter({ clock: this.clock, ...options });
  }

  async start(id: number, options: { storage?: MemoryStorage; ineligible?: string[]; recovering?: Record<string, { lastEpoch: number; logEndOffset: number }> } = {}): Promise<Member> {
    const view = new TestArbiterView(this.arbiter);
    const controller = new ArbiterCellController({
      arbiter: view,
      cellId: CELL,
      leaseTtlMs: LEASE_TTL_MS,
      keepAliveIntervalMs: 250,
      leaseSafetyMarginMs: 250,
      electionDelayMs: 50,
      cellSize: 3,
      topicApplyWaitMs: 1000,
      clock: this.clock,
    });
    const host = await openTestHost({ brokerId: id, clock: this.clock, producerIds: controller, ...(options.storage ? { storage: options.storage } : {}) });
    for (const k of options.ineligible ?? []) host.ineligible.add(k);
    for (const [k, log] of Object.entries(options.recovering ?? {})) host.recovering.set(k, log);
    // As the broker does: a replica elected while recovering is the partition's truth from then on.
    host.topics.onReplicaRecovered = (p) => controller.replicaRecovered(p.topic, p.index);
    await controller.start(host);
    const m = { id, controller, host, view };
    this.members.set(id, m);
    await settle();
    return m;
  }

  async startCell(n = 3): Promise<void> {
    for (let id = 1; id <= n; id++) await this.start(id);
    await settle();
  }

  member(id: number): Member {
    const m = this.members.get(id);
    if (!m) throw new Error(`no broker ${id}`);
    return m;
  }

  /** The state as broker `via` sees it. */
  state(via: number, topic: string, p = 0): PartitionState {
    const st = this.member(via).controller.partitionState(topic, p);
    if (!st) throw new Error(`broker ${via} has no state for ${topic}-${p}`);
    return st;
  }

  async createTopic(via: number, input: CreateTopicInput): Promise<void> {
    await this.member(via).controller.createTopic(input);
    await settle();
  }

  /** The process of broker `id` dies: its arbiter calls fail from now on; its lease runs out on the arbiter's clock. */
  async crash(id: number): Promise<MemoryStorage> {
    const m = this.member(id);
    m.view.die();
    this.members.delete(id);
    await m.host.topics.close();
    return m.host.storage;
  }

  /** Advances in 10 ms steps until no other member sees broker `id` alive (its lease ran out). */
  async untilGone(id: number, msMax = 5 * LEASE_TTL_MS): Promise<void> {
    const others = () => [...this.members.values()].filter((m) => m.id !== id);
    for (let waited = 0; others().some((m) => m.controller.brokers().some((b) => b.id === id)); waited += 10) {
      if (waited > msMax) throw new Error(`broker ${id} still registered after ${msMax} ms`);
      await advance(this.clock, 10, 10);
    }
  }

  async close(): Promise<void> {
    for (const m of this.members.values()) {
      await m.controller.close().catch(() => undefined);
      await m.host.topics.close().catch(() => undefined);
    }
    await this.arbiter.close();
  }
}

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

describe('a broken arbiter watch (finding 10)', () => {
  it('fences the broker from the break until the watch is back and caught up, resuming from its last revision', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const leader = h.state(1, 't').leader;
    const m = h.member(leader);
    const other = h.member(leader === 1 ? 2 : 1);
    expect(m.controller.canLead()).toBe(true);

    m.view.breakWatches();
    expect(m.controller.canLead()).toBe(false);
    // A change the broken watch does not deliver.
    await other.controller.createTopic({ name: 'u', partitions: 1, replicationFactor: 3 });
    expect(m.controller.canLead()).toBe(false);

    await advance(h.clock, 3 * LEASE_TTL_MS);
    expect(m.controller.canLead()).toBe(true);
    expect(m.controller.topicRecords().map((r) => r.name)).toContain('u');
    expect(m.view.openWatches).toBe(1);
  });

  it('re-reads the whole cell when the last revision seen was compacted, dropping what was deleted meanwhile', async () => {
    const h = (harness = new Harness({ historyEventsMax: 64 }));
    await h.startCell();
    await h.createTopic(1, { name: 'gone', partitions: 1, replicationFactor: 3 });
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const leader = h.state(1, 't').leader;
    const m = h.member(leader);
    const other = h.member(leader === 1 ? 2 : 1);

    m.view.breakWatches();
    await other.controller.deleteTopic('gone');
    await other.controller.createTopic({ name: 'new', partitions: 1, replicationFactor: 3 });
    // Writes elsewhere push the broken watch's last revision out of the kept history.
    for (let i = 0; i < 100; i++) await h.arbiter.put(`/elsewhere/${i % 5}`, Buffer.from(String(i)));
    expect(m.controller.canLead()).toBe(false);

    await advance(h.clock, 3 * LEASE_TTL_MS);
    expect(m.controller.canLead()).toBe(true);
    const names = m.controller.topicRecords().map((r) => r.name);
    expect(names).toContain('new');
    expect(names).not.toContain('gone');
    expect(m.host.topics.get('gone')).toBeUndefined();
    expect(m.host.topics.get('new')).toBeDefined();
  });
});

describe('a watch that breaks again while catching up', () => {
  it('is re-established by one further attempt, and the broker stays fenced until then', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    const m = h.member(1);
    expect(m.view.watchesOpened).toBe(1);
    // The first attempt's barrier write is held; meanwhile its new watch breaks too.
    const held = gate();
    m.view.beforeWrite = held.wait;
    m.view.breakWatches();
    await advance(h.clock, 150);
    expect(m.view.watchesOpened).toBe(2);
    m.view.breakWatches();
    m.view.beforeWrite = async () => undefined;
    held.release();
    await settle();
    expect(m.controller.canLead()).toBe(false);
    await advance(h.clock, 3 * LEASE_TTL_MS);
    expect(m.controller.canLead()).toBe(true);
    expect(m.view.watchesOpened).toBe(3);
    expect(m.view.openWatches).toBe(1);
  });
});

describe('a broker restarted within its lease TTL (finding 1)', () => {
  it('bumps the epoch of every partition it led before leading again', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const storage = await h.crash(before.leader);
    // Restarted at once: its previous lease is still alive on the arbiter.
    const again = await h.start(before.leader, { storage });
    const after = again.controller.partitionState('t', 0)!;
    expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
    expect(again.host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader' && c.epoch === before.leaderEpoch)).toEqual([]);
    expect(after).toMatchObject({ leader: before.leader, leaderEpoch: before.leaderEpoch + 1 });
    const r = again.host.replica('t');
    expect([r.role, r.leaderEpoch]).toEqual(['leader', before.leaderEpoch + 1]);
    // The followers re-validate against the new epoch.
    for (const m of h.members.values()) {
      if (m.id === before.leader) continue;
      expect([m.host.replica('t').role, m.host.replica('t').leaderEpoch]).toEqual(['follower', before.leaderEpoch + 1]);
    }
  });

  it('resigns instead when its replica is not eligible to lead, and another in-sync replica is elected', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const storage = await h.crash(before.leader);
    const again = await h.start(before.leader, { storage, ineligible: ['t/0'] });
    await advance(h.clock, 500);
    const after = again.controller.partitionState('t', 0)!;
    expect(after.leader).not.toBe(before.leader);
    expect(before.isr).toContain(after.leader);
    expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
    expect(again.host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader')).toEqual([]);
    expect(h.member(after.leader).host.replica('t').role).toBe('leader');
  });
});

describe('recovering replicas (finding 5)', () => {
  it('a published recovering replica is no candidate: the next one elects at once, without waiting its rank', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const [, preferred, next] = before.isr;
    // The preferred candidate restarts after a power loss: it tells the cell it is recovering.
    const storage = await h.crash(preferred!);
    await h.start(preferred!, { storage, recovering: { 't/0': { lastEpoch: 1, logEndOffset: 0 } } });
    await h.crash(before.leader);
    await h.untilGone(before.leader);
    await advance(h.clock, 10);
    expect(h.state(next!, 't')).toMatchObject({ leader: next, leaderEpoch: before.leaderEpoch + 1 });
    expect(h.member(preferred!).host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader')).toEqual([]);
  });

  it('when every replica is recovering, all elect the one holding the most, and its entry goes', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const storages = new Map<number, MemoryStorage>();
    for (const id of [1, 2, 3]) storages.set(id, await h.crash(id));
    for (const id of [1, 2, 3]) await h.untilGone(id, 10 * LEASE_TTL_MS).catch(() => undefined);
    await advance(h.clock, 3 * LEASE_TTL_MS);
    // The whole cell lost power; broker 2's log holds the most (same epoch as 3, longer).
    const logs: Record<number, { lastEpoch: number; logEndOffset: number }> = { 1: { lastEpoch: 1, logEndOffset: 40 }, 2: { lastEpoch: 2, logEndOffset: 31 }, 3: { lastEpoch: 2, logEndOffset: 30 } };
    for (const id of [3, 1, 2]) await h.start(id, { storage: storages.get(id)!, recovering: { 't/0': logs[id]! } });
    await advance(h.clock, 500);
    for (const id of [1, 2, 3]) expect(h.state(id, 't'), `as broker ${id} sees it`).toMatchObject({ leader: 2 });
    expect(h.state(1, 't').leaderEpoch).toBeGreaterThan(before.leaderEpoch);
    expect(h.member(2).host.replica('t').role).toBe('leader');
    const keys = new CellKeys(CELL);
    expect(await h.arbiter.get(keys.recovering('t', 0, 2))).toBeNull();
    expect(await h.arbiter.get(keys.recovering('t', 0, 1))).not.toBeNull();
  });

  it('waits while one replica of an all-recovering partition is down: it may hold everything', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const storages = new Map<number, MemoryStorage>();
    for (const id of [1, 2, 3]) storages.set(id, await h.crash(id));
    await advance(h.clock, 3 * LEASE_TTL_MS);
    for (const id of [1, 2]) await h.start(id, { storage: storages.get(id)!, recovering: { 't/0': { lastEpoch: 1, logEndOffset: id } } });
    await advance(h.clock, 1000);
    expect(h.state(1, 't').leader === -1 || ![1, 2].includes(h.state(1, 't').leader)).toBe(true);
    await h.start(3, { storage: storages.get(3)!, recovering: { 't/0': { lastEpoch: 1, logEndOffset: 9 } } });
    await advance(h.clock, 500);
    expect(h.state(1, 't').leader).toBe(3);
  });

  it('a topic deleted and created again drops the old recovering entries with it', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const storage = await h.crash(2);
    await h.start(2, { storage, recovering: { 't/0': { lastEpoch: 1, logEndOffset: 0 } } });
    const keys = new CellKeys(CELL);
    expect(await h.arbiter.get(keys.recovering('t', 0, 2))).not.toBeNull();
    await h.member(1).controller.deleteTopic('t');
    expect(await h.arbiter.get(keys.recovering('t', 0, 2))).toBeNull();
  });
});

/** Resolves when `release` is called: a held request. */
function gate(): { wait: () => Promise<void>; release: () => void } {
  let release!: () => void;
  const p = new Promise<void>((resolve) => (release = resolve));
  return { wait: () => p, release };
}

describe('elections', () => {
  it('lets the preferred candidate (first live ISR member) take over at once, with the next epoch and the live ISR', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const [, preferred, next] = before.isr;
    const txnsBefore = h.member(next!).view.txns;
    await h.crash(before.leader);
    await h.untilGone(before.leader);
    await advance(h.clock, 10);
    expect(h.state(preferred!, 't')).toEqual({ leader: preferred, leaderEpoch: before.leaderEpoch + 1, isr: [preferred, next], replicas: before.replicas });
    expect([h.member(preferred!).host.replica('t').role, h.member(next!).host.replica('t').role]).toEqual(['leader', 'follower']);
    expect(h.member(next!).host.replica('t').leaderId).toBe(preferred);
    // The other candidate never tried: its timer was cancelled once a live leader was known.
    expect(h.member(next!).view.txns).toBe(txnsBefore);
  });

  it('gives the next candidate its turn only after electionDelayMs, and never elects a replica that is not eligible', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const [, preferred, next] = before.isr;
    h.member(preferred!).host.ineligible.add('t/0');
    await h.crash(before.leader);
    await h.untilGone(before.leader);
    await advance(h.clock, 40);
    expect(h.state(next!, 't').leader).toBe(before.leader);
    await advance(h.clock, 20);
    expect(h.state(next!, 't')).toMatchObject({ leader: next, leaderEpoch: before.leaderEpoch + 1 });
    expect(h.member(preferred!).host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader')).toEqual([]);
  });

  it('lets exactly one of two racing candidates win: the loser\'s compare-and-set fails and it follows the winner', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const [, preferred, next] = before.isr;
    // The preferred candidate's election request is held on its way to the arbiter.
    const held = gate();
    h.member(preferred!).view.beforeWrite = held.wait;
    await h.crash(before.leader);
    await h.untilGone(before.leader);
    await advance(h.clock, 100);
    expect(h.state(next!, 't')).toMatchObject({ leader: next, leaderEpoch: before.leaderEpoch + 1 });
    h.member(preferred!).view.beforeWrite = async () => undefined;
    held.release();
    await advance(h.clock, 100);
    for (const id of [preferred!, next!]) expect(h.state(id, 't')).toMatchObject({ leader: next, leaderEpoch: before.leaderEpoch + 1 });
    const loser = h.member(preferred!).host.replica('t');
    expect([loser.role, loser.leaderId, loser.leaderEpoch]).toEqual(['follower', next, before.leaderEpoch + 1]);
    expect(h.member(preferred!).host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader')).toEqual([]);
  });

  it('leads at once in the epoch it won when the watch delivers the write before its answer, without bumping it again', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const [, preferred] = before.isr;
    // Every answer to the preferred candidate comes only after the watch has delivered its event.
    h.member(preferred!).view.afterWrite = () => settle(5);
    await h.crash(before.leader);
    await h.untilGone(before.leader);
    await advance(h.clock, 200);
    expect(h.state(preferred!, 't')).toMatchObject({ leader: preferred, leaderEpoch: before.leaderEpoch + 1 });
    const r = h.member(preferred!).host.replica('t');
    expect([r.role, r.leaderEpoch]).toEqual(['leader', before.leaderEpoch + 1]);
  });

  it.each([
    ['false', false],
    ['true', true],
  ])('elects a replica outside the ISR only with unclean.leader.election.enable (%s)', async (setting, unclean) => {
    const h = (harness = new Harness());
    await h.startCell(2);
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 2, config: { 'unclean.leader.election.enable': setting } });
    const st = h.state(1, 't');
    const follower = st.replicas.find((id) => id !== st.leader)!;
    // The leader drops the follower from the ISR, then dies.
    expect(await h.member(st.leader).controller.changeIsr(h.member(st.leader).host.replica('t'), [st.leader])).toBe(true);
    await settle();
    await h.crash(st.leader);
    await h.untilGone(st.leader);
    await advance(h.clock, 500);
    const after = h.state(follower, 't');
    if (unclean) {
      expect(after).toMatchObject({ leader: follower, leaderEpoch: st.leaderEpoch + 1, isr: [follower] });
      expect(h.member(follower).host.replica('t').role).toBe('leader');
    } else {
      expect(after).toMatchObject({ leader: st.leader, leaderEpoch: st.leaderEpoch, isr: [st.leader] });
      expect(h.member(follower).host.roleChanges.filter((c) => c.topic === 't' && c.role === 'leader')).toEqual([]);
    }
  });
});

describe('ISR changes', () => {
  it('are made only by the current leader, in its epoch, with itself in the ISR and only replicas', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const st = h.state(1, 't');
    const leader = h.member(st.leader);
    const follower = h.member(st.replicas.find((id) => id !== st.leader)!);
    const revision = h.arbiter.currentRevision();
    // A follower may not, nor the leader without itself, with a broker holding no replica, or for another epoch.
    expect(await follower.controller.changeIsr(follower.host.replica('t'), [follower.id])).toBe(false);
    expect(await leader.controller.changeIsr(leader.host.replica('t'), st.isr.filter((id) => id !== st.leader))).toBe(false);
    expect(await leader.controller.changeIsr(leader.host.replica('t'), [...st.isr, 9])).toBe(false);
    expect(await leader.controller.changeIsr({ ...leader.host.replica('t'), topic: 't', index: 0, leaderEpoch: st.leaderEpoch - 1 } as never, [st.leader])).toBe(false);
    expect(h.arbiter.currentRevision()).toBe(revision);
    expect(await leader.controller.changeIsr(leader.host.replica('t'), [st.leader])).toBe(true);
    await settle();
    for (const m of h.members.values()) expect(m.controller.partitionState('t', 0)).toMatchObject({ leader: st.leader, leaderEpoch: st.leaderEpoch, isr: [st.leader] });
    expect(follower.host.replica('t').isr).toEqual([st.leader]);
  });

  it('are refused while the leader is fenced (watch broken) and after it lost leadership', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const st = h.state(1, 't');
    const leader = h.member(st.leader);
    leader.view.breakWatches();
    expect(await leader.controller.changeIsr(leader.host.replica('t'), [st.leader])).toBe(false);
    await advance(h.clock, 1000);
    // A new epoch by another broker (the leader was partitioned and lost its lease meanwhile).
    leader.view.cut();
    await h.untilGone(st.leader);
    await advance(h.clock, 300);
    const successor = h.state([1, 2, 3].find((id) => id !== st.leader)!, 't');
    expect(successor.leader).not.toBe(st.leader);
    leader.view.heal();
    expect(await leader.controller.changeIsr(leader.host.replica('t'), [st.leader])).toBe(false);
  });
});

describe('lease expiry', () => {
  it('fences the leader before its lease can expire, lets a successor lead only after that, and demotes and re-registers the old leader when it comes back', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 1, replicationFactor: 3 });
    const before = h.state(1, 't');
    const old = h.member(before.leader);
    const others = [...h.members.values()].filter((m) => m.id !== before.leader);
    old.view.cut();
    // Every 10 ms: never may the old leader take writes while another broker leads a newer epoch.
    let fencedAtMs = -1;
    for (let t = 0; t < 3 * LEASE_TTL_MS; t += 10) {
      await advance(h.clock, 10, 10);
      const successorLeads = others.some((m) => m.host.replica('t').role === 'leader');
      if (successorLeads) expect(old.controller.canLead()).toBe(false);
      if (!old.controller.canLead() && fencedAtMs < 0) fencedAtMs = t;
    }
    // Fenced at most TTL - margin (750 ms) after the last renewal, which was at most 250 ms before the cut.
    expect(fencedAtMs).toBeGreaterThanOrEqual(0);
    expect(fencedAtMs).toBeLessThanOrEqual(760);
    const successor = others[0]!.controller.partitionState('t', 0)!;
    expect(successor.leader).not.toBe(before.leader);
    expect(successor.leaderEpoch).toBe(before.leaderEpoch + 1);
    old.view.heal();
    await advance(h.clock, 2 * LEASE_TTL_MS);
    expect(old.controller.canLead()).toBe(true);
    expect(old.controller.brokers().map((b) => b.id)).toEqual([1, 2, 3]);
    const r = old.host.replica('t');
    expect([r.role, r.leaderId, r.leaderEpoch]).toEqual(['follower', successor.leader, successor.leaderEpoch]);
  });

  it('makes a broker that re-registered after losing its lease bump the epoch of a partition still named its own', async () => {
    const h = (harness = new Harness());
    await h.startCell(2);
    // Replication factor 1: no one else can take over while the leader is away.
    await h.createTopic(1, { name: 'solo', partitions: 1, replicationFactor: 1 });
    const before = h.state(1, 'solo');
    const m = h.member(before.leader);
    m.view.cut();
    await h.untilGone(before.leader);
    m.view.heal();
    await advance(h.clock, 2 * LEASE_TTL_MS);
    expect(m.controller.canLead()).toBe(true);
    expect(h.state(before.leader, 'solo')).toMatchObject({ leader: before.leader, leaderEpoch: before.leaderEpoch + 1 });
    const r = m.host.replica('solo');
    expect([r.role, r.leaderEpoch]).toEqual(['leader', before.leaderEpoch + 1]);
    expect(m.host.roleChanges.filter((c) => c.topic === 'solo' && c.role === 'leader').map((c) => c.epoch)).toEqual([before.leaderEpoch, before.leaderEpoch + 1]);
  });
});

describe('topics', () => {
  it('creates a topic and every partition state with one write, even past the transaction op limit', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    const keys = new CellKeys(CELL);
    const revision = h.arbiter.currentRevision();
    const partitions = TXN_OPS_MAX * 2 + 1;
    await h.createTopic(2, { name: 'wide', partitions, replicationFactor: 2 });
    expect(h.arbiter.currentRevision()).toBe(revision + 1);
    expect(await h.arbiter.getPrefix(keys.partitionsOf('wide'))).toEqual([]);
    const rec = h.member(1).controller.topicRecords().find((r) => r.name === 'wide')!;
    for (const m of h.members.values()) {
      for (let p = 0; p < partitions; p++) {
        const st = m.controller.partitionState('wide', p)!;
        expect(st).toEqual({ leader: rec.assignments![p]![0], leaderEpoch: 1, isr: rec.assignments![p], replicas: rec.assignments![p] });
        const local = m.host.topics.get('wide')!.partitions[p];
        expect(local !== undefined).toBe(st.replicas.includes(m.id));
        if (local) expect(local.role).toBe(st.leader === m.id ? 'leader' : 'follower');
      }
    }
    // Leaders are spread: every broker leads about a third.
    const led = [1, 2, 3].map((id) => rec.assignments!.filter((a) => a[0] === id).length);
    expect(Math.max(...led) - Math.min(...led)).toBeLessThanOrEqual(1);
  });

  it('refuses a second create and bad input with a typed error, changing nothing', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    await h.createTopic(1, { name: 't', partitions: 2, replicationFactor: 3 });
    const revision = h.arbiter.currentRevision();
    const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (isEdgeqError(e) ? e.code : String(e)));
    expect(await codeOf(h.member(2).controller.createTopic({ name: 't', partitions: 5, replicationFactor: 1 }))).toBe('TOPIC_ALREADY_EXISTS');
    expect(await codeOf(h.member(2).controller.createTopic({ name: 'x', partitions: 0, replicationFactor: 1 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(h.member(2).controller.createTopic({ name: 'x', partitions: 1, replicationFactor: 4 }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(h.member(2).controller.createTopic({ name: 'bad name!', partitions: 1 }))).toBe('INVALID_TOPIC');
    expect(await codeOf(h.member(2).controller.deleteTopic('missing'))).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(await codeOf(h.member(2).controller.deleteTopic('__consumer_offsets'))).toBe('INVALID_TOPIC');
    expect(h.arbiter.currentRevision()).toBe(revision);
  });

  it('deletes a topic with its partition states in one revision, everywhere, and a re-created topic starts afresh', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    const keys = new CellKeys(CELL);
    await h.createTopic(1, { name: 't', partitions: 2, replicationFactor: 3 });
    // A written state (an ISR change) for partition 0.
    const st = h.state(1, 't');
    expect(await h.member(st.leader).controller.changeIsr(h.member(st.leader).host.replica('t'), [st.leader])).toBe(true);
    await settle();
    expect(await h.arbiter.getPrefix(keys.partitionsOf('t'))).toHaveLength(1);
    const events: WatchEvent[] = [];
    await h.arbiter.watchPrefix(keys.root, (e) => events.push(e));
    await h.member(2).controller.deleteTopic('t');
    await settle();
    expect(events.map((e) => [e.type, e.key.slice(keys.root.length)])).toEqual([
      ['delete', 'topics/t'],
      ['delete', 'partitions/t/0'],
    ]);
    expect(new Set(events.map((e) => e.modRevision)).size).toBe(1);
    for (const m of h.members.values()) {
      expect(m.host.topics.get('t')).toBeUndefined();
      expect(m.controller.partitionState('t', 0)).toBeUndefined();
    }
    await h.createTopic(3, { name: 't', partitions: 1, replicationFactor: 3 });
    for (const m of h.members.values()) {
      const again = m.controller.partitionState('t', 0)!;
      expect(again.leaderEpoch).toBe(1);
      expect(again.isr).toHaveLength(3);
      expect(m.controller.partitionState('t', 1)).toBeUndefined();
    }
  });
});

describe('a cell written by the old, non-atomic topic create', () => {
  it('lets the topic record win over states written before it, and can still write those partitions', async () => {
    const h = (harness = new Harness());
    const keys = new CellKeys(CELL);
    const state = (leader: number, replicas: number[]): Buffer => Buffer.from(JSON.stringify({ leader, leaderEpoch: 1, isr: replicas, replicas }));
    // As the old code left it after a lost race: a loser's states (other replicas, one partition
    // too many) put before the winner's record.
    await h.arbiter.put(keys.partition('old', 0), state(3, [3, 2, 9]));
    await h.arbiter.put(keys.partition('old', 1), state(2, [2, 3, 1]));
    const rec = { name: 'old', id: 'abcd1234', partitions: 1, replicationFactor: 3, config: {}, leaderEpoch: 1, createdAtMs: 0, internal: false, assignments: [[1, 2, 3]] };
    await h.arbiter.compareAndSet(keys.topic('old'), Buffer.from(JSON.stringify(rec)), { expectedModRevision: 0 });
    await h.startCell();
    await advance(h.clock, 100);
    for (const m of h.members.values()) {
      // Every broker registered after the topic was created: broker 1 bumps before leading.
      expect(m.controller.partitionState('old', 0)).toEqual({ leader: 1, leaderEpoch: 2, isr: [1, 2, 3], replicas: [1, 2, 3] });
      expect(m.controller.partitionState('old', 1)).toBeUndefined();
    }
    expect([h.member(1).host.replica('old').role, h.member(1).host.replica('old').leaderEpoch]).toEqual(['leader', 2]);
  });
});

describe('producer ids', () => {
  it('hands out ids unique in the cell and fences an older instance of a producer on every broker', async () => {
    const h = (harness = new Harness());
    await h.startCell();
    const a = h.member(1).controller;
    const b = h.member(2).controller;
    const ids = new Set<number>();
    for (let i = 0; i < 5; i++) {
      ids.add((await a.init(-1, -1)).producerId);
      ids.add((await b.init(-1, -1)).producerId);
    }
    expect(ids.size).toBe(10);
    const id = [...ids][0]!;
    expect(await b.init(id, 0)).toEqual({ producerId: id, producerEpoch: 1 });
    await settle();
    // Every broker knows the new epoch, and the old one can no longer bump.
    expect([a.currentEpoch(id), b.currentEpoch(id), h.member(3).controller.currentEpoch(id)]).toEqual([1, 1, 1]);
    await expect(a.init(id, 0)).rejects.toMatchObject({ code: 'INVALID_PRODUCER_EPOCH' });
    // Two bumps of the same epoch at once: one wins.
    const both = await Promise.allSettled([a.init(id, 1), b.init(id, 1)]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    await expect(a.init(1_000_000, 0)).rejects.toMatchObject({ code: 'UNKNOWN_PRODUCER_ID' });
  });
});
