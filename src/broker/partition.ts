/**
 * One partition replica on this broker: its log, producer state, leader-epoch history, and its
 * role in the partition's replica set.
 *
 * As **leader** it takes produce requests while its lease says it may lead, tracks how far each
 * follower has fetched, and moves the high watermark (HW) to the lowest log end offset across the
 * in-sync replicas (ISR); consumers read only below the HW, and `acks=all` answers once the HW has
 * passed the batch. As **follower** it appends the leader's batches as they are (offsets and
 * epochs kept) and learns the HW from the leader. A single broker is a cell of one: leader, ISR
 * of one, HW = log end offset.
 */
import { EdgeqError, systemClock, type Clock } from '../core/index.ts';
import {
  compressionName,
  readBatchHeader,
  splitBatches,
  validateBatchHeader,
  type AppendResult,
  type PartitionLog,
  type ReadResult,
  type Storage,
} from '../log/index.ts';
import { LeaderEpochCache } from './leader-epoch-cache.ts';
import { ProducerState } from './producer-state.ts';
import type { TopicSettings } from './topic-config.ts';

export type ReplicaRole = 'leader' | 'follower' | 'offline';

/** Options of one produce to a partition. */
export interface PartitionProduceOptions {
  /** The epoch the producer believes in; -1, null or undefined skip the check. */
  leaderEpoch?: number | null;
  /** 'all' waits for the ISR; 'leader' answers after the local append. */
  acks?: 'all' | 'leader';
  /** Bound on the wait for the ISR under acks=all. */
  timeoutMs?: number;
}

/** What the partition asks of the cell around it. */
export interface PartitionHooks {
  /** True while this broker's lease allows it to lead (Patroni's rule: stop before it expires). */
  canLead(): boolean;
  /** Asks the arbiter to change the ISR (compare-and-set); resolves true once it took effect. */
  changeIsr(p: Partition, isr: number[]): Promise<boolean>;
}

const SOLO_HOOKS: PartitionHooks = { canLead: () => true, changeIsr: async () => true };

interface FollowerState {
  /** The follower's log end offset, as its last fetch said. */
  logEndOffset: number;
  /** Last time the follower was known to hold everything the leader had then. */
  caughtUpAtMs: number;
  /** The leader's log end offset and the time at the follower's previous fetch. */
  prevFetchLeaderEnd: number;
  prevFetchAtMs: number;
}

interface AckWaiter {
  offset: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A partition replica hosted by this broker. */
export class Partition {
  role: ReplicaRole = 'leader';
  leaderId: number;
  isr: number[];
  replicas: number[];
  private hw: number;
  private readonly followers = new Map<number, FollowerState>();
  private readonly ackWaiters: AckWaiter[] = [];
  private readonly listeners = new Set<() => void>();
  private hooks: PartitionHooks = SOLO_HOOKS;
  private isrChangeInFlight = false;
  private readonly clock: Clock;
  private readonly storage: Storage;
  readonly topic: string;
  readonly index: number;
  readonly log: PartitionLog;
  readonly producers: ProducerState;
  readonly epochs: LeaderEpochCache;
  readonly brokerId: number;
  leaderEpoch: number;
  settings: TopicSettings;

  constructor(o: {
    topic: string;
    index: number;
    log: PartitionLog;
    producers: ProducerState;
    epochs: LeaderEpochCache;
    leaderEpoch: number;
    settings: TopicSettings;
    brokerId: number;
    storage: Storage;
    clock?: Clock;
  }) {
    this.topic = o.topic;
    this.index = o.index;
    this.log = o.log;
    this.producers = o.producers;
    this.epochs = o.epochs;
    this.leaderEpoch = o.leaderEpoch;
    this.settings = o.settings;
    this.brokerId = o.brokerId;
    this.storage = o.storage;
    this.clock = o.clock ?? systemClock;
    const { log, producers, brokerId, epochs, leaderEpoch } = o;
    this.leaderId = brokerId;
    this.isr = [brokerId];
    this.replicas = [brokerId];
    this.hw = log.logEndOffset;
    log.setAppendGuard(producers);
    log.onAppend(() => this.onLocalAppend());
    epochs.assign(leaderEpoch, log.logEndOffset);
  }

  /** Installs the cell's hooks (lease check, ISR changes). */
  setHooks(hooks: PartitionHooks): void {
    this.hooks = hooks;
  }

  get highWatermark(): number {
    return this.hw;
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  get logEndOffset(): number {
    return this.log.logEndOffset;
  }

  /** Called on every append and HW move (long polls wake on it). */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  // ---------------------------------------------------------------------------------------------
  // Roles

  /** Makes this replica the leader of `epoch` with the given ISR. */
  becomeLeader(epoch: number, isr: number[], replicas: number[]): void {
    const now = this.clock.monotonicMs();
    const wasLeaderOfEpoch = this.role === 'leader' && this.leaderEpoch === epoch;
    this.role = 'leader';
    this.leaderId = this.brokerId;
    this.leaderEpoch = epoch;
    this.isr = [...isr];
    this.replicas = [...replicas];
    if (!wasLeaderOfEpoch) {
      // The new epoch starts at our log end; followers get a full lag window to reach us.
      this.epochs.assign(epoch, this.log.logEndOffset);
      void this.epochs.save().catch(() => undefined);
      this.followers.clear();
      for (const r of replicas) if (r !== this.brokerId) this.followers.set(r, { logEndOffset: -1, caughtUpAtMs: now, prevFetchLeaderEnd: -1, prevFetchAtMs: now });
    }
    this.hw = Math.min(this.hw, this.log.logEndOffset);
    this.recomputeHw();
  }

  /** Makes this replica a follower of `leaderId` in `epoch`; pending acks=all fail. */
  becomeFollower(leaderId: number, epoch: number, isr: number[], replicas: number[]): void {
    this.role = 'follower';
    this.leaderId = leaderId;
    this.leaderEpoch = epoch;
    this.isr = [...isr];
    this.replicas = [...replicas];
    this.followers.clear();
    this.failWaiters(this.notLeader());
  }

  /** Takes the replica out of service (topic deleted, no longer assigned here). */
  goOffline(): void {
    this.role = 'offline';
    this.failWaiters(this.notLeader());
  }

  /** Updates the ISR as the arbiter now says (after a change by this leader or another). */
  setIsr(isr: number[]): void {
    this.isr = [...isr];
    this.recomputeHw();
  }

  private notLeader(): EdgeqError {
    return new EdgeqError('NOT_LEADER', `broker ${this.brokerId} does not lead ${this.topic}-${this.index}`, {
      details: { topic: this.topic, partition: this.index, leaderId: this.leaderId, leaderEpoch: this.leaderEpoch },
    });
  }

  /** Throws unless this replica leads and may take writes now. */
  private checkLeader(): void {
    if (this.role !== 'leader') throw this.notLeader();
    if (!this.hooks.canLead()) {
      // Patroni's rule: a leader that cannot renew its lease stops writing before it expires, so
      // a successor elected after the expiry never overlaps with it.
      throw new EdgeqError('ARBITER_UNAVAILABLE', `broker ${this.brokerId} cannot renew its arbiter lease: it stopped taking writes for ${this.topic}-${this.index}`, {
        details: { topic: this.topic, partition: this.index, reason: 'lease' },
      });
    }
  }

  /** Throws FENCED_LEADER_EPOCH for an older epoch, LEADER_NOT_AVAILABLE for a newer one. */
  checkEpoch(epoch: number | null | undefined): void {
    if (epoch === undefined || epoch === null || epoch < 0 || epoch === this.leaderEpoch) return;
    if (epoch < this.leaderEpoch) {
      throw new EdgeqError('FENCED_LEADER_EPOCH', `${this.topic}-${this.index}: epoch ${epoch} is older than the leader's ${this.leaderEpoch}`, {
        details: { topic: this.topic, partition: this.index, epoch, leaderEpoch: this.leaderEpoch },
      });
    }
    throw new EdgeqError('LEADER_NOT_AVAILABLE', `${this.topic}-${this.index}: epoch ${epoch} is newer than this broker knows (${this.leaderEpoch})`, {
      details: { topic: this.topic, partition: this.index, epoch, leaderEpoch: this.leaderEpoch },
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Leader side

  /**
   * Appends the one batch a producer sent for this partition. The checks here are the topic's
   * policy and the ISR rule; the log checks the batch itself (CRC, lengths, size) and the producer
   * state checks sequences, all without writing anything on failure.
   */
  async produce(records: Uint8Array, options: PartitionProduceOptions = {}): Promise<AppendResult> {
    this.checkEpoch(options.leaderEpoch);
    this.checkLeader();
    const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
    const batches = splitBatches(buf);
    const covered = batches.reduce((n, b) => n + b.length, 0);
    if (batches.length === 0 || covered !== buf.length) {
      throw new EdgeqError('CORRUPT_BATCH', `${this.topic}-${this.index}: the records field is not one whole batch (${buf.length} bytes)`, {
        details: { topic: this.topic, partition: this.index },
      });
    }
    if (batches.length > 1) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: send one batch per partition per request, got ${batches.length}`);
    }
    const batch = batches[0]!;
    const header = validateBatchHeader(batch, this.settings.log);
    const codec = compressionName(header.codec);
    if (codec === undefined || !this.settings.compressionAllowed.includes(codec)) {
      throw new EdgeqError('UNSUPPORTED_COMPRESSION', `${this.topic} does not allow ${codec ?? `codec ${header.codec}`} batches`, {
        details: { topic: this.topic, codec: codec ?? header.codec, allowed: this.settings.compressionAllowed },
      });
    }
    const all = options.acks !== 'leader';
    if (all) this.checkMinIsr('before the append');
    const result = await this.log.append(batch, { leaderEpoch: this.leaderEpoch });
    if (!all) return result;
    await this.waitForHw(result.lastOffset + 1, options.timeoutMs ?? 30_000);
    return result;
  }

  private checkMinIsr(when: string): void {
    if (this.isr.length < this.settings.minInsyncReplicas) {
      throw new EdgeqError(
        'NOT_ENOUGH_REPLICAS',
        `${this.topic}-${this.index} has ${this.isr.length} in-sync replicas, min.insync.replicas is ${this.settings.minInsyncReplicas} (${when})`,
        { details: { topic: this.topic, partition: this.index, isr: this.isr, minInsyncReplicas: this.settings.minInsyncReplicas } },
      );
    }
  }

  /** Resolves once the HW reaches `offset` while this broker still leads. */
  private waitForHw(offset: number, timeoutMs: number): Promise<void> {
    if (this.hw >= offset) return this.ackCheck();
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        const i = this.ackWaiters.indexOf(w);
        if (i >= 0) this.ackWaiters.splice(i, 1);
        reject(
          new EdgeqError('REQUEST_TIMED_OUT', `${this.topic}-${this.index}: the in-sync replicas did not confirm offset ${offset - 1} within ${timeoutMs} ms`, {
            details: { topic: this.topic, partition: this.index, isr: this.isr },
          }),
        );
      }, timeoutMs);
      const w: AckWaiter = {
        offset,
        resolve: () => {
          timer.cancel();
          this.ackCheck().then(resolve, reject);
        },
        reject: (e) => {
          timer.cancel();
          reject(e);
        },
      };
      this.ackWaiters.push(w);
    });
  }

  /** The last word before an acks=all answer: still the leader, lease valid, ISR big enough. */
  private async ackCheck(): Promise<void> {
    this.checkLeader();
    this.checkMinIsr('after the append');
  }

  private failWaiters(err: unknown): void {
    for (const w of this.ackWaiters.splice(0)) w.reject(err);
  }

  /** A follower fetched from `fetchOffset`: it holds everything below it. */
  recordFollowerFetch(followerId: number, fetchOffset: number): void {
    if (this.role !== 'leader') return;
    const now = this.clock.monotonicMs();
    const end = this.log.logEndOffset;
    const f = this.followers.get(followerId) ?? { logEndOffset: -1, caughtUpAtMs: now, prevFetchLeaderEnd: -1, prevFetchAtMs: now };
    f.logEndOffset = fetchOffset;
    // Kafka's rule: caught up now if it has everything; otherwise, if it has everything the leader
    // had at its previous fetch, it was caught up then. Under steady writes a healthy follower is
    // never exactly at the end, yet never falls behind either.
    if (fetchOffset >= end) f.caughtUpAtMs = now;
    else if (f.prevFetchLeaderEnd >= 0 && fetchOffset >= f.prevFetchLeaderEnd) f.caughtUpAtMs = Math.max(f.caughtUpAtMs, f.prevFetchAtMs);
    f.prevFetchLeaderEnd = end;
    f.prevFetchAtMs = now;
    this.followers.set(followerId, f);
    if (!this.isr.includes(followerId) && fetchOffset >= this.hw && this.replicas.includes(followerId)) {
      void this.proposeIsr([...this.isr, followerId].sort((a, b) => a - b));
    }
    this.recomputeHw();
  }

  /** Shrinks the ISR by followers that have not caught up within `lagMsMax`. */
  checkIsrLag(lagMsMax: number): void {
    if (this.role !== 'leader') return;
    const now = this.clock.monotonicMs();
    const lagging = this.isr.filter((id) => {
      if (id === this.brokerId) return false;
      const f = this.followers.get(id);
      return !f || now - f.caughtUpAtMs > lagMsMax;
    });
    if (lagging.length > 0) void this.proposeIsr(this.isr.filter((id) => !lagging.includes(id)));
  }

  private async proposeIsr(isr: number[]): Promise<void> {
    if (this.isrChangeInFlight) return;
    this.isrChangeInFlight = true;
    try {
      // The arbiter decides first; the new ISR takes effect here only once it is written there.
      if (await this.hooks.changeIsr(this, isr)) this.setIsr(isr);
    } catch {
      // Retried by the next fetch or lag check.
    } finally {
      this.isrChangeInFlight = false;
    }
  }

  private onLocalAppend(): void {
    if (this.role === 'leader') this.recomputeHw();
    else this.emit();
  }

  private recomputeHw(): void {
    if (this.role !== 'leader') return;
    let hw = this.log.logEndOffset;
    for (const id of this.isr) {
      if (id === this.brokerId) continue;
      const f = this.followers.get(id);
      hw = Math.min(hw, f ? Math.max(f.logEndOffset, 0) : this.hw);
    }
    this.advanceHw(hw);
  }

  private advanceHw(hw: number): void {
    if (hw > this.hw) {
      this.hw = hw;
      const ready = this.ackWaiters.filter((w) => w.offset <= hw);
      if (ready.length > 0) {
        const rest = this.ackWaiters.filter((w) => w.offset > hw);
        this.ackWaiters.length = 0;
        this.ackWaiters.push(...rest);
        for (const w of ready) w.resolve();
      }
    }
    this.emit();
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }

  // ---------------------------------------------------------------------------------------------
  // Follower side

  /** Appends batches fetched from the leader, keeping their offsets and epochs. */
  async appendAsFollower(records: Uint8Array, leaderHw: number): Promise<void> {
    const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
    const appends: Promise<AppendResult>[] = [];
    for (const b of splitBatches(buf)) {
      const h = readBatchHeader(b);
      if (h.baseOffset + h.lastOffsetDelta < this.log.logEndOffset) continue; // already held
      this.epochs.assign(h.partitionLeaderEpoch, h.baseOffset);
      // The leader walked the records before accepting them; the CRC check that still runs proves
      // these are the same bytes, so the follower skips the walk (and any decompression).
      appends.push(this.log.append(b, { assignOffsets: false, validateRecords: false }));
    }
    await Promise.all(appends);
    await this.epochs.save();
    this.setFollowerHw(leaderHw);
  }

  /** The leader's HW, capped by what this replica holds. */
  setFollowerHw(leaderHw: number): void {
    const hw = Math.min(leaderHw, this.log.logEndOffset);
    if (hw !== this.hw) {
      this.hw = hw;
      this.emit();
    }
  }

  /** Truncates a divergent tail (to where the leader says our last epoch ends). */
  async truncateTo(offset: number): Promise<void> {
    if (offset >= this.log.logEndOffset) return;
    await this.log.truncateTo(offset);
    this.epochs.truncateFrom(this.log.logEndOffset);
    await this.epochs.save();
    this.hw = Math.min(this.hw, this.log.logEndOffset);
    // The producer state saw the dropped batches: rebuild it from what is left.
    await this.producers.rebuild(this.log, this.storage);
  }

  /** Starts over empty at `offset` (we fell below the leader's log start). */
  async resetTo(offset: number): Promise<void> {
    await this.log.resetTo(offset);
    this.epochs.clear();
    await this.epochs.save();
    this.hw = offset;
    await this.producers.rebuild(this.log, this.storage);
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** Reads stored batches from `offset`: below the HW for consumers, the whole log for replicas. */
  async read(offset: number, maxBytes: number, options: { leaderEpoch?: number | null; replica?: boolean } = {}): Promise<ReadResult> {
    this.checkEpoch(options.leaderEpoch);
    if (options.replica) {
      if (this.role !== 'leader') throw this.notLeader();
      return this.log.read(offset, maxBytes);
    }
    if (this.role !== 'leader') throw this.notLeader();
    return this.log.read(offset, maxBytes, { maxOffset: this.hw });
  }

  /** Writes the producer-state snapshot (at close, and now and then to bound rebuild time). */
  snapshotProducers(storage: Storage): Promise<void> {
    return this.producers.snapshot(storage, this.log.dir, this.log.logEndOffset);
  }
}
