/** Proves the cell controller's rules deterministically, on a fake clock with the in-memory arbiter and real topic managers over memory storage: fencing on a broken watch, and no leading in a previous incarnation's epoch. */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/index.ts';
import type { MemoryStorage } from '../../src/log/index.ts';
import type { CreateTopicInput, PartitionState } from '../../src/broker/index.ts';
import { MemoryArbiter } from '../arbiter/index.ts';
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

  async start(id: number, options: { storage?: MemoryStorage; ineligible?: string[] } = {}): Promise<Member> {
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
