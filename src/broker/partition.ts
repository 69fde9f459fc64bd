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
 *
 * The HW is never taken from the log end on open: it starts from the broker's HW checkpoint (a
 * stale-low value is safe) and, on a leader, advances only from followers' fetches (Kafka's
 * `replication-offset-checkpoint` rule), so a leader restarted with a tail its followers never
 * received does not show that tail to consumers, nor answer an `acks=all` retry of it, before the
 * followers hold it. Every role change starts a new *generation*; work begun in one generation
 * (a follower append, a fetch response) changes nothing in a later one.
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
import { FollowerProgress } from './follower-progress.ts';
import { LeaderEpochCache } from './leader-epoch-cache.ts';
import { clearRecoveryMark, type RecoveryMark } from './recovery-mark.ts';
import { composeGuards, OriginState } from './origin-state.ts';
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
  /** This broker's region: an origin-tagged batch naming it is a loop (ORIGIN_IS_SELF). */
  region?: string;
  /** An applied batch's precondition on its origin's cursor (see OriginState.inspect). */
  originCursorExpected?: number;
  /** Told when the log append finished, before any wait for the ISR (tracing's append/commit split). */
  onAppended?: (r: AppendResult) => void;
}

/** What the partition asks of the cell around it. */
export interface PartitionHooks {
  /** True while this broker's lease allows it to lead (Patroni's rule: stop before it expires). */
  canLead(): boolean;
  /** Asks the arbiter to change the ISR (compare-and-set); resolves true once it took effect. */
  changeIsr(p: Partition, isr: number[]): Promise<boolean>;
}

/** Applied batches one produce may carry for one partition (a replicator's run; see produceApplied). */
export const PRODUCE_APPLIED_BATCHES_MAX = 1024;

const SOLO_HOOKS: PartitionHooks = { canLead: () => true, changeIsr: async () => true };

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
  private readonly followers = new FollowerProgress();
  private gen = 0;
  /** Follower appends, truncations and resets still running (a new leader term waits for them). */
  private followerOpsInFlight = 0;
  private followerOpsIdle: (() => void)[] = [];
  /** Set while a new leader term waits for follower work of the previous generation to finish. */
  private leaderReady: Promise<void> | null = null;
  /** Set while this replica may lack records it once held (recovery-mark.ts): it may not lead. */
  private recoveryMark: RecoveryMark | null = null;
  /** The leader's log end in the previous fetch answer, while recovering (-1: none yet). */
  private recoveryPrevLeaderEnd = -1;
  private readonly onRecovered: ((p: Partition, why: string) => void) | undefined;
  private readonly ackWaiters: AckWaiter[] = [];
  private readonly listeners = new Set<() => void>();
  private hooks: PartitionHooks = SOLO_HOOKS;
  private isrChangeInFlight = false;
  private readonly clock: Clock;
  private readonly storage: Storage;
  readonly topic: string;
  /** The topic's identity (its record id): a topic created again under the same name has another. */
  readonly topicId: string;
  readonly index: number;
  readonly log: PartitionLog;
  readonly producers: ProducerState;
  /** Per-origin cursors of records applied from other regions (global topics). */
  readonly origins: OriginState;
  readonly epochs: LeaderEpochCache;
  readonly brokerId: number;
  leaderEpoch: number;
  settings: TopicSettings;

  constructor(o: {
    topic: string;
    /** The topic record's id; empty where none is known. */
    topicId?: string;
    index: number;
    log: PartitionLog;
    producers: ProducerState;
    /** Rebuilt from `log` by the caller; absent: an empty one (a log without origin batches). */
    origins?: OriginState;
    epochs: LeaderEpochCache;
    leaderEpoch: number;
    settings: TopicSettings;
    brokerId: number;
    storage: Storage;
    clock?: Clock;
    /** The high watermark from the broker's checkpoint; absent: the log start (safe, stale-low). */
    highWatermark?: number;
    /**
     * The partition's replicas when it lives in a cell: it then starts as a follower of nobody,
     * waiting for the arbiter's word. Absent: a lone broker's partition, its own leader and ISR.
     */
    cellReplicas?: number[];
    /** The replica may lack records it once held (its durable mark); see `recovering`. */
    recovering?: RecoveryMark | null;
    /** Called once the replica is no longer recovering (caught up, or elected), with why. */
    onRecovered?: (p: Partition, why: string) => void;
  }) {
    this.topic = o.topic;
    this.topicId = o.topicId ?? '';
    this.index = o.index;
    this.log = o.log;
    this.producers = o.producers;
    this.origins = o.origins ?? new OriginState(o.clock ? { clock: o.clock } : {});
    this.epochs = o.epochs;
    this.leaderEpoch = o.leaderEpoch;
    this.settings = o.settings;
    this.brokerId = o.brokerId;
    this.storage = o.storage;
    this.clock = o.clock ?? systemClock;
    this.recoveryMark = o.recovering ?? null;
    this.onRecovered = o.onRecovered;
    const { log, producers, brokerId, epochs, leaderEpoch } = o;
    this.leaderId = brokerId;
    this.isr = [brokerId];
    this.replicas = [brokerId];
    this.hw = Math.min(Math.max(o.highWatermark ?? log.logStartOffset, log.logStartOffset), log.logEndOffset);
    log.setAppendGuard(composeGuards(this.origins, producers));
    log.onAppend(() => this.onLocalAppend());
    if (o.cellReplicas) {
      this.role = 'follower';
      this.leaderId = -1;
      this.isr = [];
      this.replicas = [...o.cellReplicas];
      return;
    }
    // A lone broker starts a new leader term at every start and is its own ISR: its HW is its
    // log end at once.
    epochs.assign(leaderEpoch, log.logEndOffset);
    this.recomputeHw();
  }

  /** Bumped at every role change: work started in an older generation must not act. */
  get generation(): number {
    return this.gen;
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

  /**
   * Makes this replica the leader of `epoch` with the given ISR. When follower work of the
   * previous generation is still running (an append of the old leader's batches), the new term's
   * start offset is taken once it has finished, and produce waits for it: the epoch then starts
   * after the last batch of the previous one, never in the middle of it.
   */
  becomeLeader(epoch: number, isr: number[], replicas: number[]): void {
    const now = this.clock.monotonicMs();
    const wasLeaderOfEpoch = this.role === 'leader' && this.leaderEpoch === epoch;
    this.role = 'leader';
    this.leaderId = this.brokerId;
    this.leaderEpoch = epoch;
    this.isr = [...isr];
    this.replicas = [...replicas];
    // Elected while recovering (the only replica, unclean election, or every replica recovering):
    // this log is the partition's truth from now on.
    this.clearRecovering('became leader');
    if (!wasLeaderOfEpoch) {
      const gen = ++this.gen;
      this.followers.reset(replicas.filter((r) => r !== this.brokerId), now);
      const start = () => {
        if (this.gen !== gen) return;
        this.epochs.assign(epoch, this.log.logEndOffset);
        void this.epochs.save().catch(() => undefined);
        this.hw = Math.min(this.hw, this.log.logEndOffset);
        this.recomputeHw();
      };
      if (this.followerOpsInFlight === 0) {
        this.leaderReady = null;
        start();
      } else {
        const ready = new Promise<void>((resolve) => this.followerOpsIdle.push(resolve)).then(start);
        this.leaderReady = ready;
        void ready.finally(() => {
          if (this.leaderReady === ready) this.leaderReady = null;
        });
      }
      return;
    }
    this.hw = Math.min(this.hw, this.log.logEndOffset);
    this.recomputeHw();
  }

  /**
   * Why this replica may lack records it once held (an unclean shutdown, a tail cut by recovery),
   * or null. A recovering replica is not eligible to lead until it has caught up with a leader.
   */
  get recovering(): RecoveryMark | null {
    return this.recoveryMark;
  }

  /**
   * A follower's fetch from the leader of `generation` was answered with the leader's log end:
   * a recovering replica has caught up once it holds everything the leader held at the previous
   * answer (Kafka's caught-up rule), or at this one. Its mark is removed then.
   */
  noteLeaderEnd(leaderLogEnd: number, generation: number): void {
    if (!this.recoveryMark || this.role !== 'follower' || this.gen !== generation || leaderLogEnd < 0) return;
    const end = this.log.logEndOffset;
    if (end >= leaderLogEnd || (this.recoveryPrevLeaderEnd >= 0 && end >= this.recoveryPrevLeaderEnd)) {
      this.clearRecovering('caught up with its leader');
      return;
    }
    this.recoveryPrevLeaderEnd = leaderLogEnd;
  }

  private clearRecovering(why: string): void {
    if (!this.recoveryMark) return;
    this.recoveryMark = null;
    this.recoveryPrevLeaderEnd = -1;
    // Removed durably in the background: a crash before that leaves the mark, which is safe.
    void clearRecoveryMark(this.storage, this.log.dir).catch(() => undefined);
    this.onRecovered?.(this, why);
  }

  /** Where the current leader term starts in the log. */
  get epochStartOffset(): number {
    return this.epochs.startOffsetOf(this.leaderEpoch) ?? this.log.logEndOffset;
  }

  /**
   * Where `epoch` ends in this leader's log (OffsetForLeaderEpoch); LEADER_NOT_AVAILABLE while a
   * new term is still waiting to take its start offset.
   */
  endOffsetForEpoch(epoch: number): { epoch: number; endOffset: number } {
    if (this.role !== 'leader') throw this.notLeader();
    if (this.leaderReady) {
      throw new EdgeqError('LEADER_NOT_AVAILABLE', `${this.topic}-${this.index}: the leader of epoch ${this.leaderEpoch} is still taking over`, {
        details: { topic: this.topic, partition: this.index, leaderEpoch: this.leaderEpoch },
      });
    }
    return this.epochs.endOffsetFor(epoch, this.log.logEndOffset);
  }

  /** Makes this replica a follower of `leaderId` in `epoch`; pending acks=all fail. */
  becomeFollower(leaderId: number, epoch: number, isr: number[], replicas: number[]): void {
    if (this.role !== 'follower' || this.leaderId !== leaderId || this.leaderEpoch !== epoch) this.gen++;
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
    this.gen++;
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
    if (batches.length > 1) return this.produceApplied(batches, options);
    const batch = batches[0]!;
    this.checkBatch(batch, options);
    const all = options.acks !== 'leader';
    if (all) this.checkMinIsr('before the append');
    await this.readyToLead(options);
    const result = await this.log.append(batch, { leaderEpoch: this.leaderEpoch, ...(options.originCursorExpected !== undefined ? { originCursorExpected: options.originCursorExpected } : {}) });
    options.onAppended?.(result);
    if (!all) return result;
    await this.waitForHw(result.lastOffset + 1, options.timeoutMs ?? 30_000);
    return result;
  }

  /**
   * Several batches for one partition: only a replicator's run of applied batches of one origin,
   * with the cursor the first expects. Each is appended conditional on the one before (the same
   * write group, so one fsync), so the run lands as a prefix: if one is refused, none after it is
   * written. The answer spans the batches written; it is the first refusal when there is one.
   */
  private async produceApplied(batches: Buffer[], options: PartitionProduceOptions): Promise<AppendResult> {
    if (options.originCursorExpected === undefined) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: send one batch per partition per request, got ${batches.length}`);
    }
    if (batches.length > PRODUCE_APPLIED_BATCHES_MAX) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: a run of applied batches holds at most ${PRODUCE_APPLIED_BATCHES_MAX}, got ${batches.length}`);
    }
    const headers = batches.map((b) => this.checkBatch(b, options));
    const origin = headers[0]!.originRegion;
    if (origin === null || headers.some((h) => h.originRegion !== origin)) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: send one batch per partition per request (several only as a run of applied batches of one origin with origin_cursor_expected), got ${batches.length}`);
    }
    const all = options.acks !== 'leader';
    if (all) this.checkMinIsr('before the append');
    await this.readyToLead(options);
    let expected: number = options.originCursorExpected;
    const appends = batches.map((b, i) => {
      const h = headers[i]!;
      const p = this.log.append(b, { leaderEpoch: this.leaderEpoch, originCursorExpected: expected });
      expected = Math.max(expected, h.originOffset + h.lastOffsetDelta);
      return p;
    });
    const settled = await Promise.allSettled(appends);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const written = settled.filter((r): r is PromiseFulfilledResult<AppendResult> => r.status === 'fulfilled').map((r) => r.value);
    if (written.length > 0) options.onAppended?.(written[0]!);
    if (all && written.length > 0) await this.waitForHw(Math.max(...written.map((w) => w.lastOffset)) + 1, options.timeoutMs ?? 30_000);
    if (failed) throw failed.reason;
    return {
      baseOffset: Math.min(...written.map((w) => w.baseOffset)),
      lastOffset: Math.max(...written.map((w) => w.lastOffset)),
      appendTimeMs: written[0]!.appendTimeMs,
      ...(written.every((w) => w.duplicate) ? { duplicate: true } : {}),
    };
  }

  /** The topic's policy for one batch: its header, codec and origin. */
  private checkBatch(batch: Buffer, options: PartitionProduceOptions): ReturnType<typeof validateBatchHeader> {
    const header = validateBatchHeader(batch, this.settings.log);
    const codec = compressionName(header.codec);
    if (codec === undefined || !this.settings.compressionAllowed.includes(codec)) {
      throw new EdgeqError('UNSUPPORTED_COMPRESSION', `${this.topic} does not allow ${codec ?? `codec ${header.codec}`} batches`, {
        details: { topic: this.topic, codec: codec ?? header.codec, allowed: this.settings.compressionAllowed },
      });
    }
    if (header.originRegion !== null) this.checkOrigin(header.originRegion, options.region);
    return header;
  }

  /** Waits out a leader term still starting, and checks it is still ours. */
  private async readyToLead(options: PartitionProduceOptions): Promise<void> {
    if (this.leaderReady) {
      await this.leaderReady;
      this.checkEpoch(options.leaderEpoch);
      this.checkLeader();
    }
  }

  /**
   * Only a global topic takes records applied from another region, and never ones naming this
   * region as their origin: that would be this region's own writes coming back (a loop).
   */
  private checkOrigin(origin: string, region: string | undefined): void {
    if (this.settings.scope !== 'global') {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic} is a ${this.settings.scope} topic: only global topics take batches with an origin region (this one names ${origin})`, {
        details: { topic: this.topic, partition: this.index, origin, scope: this.settings.scope },
      });
    }
    if (region !== undefined && origin === region) {
      throw new EdgeqError('ORIGIN_IS_SELF', `${this.topic}-${this.index}: the batch names this region (${region}) as its origin: its own records cannot be applied to it again`, {
        details: { topic: this.topic, partition: this.index, origin, region },
      });
    }
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

  /**
   * A follower fetched from `fetchOffset` in `epoch`: it claims to hold everything below it. The
   * claim moves the HW and answers `acks=all` waiters, so it is checked first, and a fetch that
   * fails a check changes nothing: this replica must lead the epoch the follower names (and have
   * taken its start offset), the follower must be one of the partition's other replicas, and the
   * offset must lie within this log (past the end: the follower has a divergent tail and must
   * truncate; before the start: it must reset). Errors are typed for the follower to act on.
   */
  recordFollowerFetch(followerId: number, fetchOffset: number, epoch: number | null | undefined): void {
    if (this.role !== 'leader') throw this.notLeader();
    if (epoch === undefined || epoch === null || epoch < 0) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: a replica fetch must name the leader epoch it follows`, {
        details: { topic: this.topic, partition: this.index, replicaId: followerId },
      });
    }
    this.checkEpoch(epoch);
    if (this.leaderReady) {
      throw new EdgeqError('LEADER_NOT_AVAILABLE', `${this.topic}-${this.index}: the leader of epoch ${this.leaderEpoch} is still taking over`, {
        details: { topic: this.topic, partition: this.index, leaderEpoch: this.leaderEpoch },
      });
    }
    if (followerId === this.brokerId || !this.replicas.includes(followerId)) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: broker ${followerId} is not a follower replica (replicas ${this.replicas.join(',')})`, {
        details: { topic: this.topic, partition: this.index, replicaId: followerId, replicas: this.replicas },
      });
    }
    const end = this.log.logEndOffset;
    if (!Number.isSafeInteger(fetchOffset) || fetchOffset < this.log.logStartOffset || fetchOffset > end) {
      throw new EdgeqError('OFFSET_OUT_OF_RANGE', `${this.topic}-${this.index}: replica fetch offset ${fetchOffset} is outside [${this.log.logStartOffset}, ${end}]`, {
        details: { topic: this.topic, partition: this.index, offset: fetchOffset, logStartOffset: this.log.logStartOffset, logEndOffset: end },
      });
    }
    this.followers.record(followerId, fetchOffset, end, this.clock.monotonicMs());
    if (!this.isr.includes(followerId) && FollowerProgress.mayJoin(fetchOffset, { highWatermark: this.hw, epochStartOffset: this.epochStartOffset })) {
      void this.proposeIsr([...this.isr, followerId].sort((a, b) => a - b));
    }
    this.recomputeHw();
  }

  /** Shrinks the ISR by followers that have not caught up within `lagMsMax`. */
  checkIsrLag(lagMsMax: number): void {
    if (this.role !== 'leader') return;
    const lagging = this.followers.lagging(this.isr, this.brokerId, this.clock.monotonicMs(), lagMsMax);
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

  /**
   * The HW is the lowest log end over the ISR, and moves only while the ISR has at least
   * `min.insync.replicas` members (as KIP-966 has it): a leader left alone in its ISR does not
   * show consumers records that no other replica holds, and such records are not acknowledged
   * either (acks=all refuses below min.insync.replicas).
   */
  private recomputeHw(): void {
    if (this.role !== 'leader' || this.leaderReady) return;
    if (this.isr.length < Math.min(this.settings.minInsyncReplicas, this.replicas.length)) return;
    this.advanceHw(this.followers.highWatermark(this.isr, this.brokerId, this.log.logEndOffset, this.hw));
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

  /**
   * Appends batches fetched from the leader, keeping their offsets and epochs. `generation` is the
   * one the fetch was sent in: nothing happens when the role changed since, and nothing past the
   * append (epoch history, HW) happens when it changed during the append. Epochs are recorded only
   * for batches that were written. Returns false when the generation no longer holds.
   */
  appendAsFollower(records: Uint8Array, leaderHw: number, generation = this.gen): Promise<boolean> {
    return this.followerOp(generation, async () => {
      const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
      const batches: { epoch: number; baseOffset: number; append: Promise<AppendResult> }[] = [];
      for (const b of splitBatches(buf)) {
        const h = readBatchHeader(b);
        if (h.baseOffset + h.lastOffsetDelta < this.log.logEndOffset) continue; // already held
        // The leader walked the records before accepting them; the CRC check that still runs
        // proves these are the same bytes, so the follower skips the walk (and decompression).
        batches.push({ epoch: h.partitionLeaderEpoch, baseOffset: h.baseOffset, append: this.log.append(b, { assignOffsets: false, validateRecords: false }) });
      }
      const settled = await Promise.allSettled(batches.map((b) => b.append));
      // The epochs of the batches that were written, in order, up to the first that was not.
      for (let i = 0; i < settled.length && settled[i]!.status === 'fulfilled'; i++) this.epochs.assign(batches[i]!.epoch, batches[i]!.baseOffset);
      await this.epochs.save();
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      if (this.gen === generation) this.setFollowerHw(leaderHw, generation);
    });
  }

  /** The leader's HW, capped by what this replica holds (only as a follower of `generation`). */
  setFollowerHw(leaderHw: number, generation = this.gen): void {
    if (this.role !== 'follower' || this.gen !== generation) return;
    const hw = Math.max(this.log.logStartOffset, Math.min(leaderHw, this.log.logEndOffset));
    if (hw !== this.hw) {
      this.hw = hw;
      this.emit();
    }
  }

  /** Truncates a divergent tail (to where the leader says our last epoch ends). */
  truncateTo(offset: number, generation = this.gen): Promise<boolean> {
    return this.followerOp(generation, async () => {
      if (offset >= this.log.logEndOffset) return;
      await this.log.truncateTo(offset);
      this.epochs.truncateFrom(this.log.logEndOffset);
      await this.epochs.save();
      this.hw = Math.min(this.hw, this.log.logEndOffset);
      // The producer and origin states saw the dropped batches: rebuild them from what is left.
      await this.producers.rebuild(this.log, this.storage);
      await this.origins.rebuild(this.log, { scan: this.settings.scope === 'global' });
    });
  }

  /** Starts over empty at `offset` (we fell below the leader's log start). */
  resetTo(offset: number, generation = this.gen): Promise<boolean> {
    return this.followerOp(generation, async () => {
      await this.log.resetTo(offset);
      this.epochs.clear();
      await this.epochs.save();
      this.hw = offset;
      await this.producers.rebuild(this.log, this.storage);
      await this.origins.rebuild(this.log, { scan: this.settings.scope === 'global' });
    });
  }

  /**
   * Runs follower work that was decided in `generation`: not at all when this replica is no
   * longer a follower of that generation; counted while it runs, so a leader term that starts
   * meanwhile takes its start offset after it.
   */
  private async followerOp(generation: number, fn: () => Promise<void>): Promise<boolean> {
    if (this.role !== 'follower' || this.gen !== generation) return false;
    this.followerOpsInFlight++;
    try {
      await fn();
    } finally {
      if (--this.followerOpsInFlight === 0) for (const w of this.followerOpsIdle.splice(0)) w();
    }
    return true;
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
