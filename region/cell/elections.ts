/**
 * Who leads each partition, and every write of a partition's state:
 *
 * - **Elections.** When a partition's leader is gone (its broker key vanished with its lease), the
 *   candidates (candidates.ts) race to take over: new leader, epoch + 1. The preferred candidate
 *   goes at once, the others after `electionDelayMs` per rank; the revision check makes sure one
 *   wins.
 * - **Incarnations.** A broker leads a partition only in an epoch it claimed since it last
 *   registered (an election it won, an epoch bump), or in the initial epoch of a topic created
 *   after it registered. A state that names it leader in any other epoch comes from an earlier
 *   incarnation (a crash and restart within the lease TTL, or a lost lease): its log may differ
 *   from what it acknowledged then, so it bumps the epoch (same leader, epoch + 1: every follower
 *   re-validates its log against the new epoch, KIP-101) before serving, or, when the host says
 *   its replica is not eligible to lead, resigns so the others elect.
 * - **ISR changes** are made only by the current leader, in the epoch it holds.
 *
 * Every write is one transaction conditional on the partition key's revision and on the topic's
 * creation revision, so a write meant for a deleted (or deleted and re-created) topic changes
 * nothing, and of two writers on the same state only one wins.
 */
import { silentLogger, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import { parseTopicConfig, type PartitionState } from '../../src/broker/index.ts';
import type { Arbiter } from '../arbiter/index.ts';
import { electionCandidates } from './candidates.ts';
import type { CellKeys } from './cell-keys.ts';
import type { CellChange, CellView, StateEntry } from './cell-view.ts';

/** Settings and collaborators of Elections. */
export interface ElectionsOptions {
  arbiter: Arbiter;
  keys: CellKeys;
  view: CellView;
  clock: Clock;
  logger?: Logger;
  /** Extra wait per rank for candidates after the preferred one. */
  electionDelayMs: number;
  /** This broker's id. */
  brokerId(): number;
  /** Whether this broker may write now (lease valid, watch current). */
  canLead(): boolean;
  /** Whether this broker holds a replica of the partition. */
  hostsReplica(topic: string, partition: number): boolean;
  /** Whether the local replica may lead (the host's word). */
  isEligible(topic: string, partition: number): boolean;
  /** A write succeeded and was taken into the view. */
  onChange(change: CellChange): void;
}

/** The partition-state side of one broker's cell controller. */
export class Elections {
  private readonly timers = new Map<string, TimerHandle>();
  /**
   * Epoch held by this incarnation, per partition of one topic incarnation (see `heldKey`);
   * entries of topics that are gone are dropped by the sweep, so it is bounded by the partitions.
   */
  private readonly held = new Map<string, number>();
  private readonly reclaiming = new Map<string, Promise<void>>();
  /**
   * Partitions with a write of ours in flight. The watch may deliver the write before its answer
   * comes; until the answer says whose it is, the state is neither reclaimed nor written again.
   */
  private readonly writing = new Set<string>();
  private registeredRevision = Number.MAX_SAFE_INTEGER;
  private closed = false;
  private readonly logger: Logger;

  constructor(private readonly o: ElectionsOptions) {
    this.logger = o.logger ?? silentLogger;
  }

  /** A new incarnation registered at `revision`: no epoch claimed before counts any more. */
  newIncarnation(revision: number): void {
    this.held.clear();
    this.registeredRevision = revision;
  }

  /** Whether this incarnation may lead the partition in `entry`'s epoch (see the file comment). */
  holdsEpoch(topic: string, partition: number, entry: StateEntry): boolean {
    const t = this.o.view.topics.get(topic);
    if (!t) return false;
    const key = this.heldKey(topic, partition, t.createRevision);
    if (this.held.get(key) === entry.state.leaderEpoch) return true;
    if (entry.initial && t.createRevision > this.registeredRevision) {
      // No earlier incarnation can have led a topic created after this one registered.
      this.held.set(key, entry.state.leaderEpoch);
      return true;
    }
    return false;
  }

  /** A partition of one incarnation of its topic: a topic deleted and created again is another. */
  private heldKey(topic: string, partition: number, createRevision: number): string {
    return `${this.o.keys.partition(topic, partition)}@${createRevision}`;
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }

  /** The candidates for `topic`-`partition` as this broker sees the cell. */
  candidates(topic: string, partition: number, state: PartitionState): number[] {
    const rec = this.o.view.topics.get(topic)?.rec;
    const me = this.o.brokerId();
    return electionCandidates(state, {
      isLive: (id) => this.o.view.brokers.has(id),
      uncleanLeaderElection: rec ? parseTopicConfig(rec.config, {}).uncleanLeaderElection : false,
      // Our own replica's eligibility is the host's word; the others' is what they published.
      isEligible: (id) => (id === me ? this.o.isEligible(topic, partition) : this.o.view.recovering(topic, partition, id) === undefined),
      recoveryOf: (id) => this.o.view.recovering(topic, partition, id),
    });
  }

  /**
   * Looks at every partition: one that names this broker leader in an epoch it does not hold is
   * reclaimed; one without a live leader gets an election timer here if this broker is a
   * candidate.
   */
  sweep(): void {
    if (this.closed) return;
    const me = this.o.brokerId();
    const seen = new Set<string>();
    const heldSeen = new Set<string>();
    for (const { topic, partition, entry } of this.o.view.partitions()) {
      const key = this.o.keys.partition(topic, partition);
      seen.add(key);
      heldSeen.add(this.heldKey(topic, partition, this.o.view.topics.get(topic)!.createRevision));
      const { state } = entry;
      if (this.writing.has(key)) continue;
      if (state.leader === me && !this.holdsEpoch(topic, partition, entry)) {
        void this.reclaim(topic, partition);
        continue;
      }
      if (state.leader >= 0 && this.o.view.brokers.has(state.leader)) {
        this.cancel(key);
        continue;
      }
      if (!state.replicas.includes(me) || this.timers.has(key)) continue;
      const rank = this.candidates(topic, partition, state).indexOf(me);
      if (rank < 0) continue;
      this.timers.set(
        key,
        this.o.clock.setTimeout(() => {
          this.timers.delete(key);
          void this.elect(topic, partition);
        }, rank * this.o.electionDelayMs),
      );
    }
    for (const key of [...this.timers.keys()]) if (!seen.has(key)) this.cancel(key);
    for (const key of [...this.held.keys()]) if (!heldSeen.has(key)) this.held.delete(key);
  }

  /** Waits for the reclaims running now (start-up waits for them before the broker serves). */
  async settled(): Promise<void> {
    while (this.reclaiming.size > 0) await Promise.all(this.reclaiming.values());
  }

  /** Takes over a partition without a live leader, if this broker is still a candidate. */
  async elect(topic: string, partition: number): Promise<void> {
    const entry = this.o.view.state(topic, partition);
    if (!entry || this.closed || this.writing.has(this.o.keys.partition(topic, partition))) return;
    const { state } = entry;
    const me = this.o.brokerId();
    if (state.leader >= 0 && this.o.view.brokers.has(state.leader)) return;
    if (!this.candidates(topic, partition, state).includes(me)) return;
    // Without a valid lease and a current view we could not serve anyway.
    if (!this.o.canLead() || !this.o.hostsReplica(topic, partition)) return;
    const alive = state.isr.filter((id) => this.o.view.brokers.has(id) && state.replicas.includes(id));
    const isr = alive.includes(me) ? alive : [me, ...alive];
    const next: PartitionState = { leader: me, leaderEpoch: state.leaderEpoch + 1, isr, replicas: state.replicas };
    try {
      if (await this.write(topic, partition, entry, next, true)) {
        this.logger.info({ topic, partition, epoch: next.leaderEpoch, previous: state.leader, isr }, 'won the leader election');
      }
    } catch (err) {
      this.logger.warn({ code: toEdgeqError(err).code, topic, partition }, 'election attempt failed');
    }
  }

  /**
   * The state names this broker leader in an epoch of an earlier incarnation: bump the epoch
   * (eligible replica) or resign (not eligible: the others elect). Runs again on the next sweep
   * if it could not write now.
   */
  reclaim(topic: string, partition: number): Promise<void> {
    const key = this.o.keys.partition(topic, partition);
    const running = this.reclaiming.get(key);
    if (running || this.closed) return running ?? Promise.resolve();
    const run = this.reclaimNow(topic, partition).finally(() => this.reclaiming.delete(key));
    this.reclaiming.set(key, run);
    return run;
  }

  private async reclaimNow(topic: string, partition: number): Promise<void> {
    try {
      const entry = this.o.view.state(topic, partition);
      const me = this.o.brokerId();
      if (!entry || this.writing.has(this.o.keys.partition(topic, partition))) return;
      if (entry.state.leader !== me || this.holdsEpoch(topic, partition, entry) || !this.o.canLead()) return;
      const { state } = entry;
      if (this.o.hostsReplica(topic, partition) && this.o.isEligible(topic, partition)) {
        const next: PartitionState = { ...state, leaderEpoch: state.leaderEpoch + 1 };
        if (await this.write(topic, partition, entry, next, true)) {
          this.logger.info({ topic, partition, from: state.leaderEpoch, epoch: next.leaderEpoch }, 'leading again after a restart or a lost lease, in a new epoch');
        }
      } else {
        // Out of the ISR when someone else is in it: a replica that may have lost acknowledged
        // records is not in sync, and the others then elect among themselves without waiting.
        const isr = state.isr.length > 1 ? state.isr.filter((id) => id !== me) : state.isr;
        const next: PartitionState = { ...state, leader: -1, isr };
        if (await this.write(topic, partition, entry, next, false)) {
          this.logger.warn({ topic, partition, epoch: state.leaderEpoch, isr }, 'resigned leadership: the local replica is not eligible to lead');
        }
      }
    } catch (err) {
      this.logger.warn({ code: toEdgeqError(err).code, topic, partition }, 'could not take up or resign leadership; trying again on the next sweep');
    }
  }

  /** Compare-and-set of a partition's ISR by its leader in the epoch it holds; true when it took effect. */
  async changeIsr(replica: { topic: string; index: number; leaderEpoch: number }, isr: number[]): Promise<boolean> {
    const entry = this.o.view.state(replica.topic, replica.index);
    const me = this.o.brokerId();
    if (!entry || entry.state.leader !== me || entry.state.leaderEpoch !== replica.leaderEpoch) return false;
    if (this.writing.has(this.o.keys.partition(replica.topic, replica.index))) return false;
    if (!this.holdsEpoch(replica.topic, replica.index, entry) || !this.o.canLead()) return false;
    if (!isr.includes(me) || !isr.every((id) => entry.state.replicas.includes(id))) return false;
    const ok = await this.write(replica.topic, replica.index, entry, { ...entry.state, isr: [...isr] }, false);
    if (ok) this.logger.info({ topic: replica.topic, partition: replica.index, from: entry.state.isr, to: isr }, 'ISR changed');
    return ok;
  }

  private cancel(key: string): void {
    this.timers.get(key)?.cancel();
    this.timers.delete(key);
  }

  /**
   * Writes `next` if the partition is still at `expected` and its topic is the same incarnation;
   * on success the view takes it in at once (the watch repeats it later). `claim`: the epoch is
   * this incarnation's from now on (set before the view hears of it, so it is led at once).
   */
  private async write(topic: string, partition: number, expected: StateEntry, next: PartitionState, claim: boolean): Promise<boolean> {
    const t = this.o.view.topics.get(topic);
    if (!t) return false;
    const key = this.o.keys.partition(topic, partition);
    const value = Buffer.from(JSON.stringify(next));
    this.writing.add(key);
    let ok = false;
    try {
      const r = await this.o.arbiter.txn({
        compares: [
          { key, target: 'mod', revision: expected.modRevision },
          { key: this.o.keys.topic(topic), target: 'create', revision: t.createRevision },
        ],
        ops: [{ type: 'put', key, value }],
      });
      ok = r.ok;
      if (ok) {
        if (claim) this.held.set(this.heldKey(topic, partition, t.createRevision), next.leaderEpoch);
        this.o.view.ingest(key, value, r.revision);
      }
    } finally {
      this.writing.delete(key);
      // Applied again whatever came first, the answer or the watch's event: now it is known whose it is.
      this.o.onChange({ kind: 'partition', topic, partition });
    }
    return ok;
  }
}
