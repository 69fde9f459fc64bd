/**
 * The consumer: reads partitions it was assigned by its group (`subscribe`) or by hand
 * (`assign`), and hands records out through `poll` or `for await`.
 *
 * Fetching is driven by `poll`: partitions with nothing buffered get one long-poll Fetch per
 * leader (bounded by `fetchMaxBytes` / `partitionFetchBytesMax` and `maxWaitMs`), and what comes
 * back is buffered per partition until handed out. Each partition has a position (the next
 * offset to hand out); a seek or a rebalance bumps the partition's epoch so answers to fetches
 * sent before it are dropped.
 *
 * Delivery: `at-least-once` commits, on the auto-commit interval, the positions of records handed
 * out by earlier polls (they were processed by the time the next poll is called), and commits
 * again before a rebalance and on close. `at-most-once` commits the new positions before a poll
 * returns its records, so a crash after that loses them rather than repeating them.
 *
 * What is committed is only ever what was handed out (`delivered`), never what was fetched: the
 * `for await` iterator takes a whole batch from the buffer at once, which moves `position` past
 * records the loop has not seen yet, so `commit()` and `close()` in the loop body must not use it.
 */
import { EdgeqError, silentLogger, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { assignorByName, type Assignor } from '../group/index.ts';
import { decodeBatchesWithOrigin, type RecordHeader } from '../log/index.ts';
import { errorOf, type FetchResponse, type FetchTopic } from '../protocol/index.ts';
import { Cluster, isStaleMetadataError, type ClusterOptions } from './cluster.ts';
import { GeoFilter, parseGeoMetadata } from './geo-filter.ts';
import { fetchCommitsOf, geoGroupId } from './geo-resume.ts';
import { GroupMember, type TopicPartition, type TopicPartitionOffset } from './group-member.ts';
import { listOffsets } from './list-offsets.ts';
import type { RetryOptions } from './retry.ts';

export type { TopicPartition, TopicPartitionOffset } from './group-member.ts';

/** A record as the consumer hands it out. */
export interface ConsumerRecord {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  timestamp: number;
  /**
   * Global topics: the region that wrote the record, for one applied from another region; null
   * for a record written in the region read from (the gateway fills in its own region then).
   */
  originRegion: string | null;
  /** The record's offset in its origin region's log; -1 when `originRegion` is null. */
  originOffset: number;
}

/** When offsets are committed relative to handing records out. */
export type DeliveryMode = 'at-least-once' | 'at-most-once';

/** Options of a consumer. */
export interface ConsumerOptions {
  /** The consumer group; needed for `subscribe` and commits. */
  groupId?: string;
  /** `range` (default), `roundrobin`, or an assignor object. */
  assignor?: string | Assignor;
  delivery?: DeliveryMode;
  /** at-least-once only: commit consumed positions every `autoCommitIntervalMs`. Default true. */
  autoCommit?: boolean;
  autoCommitIntervalMs?: number;
  /** Where to start without a committed offset (or when it is out of range): earliest if true, else latest. */
  fromBeginning?: boolean;
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Longest a Fetch waits at the broker for `minBytes`. */
  maxWaitMs?: number;
  minBytes?: number;
  /** Bound on one Fetch answer, and per partition within it. */
  fetchMaxBytes?: number;
  partitionFetchBytesMax?: number;
  /** Default `maxRecords` of a poll. */
  pollRecordsMax?: number;
  requestTimeoutMs?: number;
  /** Wait after a failed fetch to a broker before the next one. */
  retryBackoffMs?: number;
  retry?: RetryOptions;
  clientId?: string;
  /**
   * The region this group moved from (docs/geo.md): a partition with no commit in the group here
   * starts at the position translated from that region (the commit of `__geo.<region>.<groupId>`)
   * and skips the records the group already consumed there. Needs `groupId`.
   */
  resumeFrom?: string;
}

/** Defaults of `ConsumerOptions`. */
export const CONSUMER_DEFAULTS = {
  assignor: 'range',
  delivery: 'at-least-once' as DeliveryMode,
  autoCommit: true,
  autoCommitIntervalMs: 5_000,
  fromBeginning: false,
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 30_000,
  heartbeatIntervalMs: 1_000,
  maxWaitMs: 500,
  minBytes: 1,
  fetchMaxBytes: 16 * 1024 * 1024,
  partitionFetchBytesMax: 1024 * 1024,
  pollRecordsMax: 500,
  requestTimeoutMs: 30_000,
  retryBackoffMs: 100,
} as const;

/** Options of one poll. */
export interface PollOptions {
  maxRecords?: number;
  /** Longest the poll waits for records; 0 returns what is buffered. */
  timeoutMs?: number;
}

interface PartitionState {
  topic: string;
  partition: number;
  /** Next offset to hand out; null until found (committed offset or reset policy). */
  position: number | null;
  /**
   * Offset after the last record handed to the application (returned by `poll`, yielded by the
   * iterator), or where a seek, reset or committed offset put it. Behind `position` while the
   * iterator holds a batch; `commit()` and `close()` commit this, never `position`.
   */
  delivered: number | null;
  /** Fetched records at or after `position`, not yet handed out. */
  buffer: ConsumerRecord[];
  fetching: boolean;
  /** Bumped by seeks and resets: fetch answers from an older epoch are dropped. */
  epoch: number;
  /**
   * The topic id (KIP-516) the position belongs to; '' until known. A topic created again under
   * its name has another: the position, and what it would commit, mean nothing there.
   */
  topicId: string;
  /** The filter of a start translated from another region (docs/geo.md); null for a plain start. */
  geo: GeoFilter | null;
}

const keyOf = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Records taken from the buffers, with the epoch of each partition they came from at that moment. */
interface Taken {
  records: ConsumerRecord[];
  epochs: Map<PartitionState, number>;
}

/** An empty take (a fresh one each time: poll hands its array to the caller). */
const nothingTaken = (): Taken => ({ records: [], epochs: new Map() });

/** Resolves waiters on `notify`, or after their own timeout. */
class Signal {
  private waiters: (() => void)[] = [];
  constructor(private readonly clock: Clock) {}
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: TimerHandle | null = null;
      const done = () => {
        timer?.cancel();
        resolve();
      };
      this.waiters.push(done);
      timer = this.clock.setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      }, ms);
    });
  }
  notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** A consumer; make one with `createConsumer` or `client.consumer()`. */
export class Consumer implements AsyncIterable<ConsumerRecord> {
  private readonly cluster: Cluster;
  private readonly ownsCluster: boolean;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly opts: Required<Omit<ConsumerOptions, 'groupId' | 'assignor' | 'retry' | 'clientId' | 'resumeFrom'>> & { retry: RetryOptions };
  private readonly resumeFrom: string | null;
  private readonly member: GroupMember | null;
  private readonly groupId: string | null;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly paused = new Set<string>();
  private readonly pendingSeeks = new Map<string, number>();
  /** Positions whose records were processed (safe to commit under at-least-once). */
  private readonly committable = new Map<string, number>();
  private readonly fetchingBrokers = new Set<number>();
  private readonly brokerBackoffUntil = new Map<number, number>();
  private readonly signal: Signal;
  private mode: 'none' | 'subscribe' | 'assign' = 'none';
  private lastCommitMs: number;
  private rotate = 0;
  private started: Promise<void> | null = null;
  private closed = false;

  constructor(cluster: Cluster, options: ConsumerOptions = {}, deps: { ownsCluster?: boolean } = {}) {
    this.cluster = cluster;
    this.ownsCluster = deps.ownsCluster ?? false;
    this.clock = cluster.clock;
    this.logger = (cluster.logger ?? silentLogger).child({ component: 'consumer', groupId: options.groupId });
    this.opts = {
      delivery: options.delivery ?? CONSUMER_DEFAULTS.delivery,
      autoCommit: options.autoCommit ?? CONSUMER_DEFAULTS.autoCommit,
      autoCommitIntervalMs: options.autoCommitIntervalMs ?? CONSUMER_DEFAULTS.autoCommitIntervalMs,
      fromBeginning: options.fromBeginning ?? CONSUMER_DEFAULTS.fromBeginning,
      sessionTimeoutMs: options.sessionTimeoutMs ?? CONSUMER_DEFAULTS.sessionTimeoutMs,
      rebalanceTimeoutMs: options.rebalanceTimeoutMs ?? CONSUMER_DEFAULTS.rebalanceTimeoutMs,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? CONSUMER_DEFAULTS.heartbeatIntervalMs,
      maxWaitMs: options.maxWaitMs ?? CONSUMER_DEFAULTS.maxWaitMs,
      minBytes: options.minBytes ?? CONSUMER_DEFAULTS.minBytes,
      fetchMaxBytes: options.fetchMaxBytes ?? CONSUMER_DEFAULTS.fetchMaxBytes,
      partitionFetchBytesMax: options.partitionFetchBytesMax ?? CONSUMER_DEFAULTS.partitionFetchBytesMax,
      pollRecordsMax: options.pollRecordsMax ?? CONSUMER_DEFAULTS.pollRecordsMax,
      requestTimeoutMs: options.requestTimeoutMs ?? CONSUMER_DEFAULTS.requestTimeoutMs,
      retryBackoffMs: options.retryBackoffMs ?? CONSUMER_DEFAULTS.retryBackoffMs,
      retry: options.retry ?? {},
    };
    if (this.opts.heartbeatIntervalMs >= this.opts.sessionTimeoutMs) {
      throw new EdgeqError('INVALID_CONFIG', `heartbeatIntervalMs (${this.opts.heartbeatIntervalMs}) must be below sessionTimeoutMs (${this.opts.sessionTimeoutMs})`);
    }
    this.signal = new Signal(this.clock);
    this.lastCommitMs = this.clock.monotonicMs();
    this.groupId = options.groupId ?? null;
    this.resumeFrom = options.resumeFrom ?? null;
    if (this.resumeFrom !== null && (this.groupId === null || this.resumeFrom === '')) throw new EdgeqError('INVALID_CONFIG', 'resumeFrom needs a groupId and a region name');
    if (this.groupId !== null) {
      const assignor = typeof options.assignor === 'object' ? options.assignor : assignorByName(options.assignor ?? CONSUMER_DEFAULTS.assignor);
      this.member = new GroupMember(
        cluster,
        {
          groupId: this.groupId,
          clientId: options.clientId ?? 'edgeq-consumer',
          assignor,
          sessionTimeoutMs: this.opts.sessionTimeoutMs,
          rebalanceTimeoutMs: this.opts.rebalanceTimeoutMs,
          heartbeatIntervalMs: this.opts.heartbeatIntervalMs,
          requestTimeoutMs: this.opts.requestTimeoutMs,
          retry: this.opts.retry,
          logger: this.logger,
        },
        { onRevoke: (tps) => this.onRevoke(tps), onAssign: (tps) => this.onAssign(tps) },
      );
    } else {
      this.member = null;
    }
  }

  /** Connects to the cluster; `poll` calls it when needed. */
  connect(): Promise<void> {
    if (!this.started) {
      this.started = this.cluster.connect();
      this.started.catch(() => (this.started = null));
    }
    return this.started;
  }

  /** Joins the group for these topics (replacing an earlier subscription). Needs `groupId`. */
  subscribe(topics: string | readonly string[]): void {
    if (!this.member) throw new EdgeqError('INVALID_CONFIG', 'subscribe needs a groupId; use assign() for manual assignment');
    if (this.mode === 'assign') throw new EdgeqError('INVALID_ARGUMENT', 'this consumer uses assign(); it cannot also subscribe');
    const list = typeof topics === 'string' ? [topics] : [...topics];
    this.mode = 'subscribe';
    this.cluster.track(list);
    this.member.subscribe(list);
  }

  /** Reads exactly these partitions, without group membership (commits still go to `groupId` if set). */
  assign(partitions: readonly TopicPartition[]): void {
    if (this.mode === 'subscribe') throw new EdgeqError('INVALID_ARGUMENT', 'this consumer uses subscribe(); it cannot also assign');
    this.mode = 'assign';
    const wanted = new Set(partitions.map((p) => keyOf(p.topic, p.partition)));
    for (const [k] of this.partitions) if (!wanted.has(k)) this.partitions.delete(k);
    for (const p of partitions) this.addPartition(p);
    this.cluster.track(partitions.map((p) => p.topic));
    this.signal.notify();
  }

  /** The partitions currently assigned. */
  assignment(): TopicPartition[] {
    return [...this.partitions.values()].map((s) => ({ topic: s.topic, partition: s.partition }));
  }

  /** The next offset each assigned partition hands out (null while unknown). */
  positions(): (TopicPartition & { offset: number | null })[] {
    return [...this.partitions.values()].map((s) => ({ topic: s.topic, partition: s.partition, offset: s.position }));
  }

  /** Moves a partition's position; the next records handed out start at `offset`. */
  seek(topic: string, partition: number, offset: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0) throw new EdgeqError('INVALID_ARGUMENT', `seek offset ${offset} is not a non-negative integer`);
    const s = this.partitions.get(keyOf(topic, partition));
    if (!s) {
      // Not assigned (yet): applied when the partition is assigned.
      this.pendingSeeks.set(keyOf(topic, partition), offset);
      return;
    }
    this.setPosition(s, offset);
    this.signal.notify();
  }

  /** Stops handing out and fetching records of these partitions (buffered ones are kept). */
  pause(partitions: readonly TopicPartition[]): void {
    for (const p of partitions) this.paused.add(keyOf(p.topic, p.partition));
  }

  /** Undoes `pause`. */
  resume(partitions: readonly TopicPartition[]): void {
    for (const p of partitions) this.paused.delete(keyOf(p.topic, p.partition));
    this.signal.notify();
  }

  /** The paused partitions. */
  pausedPartitions(): TopicPartition[] {
    return [...this.paused].map((k) => {
      const [topic, partition] = k.split('\u0000');
      return { topic: topic!, partition: Number(partition) };
    });
  }

  private addPartition(tp: TopicPartition): PartitionState {
    const k = keyOf(tp.topic, tp.partition);
    let s = this.partitions.get(k);
    if (!s) {
      s = { topic: tp.topic, partition: tp.partition, position: null, delivered: null, buffer: [], fetching: false, epoch: 0, topicId: this.cluster.topicIdOf(tp.topic), geo: null };
      this.partitions.set(k, s);
    }
    const seek = this.pendingSeeks.get(k);
    if (seek !== undefined) {
      this.pendingSeeks.delete(k);
      this.setPosition(s, seek);
    }
    return s;
  }

  private setPosition(s: PartitionState, offset: number): void {
    // A seek leaves the translated start: what it skipped is no longer known to be consumed.
    s.geo = null;
    s.position = offset;
    s.delivered = offset;
    s.buffer = [];
    s.epoch++;
    s.fetching = false;
  }

  // ---- group hooks --------------------------------------------------------------------------

  private async onRevoke(_revoked: TopicPartition[]): Promise<void> {
    if (this.opts.delivery === 'at-least-once' && this.opts.autoCommit) {
      await this.commitOffsets(this.committableOffsets()).catch((err) => {
        // The broker refuses commits once the rebalance started; the next owner re-reads from the
        // last commit (duplicates, never loss).
        this.logger.info({ err: toEdgeqError(err).code }, 'commit before rebalance failed');
      });
    }
    this.partitions.clear();
    this.committable.clear();
    this.signal.notify();
  }

  private async onAssign(assigned: TopicPartition[]): Promise<void> {
    this.partitions.clear();
    for (const tp of assigned) this.addPartition(tp);
    this.signal.notify();
    await this.initPositions().catch((err) => this.logger.warn({ err: toEdgeqError(err).message }, 'finding start positions failed; the next poll retries'));
  }

  /** Finds positions for partitions that have none: the committed offset, else the reset policy. */
  private async initPositions(): Promise<void> {
    const missing = [...this.partitions.values()].filter((s) => s.position === null);
    if (missing.length === 0) return;
    let committed = new Map<string, { offset: number; metadata: string }>();
    if (this.member) committed = await this.member.committed(missing);
    let reset: PartitionState[] = [];
    for (const s of missing) {
      const c = committed.get(keyOf(s.topic, s.partition));
      if (c !== undefined && c.offset >= 0) this.startAt(s, c.offset, c.metadata);
      else reset.push(s);
    }
    if (this.resumeFrom !== null && this.groupId !== null && reset.length > 0) {
      // Never committed here: the position translated from the region the group moved from.
      const translated = await fetchCommitsOf(this.cluster, geoGroupId(this.resumeFrom, this.groupId), reset, this.opts.retry);
      reset = reset.filter((s) => {
        const c = translated.get(keyOf(s.topic, s.partition));
        if (!c || s.position !== null) return !c;
        this.startAt(s, c.offset, c.metadata);
        return false;
      });
    }
    await this.resetPositions(reset);
  }

  /** Starts a partition at a committed offset, with the filter its metadata asks for (docs/geo.md). */
  private startAt(s: PartitionState, offset: number, metadata: string): void {
    s.position = offset;
    s.delivered = offset;
    const geo = parseGeoMetadata(metadata);
    s.geo = geo && offset < geo.filterUntil ? new GeoFilter(geo) : null;
    this.committable.set(keyOf(s.topic, s.partition), offset);
  }

  private async resetPositions(states: PartitionState[]): Promise<void> {
    if (states.length === 0) return;
    const found = await listOffsets(this.cluster, states, { spec: this.opts.fromBeginning ? 'earliest' : 'latest', retry: this.opts.retry });
    for (const f of found) {
      const s = this.partitions.get(keyOf(f.topic, f.partition));
      if (s && s.position === null) {
        s.position = f.offset;
        s.delivered = f.offset;
        s.epoch++;
      }
    }
  }

  // ---- polling ------------------------------------------------------------------------------

  /** Returns up to `maxRecords` records, waiting up to `timeoutMs` for some to arrive. */
  async poll(options: PollOptions = {}): Promise<ConsumerRecord[]> {
    // Records handed out by earlier polls count as processed now.
    this.markDeliveredProcessed();
    const taken = await this.pollInternal(options);
    for (const r of taken.records) {
      const s = this.partitions.get(keyOf(r.topic, r.partition));
      if (s && taken.epochs.get(s) === s.epoch) s.delivered = r.offset + 1;
    }
    return taken.records;
  }

  /** Everything handed out so far counts as processed (safe to commit under at-least-once). */
  private markDeliveredProcessed(): void {
    for (const s of this.partitions.values()) if (s.delivered !== null) this.committable.set(keyOf(s.topic, s.partition), s.delivered);
  }

  private async pollInternal(options: PollOptions): Promise<Taken> {
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the consumer is closed', { retriable: false });
    if (this.mode === 'none') throw new EdgeqError('INVALID_ARGUMENT', 'call subscribe() or assign() before poll()');
    const maxRecords = options.maxRecords ?? this.opts.pollRecordsMax;
    const deadline = this.clock.monotonicMs() + (options.timeoutMs ?? 1_000);
    const remaining = () => deadline - this.clock.monotonicMs();
    // Connected (and joined), or out of time. Bounded by the poll's own timeout: a bootstrap
    // broker that accepts the connection and never answers must not hold a poll past it. What the
    // poll started goes on (the join starts once connected), so the next poll finds it under way.
    const member = this.mode === 'subscribe' ? this.member : null;
    const ready = member ? this.connect().then(() => member.ensureActive()) : this.connect();
    if (!(await this.settlesWithin(ready, remaining()))) return nothingTaken();
    await this.maybeAutoCommit();
    if ([...this.partitions.values()].some((s) => s.position === null)) {
      await this.initPositions().catch((err) => {
        const e = toEdgeqError(err);
        if (!e.retriable) throw e;
        this.logger.debug({ err: e.code }, 'start positions not found yet');
      });
    }
    for (;;) {
      if (this.closed) return nothingTaken();
      const taken = this.take(maxRecords);
      if (taken.records.length > 0) {
        if (this.opts.delivery === 'at-most-once' && this.groupId !== null) await this.commitBeforeHandOut(taken.records);
        return taken;
      }
      const left = remaining();
      if (left <= 0) return nothingTaken();
      this.startFetches(left);
      await this.signal.wait(left);
    }
  }

  /**
   * True once `work` resolved, false when `ms` passed first; rejects as `work` does. The timer is
   * cancelled when the work wins (a poll loop would otherwise leave one pending timer per poll).
   */
  private settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => resolve(false), Math.max(0, ms));
      work.then(
        () => {
          timer.cancel();
          resolve(true);
        },
        (err: unknown) => {
          timer.cancel();
          reject(toEdgeqError(err));
        },
      );
    });
  }

  /** Takes buffered records, a partition at a time, starting at a rotating partition for fairness. */
  private take(maxRecords: number): Taken {
    const out: ConsumerRecord[] = [];
    const epochs = new Map<PartitionState, number>();
    const states = [...this.partitions.values()];
    if (states.length === 0) return { records: out, epochs };
    this.rotate = (this.rotate + 1) % states.length;
    for (let i = 0; i < states.length && out.length < maxRecords; i++) {
      const s = states[(this.rotate + i) % states.length]!;
      if (this.paused.has(keyOf(s.topic, s.partition)) || s.buffer.length === 0) continue;
      const n = Math.min(maxRecords - out.length, s.buffer.length);
      const taken = s.buffer.splice(0, n);
      out.push(...taken);
      s.position = taken[taken.length - 1]!.offset + 1;
      epochs.set(s, s.epoch);
    }
    return { records: out, epochs };
  }

  private async commitBeforeHandOut(records: ConsumerRecord[]): Promise<void> {
    const positions = new Map<string, TopicPartitionOffset>();
    for (const r of records) positions.set(keyOf(r.topic, r.partition), { topic: r.topic, partition: r.partition, offset: r.offset + 1 });
    try {
      await this.commitOffsets([...positions.values()]);
    } catch (err) {
      // Not committed, so not handed out.
      this.giveBack(records);
      throw err;
    }
  }

  /** Puts records taken but not handed out back at the front of their partitions' buffers. */
  private giveBack(records: readonly ConsumerRecord[]): void {
    for (const r of [...records].reverse()) {
      const s = this.partitions.get(keyOf(r.topic, r.partition));
      // Skipped when the partition was revoked or seeked meanwhile: its position is already right.
      if (!s || s.position !== r.offset + 1) continue;
      s.buffer.unshift(r);
      s.position = r.offset;
    }
  }

  /**
   * Follows the topic id of each partition: the first one known is taken; another one (the topic
   * was deleted and created again) drops the position, what was fetched and what would be
   * committed, and the partition starts again from its committed offset (the coordinator serves
   * only the new topic's) or the reset policy.
   */
  private followTopicId(s: PartitionState): void {
    const now = this.cluster.topicIdOf(s.topic);
    if (now === '' || now === s.topicId) return;
    if (s.topicId !== '') {
      this.logger.info({ topic: s.topic, partition: s.partition, from: s.topicId, to: now }, 'topic created again: finding the position anew');
      s.position = null;
      s.delivered = null;
      s.buffer = [];
      s.epoch++;
      s.fetching = false;
      this.committable.delete(keyOf(s.topic, s.partition));
    }
    s.topicId = now;
  }

  private startFetches(waitMs: number): void {
    const byLeader = new Map<number, { state: PartitionState; leaderEpoch: number }[]>();
    const now = this.clock.monotonicMs();
    for (const s of this.partitions.values()) {
      this.followTopicId(s);
      if (s.position === null || s.fetching || s.buffer.length > 0 || this.paused.has(keyOf(s.topic, s.partition))) continue;
      let leader;
      try {
        leader = this.cluster.leaderOf(s.topic, s.partition);
      } catch (err) {
        this.cluster.markStale(err);
        this.refreshSoon();
        continue;
      }
      if (this.fetchingBrokers.has(leader.leaderId) || (this.brokerBackoffUntil.get(leader.leaderId) ?? 0) > now) continue;
      const list = byLeader.get(leader.leaderId) ?? [];
      list.push({ state: s, leaderEpoch: leader.leaderEpoch });
      byLeader.set(leader.leaderId, list);
    }
    for (const [leaderId, entries] of byLeader) void this.fetchFrom(leaderId, entries, Math.min(this.opts.maxWaitMs, Math.max(0, waitMs)));
  }

  private refreshing = false;
  private refreshSoon(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.cluster
      .ensureFresh()
      .catch((err) => this.logger.debug({ err: toEdgeqError(err).code }, 'metadata refresh failed'))
      .finally(() => {
        this.refreshing = false;
        this.signal.notify();
      });
  }

  private async fetchFrom(leaderId: number, entries: { state: PartitionState; leaderEpoch: number }[], maxWaitMs: number): Promise<void> {
    this.fetchingBrokers.add(leaderId);
    const sent = entries.map((e) => ({ state: e.state, epoch: e.state.epoch, offset: e.state.position! }));
    for (const e of entries) e.state.fetching = true;
    const topics = new Map<string, FetchTopic>();
    for (const e of entries) {
      // The id the position belongs to: a broker holding another incarnation refuses the fetch.
      const t = topics.get(e.state.topic) ?? { name: e.state.topic, topicId: e.state.topicId, partitions: [] };
      topics.set(e.state.topic, t);
      t.partitions.push({
        partition: e.state.partition,
        fetchOffset: e.state.position!,
        maxBytes: this.opts.partitionFetchBytesMax,
        currentLeaderEpoch: e.leaderEpoch,
      });
    }
    try {
      const conn = await this.cluster.connectionTo(leaderId);
      const res = await conn.request(
        'Fetch',
        { replicaId: -1, maxWaitMs, minBytes: this.opts.minBytes, maxBytes: this.opts.fetchMaxBytes, topics: [...topics.values()] },
        { timeoutMs: this.opts.requestTimeoutMs + maxWaitMs },
      );
      await this.onFetchResponse(sent, res, this.cluster.brokers().find((b) => b.id === leaderId)?.region ?? '');
    } catch (err) {
      const e = toEdgeqError(err);
      this.logger.debug({ leaderId, err: e.code }, 'fetch failed');
      if (isStaleMetadataError(e)) {
        this.cluster.markStale(e);
        this.refreshSoon();
      }
      this.brokerBackoffUntil.set(leaderId, this.clock.monotonicMs() + this.opts.retryBackoffMs);
      // Wake a waiting poll after the backoff so it can fetch again.
      this.clock.setTimeout(() => this.signal.notify(), this.opts.retryBackoffMs);
    } finally {
      for (const s of sent) if (s.state.epoch === s.epoch) s.state.fetching = false;
      this.fetchingBrokers.delete(leaderId);
      this.signal.notify();
    }
  }

  private async onFetchResponse(sent: { state: PartitionState; epoch: number; offset: number }[], res: FetchResponse, leaderRegion: string): Promise<void> {
    const reset: PartitionState[] = [];
    for (const t of res.topics) {
      for (const p of t.partitions) {
        const k = keyOf(t.name, p.partition);
        const s = sent.find((x) => keyOf(x.state.topic, x.state.partition) === k);
        // Dropped: the partition was revoked, or seeked since the request left.
        if (!s || this.partitions.get(k) !== s.state || s.state.epoch !== s.epoch) continue;
        const err = errorOf(p.error, { topic: t.name, partition: p.partition });
        if (err) {
          if (err.code === 'OFFSET_OUT_OF_RANGE') {
            this.logger.info({ topic: t.name, partition: p.partition, offset: s.offset }, 'offset out of range; resetting');
            s.state.position = null;
            s.state.epoch++;
            reset.push(s.state);
          } else if (isStaleMetadataError(err)) {
            this.cluster.markStale(err);
            this.refreshSoon();
          } else {
            this.logger.warn({ topic: t.name, partition: p.partition, err: err.message }, 'fetch error');
          }
          continue;
        }
        if (p.records.length === 0) continue;
        const bytes = Buffer.from(p.records.buffer, p.records.byteOffset, p.records.byteLength);
        const decoded = await decodeBatchesWithOrigin(bytes, s.offset);
        if (s.state.epoch !== s.epoch || this.partitions.get(k) !== s.state) continue;
        const geo = s.state.geo;
        let kept = 0;
        for (const r of decoded) {
          if (geo?.skips(r, leaderRegion)) continue;
          kept++;
          s.state.buffer.push({ topic: t.name, partition: p.partition, offset: r.offset, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp, originRegion: r.originRegion, originOffset: r.originOffset });
        }
        if (kept === 0 && decoded.length > 0) this.skipFiltered(s.state, s.offset, decoded[decoded.length - 1]!.offset + 1);
      }
    }
    if (reset.length > 0) {
      await this.resetPositions(reset).catch((err) => this.logger.warn({ err: toEdgeqError(err).message }, 'offset reset failed'));
    }
  }

  /**
   * A fetch whose every record the geo filter skipped: the position moves past them (or the next
   * fetch would return them again), and so does what may be committed when nothing before them is
   * still unhandled (they were consumed in the old region).
   */
  private skipFiltered(s: PartitionState, fetchedAt: number, next: number): void {
    if (s.position !== fetchedAt || s.buffer.length > 0) return;
    s.position = next;
    if (s.delivered === fetchedAt) s.delivered = next;
  }

  // ---- commits ------------------------------------------------------------------------------

  private committableOffsets(): TopicPartitionOffset[] {
    const out: TopicPartitionOffset[] = [];
    for (const s of this.partitions.values()) {
      const offset = this.committable.get(keyOf(s.topic, s.partition));
      if (offset !== undefined) out.push({ topic: s.topic, partition: s.partition, offset });
    }
    return out;
  }

  private async maybeAutoCommit(): Promise<void> {
    if (!this.groupId || this.opts.delivery !== 'at-least-once' || !this.opts.autoCommit) return;
    if (this.clock.monotonicMs() - this.lastCommitMs < this.opts.autoCommitIntervalMs) return;
    this.lastCommitMs = this.clock.monotonicMs();
    await this.commitOffsets(this.committableOffsets()).catch((err) => this.logger.info({ err: toEdgeqError(err).code }, 'auto-commit failed'));
  }

  private commitOffsets(offsets: TopicPartitionOffset[]): Promise<void> {
    if (!this.member) return Promise.reject(new EdgeqError('INVALID_CONFIG', 'commits need a groupId'));
    // Below a translated start's horizon a commit carries its position, so a restart keeps filtering.
    const withGeo = offsets.map((o) => {
      const geo = this.partitions.get(keyOf(o.topic, o.partition))?.geo;
      return geo && o.metadata === undefined ? { ...o, metadata: geo.metadataFor(o.offset) } : o;
    });
    return this.member.commit(withGeo, this.mode === 'subscribe');
  }

  /**
   * Commits offsets (each the next offset to consume) for the group; without arguments, the
   * offset after every record handed out so far (returned by `poll` or yielded by the iterator,
   * the one the loop body is on included), never one only fetched.
   */
  async commit(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    let list: TopicPartitionOffset[];
    if (offsets) list = [...offsets];
    else {
      list = [];
      for (const s of this.partitions.values()) {
        if (s.delivered === null) continue;
        list.push({ topic: s.topic, partition: s.partition, offset: s.delivered });
        this.committable.set(keyOf(s.topic, s.partition), s.delivered);
      }
    }
    await this.commitOffsets(list);
    this.lastCommitMs = this.clock.monotonicMs();
  }

  /**
   * Yields records one by one until the consumer is closed; each counts as processed once the
   * loop body finished with it (asked for the next). A batch is taken from the buffer at once, but
   * a record counts as handed out only when yielded: `commit()` or `close()` in the loop body
   * commits up to the record the body is on, and a `break` gives the rest back to the buffer.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<ConsumerRecord> {
    while (!this.closed) {
      // Everything yielded so far was processed: the loop body came back for more.
      this.markDeliveredProcessed();
      let taken: Taken;
      try {
        taken = await this.pollInternal({ timeoutMs: this.opts.maxWaitMs });
      } catch (err) {
        if (this.closed) return;
        throw err;
      }
      const records = taken.records;
      let next = 0;
      try {
        while (next < records.length && !this.closed) {
          const r = records[next++]!;
          const key = keyOf(r.topic, r.partition);
          const s = this.partitions.get(key);
          const epoch = s ? taken.epochs.get(s) : undefined;
          // Revoked or seeked since the batch was taken: no longer ours to hand out (the new owner,
          // or the new position, reads it).
          if (!s || epoch !== s.epoch) continue;
          s.delivered = r.offset + 1;
          yield r;
          if (this.partitions.get(key) === s && s.epoch === epoch) this.committable.set(key, r.offset + 1);
        }
      } finally {
        // The loop ended early (break, throw, close): records taken but never yielded go back.
        if (next < records.length) this.giveBack(records.slice(next));
      }
    }
  }

  /**
   * Commits the positions of every record handed out (at-least-once with auto-commit), leaves
   * the group and closes the connections.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.member && this.mode === 'subscribe' && this.member.isStable && this.opts.delivery === 'at-least-once' && this.opts.autoCommit) {
      // Closing is like asking for more: everything handed out so far was processed (and only
      // that: not the rest of a batch the iterator holds).
      this.markDeliveredProcessed();
      await this.commitOffsets(this.committableOffsets()).catch((err) => this.logger.info({ err: toEdgeqError(err).code }, 'final commit failed'));
    }
    this.closed = true;
    this.signal.notify();
    await this.member?.leave();
    if (this.ownsCluster) await this.cluster.close();
  }
}

/** Creates a consumer with its own cluster connections. */
export function createConsumer(cluster: ClusterOptions, options: ConsumerOptions = {}): Consumer {
  return new Consumer(new Cluster(cluster), options, { ownsCluster: true });
}
