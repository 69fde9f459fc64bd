/**
 * Brings the broker's local replicas in line with its view of the cell: topics opened or removed,
 * each replica leader or follower in the epoch its partition's state says.
 *
 * Work is coalesced: what changed is marked (a topic, a partition) and one loop applies the view
 * as it is when it gets there, topics before partitions, one step at a time. The backlog is a set
 * of names, so it is bounded by the cell's topics and partitions however many events arrive.
 *
 * A state that names this broker leader is led only in an epoch this incarnation holds (see
 * elections.ts); until the epoch is bumped the replica follows no one.
 */
import { silentLogger, type Clock, type Logger } from '../../src/core/index.ts';
import type { CellHost, Partition } from '../../src/broker/index.ts';
import type { CellView, StateEntry } from './cell-view.ts';

/** What the cell gives the partitions it manages (the lease check and ISR writes). */
export interface ReplicaHooks {
  canLead(): boolean;
  changeIsr(p: Partition, isr: number[]): Promise<boolean>;
}

/** Settings and collaborators of a StateApplier. */
export interface StateApplierOptions {
  view: CellView;
  clock: Clock;
  logger?: Logger;
  hooks: ReplicaHooks;
  /** Whether this incarnation leads the partition in the entry's epoch. */
  holdsEpoch(topic: string, partition: number, entry: StateEntry): boolean;
}

/** Applies the view to one broker's replicas. */
export class StateApplier {
  private host: CellHost | null = null;
  private readonly topics = new Set<string>();
  /** Partitions to apply, as `[topic, index]` under a `topic\0index` key. */
  private readonly partitions = new Map<string, [string, number]>();
  private running: Promise<void> | null = null;
  private readonly waiters = new Set<() => void>();
  private readonly logger: Logger;

  constructor(private readonly o: StateApplierOptions) {
    this.logger = o.logger ?? silentLogger;
  }

  /** Starts applying to `host`. */
  attach(host: CellHost): void {
    this.host = host;
  }

  markTopic(name: string): void {
    this.topics.add(name);
    this.kick();
  }

  markPartition(topic: string, partition: number): void {
    this.partitions.set(`${topic}\u0000${partition}`, [topic, partition]);
    this.kick();
  }

  /** Every topic the view has, and every local topic it no longer has. */
  markAll(): void {
    for (const name of this.o.view.topics.keys()) this.topics.add(name);
    for (const t of this.host?.topics.list({ includeInternal: true }) ?? []) this.topics.add(t.record.name);
    this.kick();
  }

  /** Resolves once nothing is left to apply. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Resolves once `cond` holds after some step, or after `msMax`. */
  waitFor(cond: () => boolean, msMax: number): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.waiters.delete(check);
        timer.cancel();
        resolve();
      };
      const check = (): void => {
        if (cond()) done();
      };
      const timer = this.o.clock.setTimeout(done, msMax);
      this.waiters.add(check);
    });
  }

  private kick(): void {
    if (this.running || !this.host) return;
    // Started on a microtask, so `running` is set before any step runs: a mark made from inside
    // a step (a role-change callback) joins this loop instead of starting a second one.
    this.running = Promise.resolve()
      .then(() => this.drain())
      .finally(() => {
        this.running = null;
        // Marks made after the loop's last look are picked up by a new loop.
        if (this.topics.size > 0 || this.partitions.size > 0) this.kick();
      });
  }

  private async drain(): Promise<void> {
    const host = this.host!;
    for (;;) {
      const name = first(this.topics);
      if (name !== undefined) {
        this.topics.delete(name);
        await this.applyTopic(host, name).catch((err: unknown) => this.logger.error({ err, topic: name }, 'applying a topic from the cell failed'));
      } else {
        const key = first(this.partitions.keys());
        if (key === undefined) return;
        const [topic, index] = this.partitions.get(key)!;
        this.partitions.delete(key);
        try {
          this.applyState(host, topic, index);
        } catch (err) {
          this.logger.error({ err, topic, partition: index }, 'applying a partition state failed');
        }
      }
      for (const check of [...this.waiters]) check();
    }
  }

  private async applyTopic(host: CellHost, name: string): Promise<void> {
    const t = this.o.view.topics.get(name);
    if (!t) {
      await host.topics.removeTopic(name);
      return;
    }
    await host.topics.applyTopic(t.rec);
    for (let p = 0; p < t.rec.partitions; p++) this.partitions.set(`${name}\u0000${p}`, [name, p]);
  }

  /** Brings the local replica's role in line with the partition's state. */
  private applyState(host: CellHost, topic: string, index: number): void {
    const entry = this.o.view.state(topic, index);
    const local = host.topics.get(topic);
    const p = local?.partitions[index];
    // Gone, not here, or the local topic is another incarnation still being replaced.
    if (!entry || !p || local!.record.id !== this.o.view.topics.get(topic)?.rec.id) return;
    p.setHooks(this.o.hooks);
    const { state } = entry;
    const me = host.brokerId;
    if (state.leader === me && this.o.holdsEpoch(topic, index, entry)) {
      if (p.role !== 'leader' || p.leaderEpoch !== state.leaderEpoch) {
        p.becomeLeader(state.leaderEpoch, state.isr, state.replicas);
        this.logger.info({ topic, partition: index, epoch: state.leaderEpoch, isr: state.isr }, 'leading');
        host.onRoleChange(p);
      } else {
        p.setIsr(state.isr);
      }
      return;
    }
    // Led by another broker, by no one, or named us in an earlier incarnation's epoch (then no
    // one leads here until the epoch is bumped).
    const leader = state.leader === me ? -1 : state.leader;
    if (p.role !== 'follower' || p.leaderId !== leader || p.leaderEpoch !== state.leaderEpoch) {
      p.becomeFollower(leader, state.leaderEpoch, state.isr, state.replicas);
      if (leader >= 0) this.logger.info({ topic, partition: index, leader, epoch: state.leaderEpoch }, 'following');
      host.onRoleChange(p);
    } else {
      p.isr = [...state.isr];
    }
  }
}

function first<T>(items: Iterable<T>): T | undefined {
  for (const x of items) return x;
  return undefined;
}
