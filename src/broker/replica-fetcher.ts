/**
 * Followers fetch from their leaders over the broker protocol: one fetch loop per leader broker,
 * covering every partition this broker follows there. Before fetching a partition after a
 * leadership change, the follower asks the leader where its own latest epoch ends and truncates a
 * divergent tail there (Kafka's KIP-101), so no offset ever holds two different batches.
 *
 * Every answer is tied to the request it answers: a partition's entry carries the generation of
 * the replica and the epoch it was sent with, and an answer for an entry that has since been
 * replaced (a role change re-adds the partition) or a replica that changed role is dropped. A
 * partition that the leader says is behind (FENCED_LEADER_EPOCH) waits for the arbiter's next word,
 * but only up to `replicaStalledRetryMs`: then it asks again, so a follower always recovers.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger } from '../core/index.ts';
import { Connection, errorOf, internalClientId, type ApiName, type FetchRequest, type OffsetForLeaderEpochRequest, type RequestOf, type ResponseOf } from '../protocol/index.ts';
import type { Partition } from './partition.ts';
import { traceReplica } from '../tracing/index.ts';

/** Bounds of replica fetching. */
export interface ReplicaFetchLimits {
  /** Longest a follower's fetch waits at the leader for new data. */
  replicaFetchWaitMs: number;
  /** Bytes per partition in one fetch. */
  replicaFetchPartitionBytesMax: number;
  /** Bytes in one fetch, all partitions. */
  replicaFetchBytesMax: number;
  /** Pause after a failed fetch or connect, or a partition's refusal, before the next try. */
  replicaBackoffMs: number;
  /**
   * Longest a partition waits after FENCED_LEADER_EPOCH for a role change before it asks the
   * leader again (the arbiter's watch normally brings the new state within milliseconds).
   */
  replicaStalledRetryMs: number;
}

export const REPLICA_FETCH_DEFAULTS: ReplicaFetchLimits = {
  replicaFetchWaitMs: 500,
  replicaFetchPartitionBytesMax: 1024 * 1024,
  replicaFetchBytesMax: 8 * 1024 * 1024,
  replicaBackoffMs: 100,
  replicaStalledRetryMs: 2000,
};

/** What a fetcher needs of a connection to a leader (the protocol connection, or a test's fake). */
export interface ReplicaConnection {
  readonly closed: boolean;
  request<N extends ApiName>(name: N, body: RequestOf<N>, options?: { timeoutMs?: number }): Promise<ResponseOf<N>>;
  close(): void;
}

/** Opens a connection to a leader broker. */
export type ReplicaConnect = (address: { host: string; port: number }, clientId: string) => Promise<ReplicaConnection>;

interface Followed {
  partition: Partition;
  /** The replica's generation when it was (re-)added: answers for an older one are dropped. */
  generation: number;
  /** The leader epoch it follows in that generation. */
  epoch: number;
  /** Ask the leader where our last epoch ends before fetching. */
  needsTruncation: boolean;
  /** Our epoch is older than the leader's: wait for the arbiter's next word (a role change). */
  stalled: boolean;
  /** Not before this (monotonic ms): the leader was not ready yet, or refused. */
  retryAtMs: number;
}

/** True while `f` still describes its replica as it was when `f` was made. */
function current(f: Followed): boolean {
  const p = f.partition;
  return p.role === 'follower' && p.generation === f.generation && p.leaderEpoch === f.epoch;
}

/**
 * What a follower does with a leader's refusal. FENCED_LEADER_EPOCH: we are behind, and the
 * arbiter's watch will bring the new state (a role change re-adds the partition). NOT_LEADER,
 * LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION: the leader has not applied the topic or its
 * leadership yet (it hears from the arbiter a moment after us): try again shortly, from the
 * truncation step.
 */
function onRefusal(f: Followed, code: string, now: number, limits: ReplicaFetchLimits): void {
  if (code === 'FENCED_LEADER_EPOCH') {
    f.stalled = true;
    f.needsTruncation = true;
    f.retryAtMs = now + limits.replicaStalledRetryMs;
    return;
  }
  if (code === 'NOT_LEADER' || code === 'LEADER_NOT_AVAILABLE' || code === 'UNKNOWN_TOPIC_OR_PARTITION') f.needsTruncation = true;
  // Any refusal waits before the next try: a leader that answers at once must not be asked in a
  // tight loop.
  f.retryAtMs = now + limits.replicaBackoffMs;
}

/** What the fetchers need. */
export interface ReplicaFetcherDeps {
  brokerId: number;
  /** Address of a live broker, or undefined when it is not registered. */
  addressOf(brokerId: number): { host: string; port: number } | undefined;
  limits?: Partial<ReplicaFetchLimits>;
  /** How to reach a leader (default: the protocol connection over TCP). */
  connect?: ReplicaConnect;
  clock?: Clock;
  logger?: Logger;
}

const tcpConnect =
  (clock: Clock): ReplicaConnect =>
  (address, clientId) =>
    Connection.connect(address, { clientId, connectTimeoutMs: 2000, clock });

/** All of one broker's follower fetch loops. */
export class ReplicaFetchers {
  private readonly byLeader = new Map<number, LeaderFetcher>();
  private readonly limits: ReplicaFetchLimits;
  private closed = false;

  constructor(private readonly deps: ReplicaFetcherDeps) {
    this.limits = { ...REPLICA_FETCH_DEFAULTS, ...deps.limits };
  }

  /** Fetches `p` from its current leader (after truncating a divergent tail). */
  follow(p: Partition): void {
    this.unfollow(p);
    if (this.closed || p.role !== 'follower' || p.leaderId < 0) return;
    let f = this.byLeader.get(p.leaderId);
    if (!f) {
      f = new LeaderFetcher(p.leaderId, this.deps, this.limits);
      this.byLeader.set(p.leaderId, f);
    }
    f.add(p);
  }

  /** Stops fetching `p` (it leads now, or went offline). */
  unfollow(p: Partition): void {
    for (const [leader, f] of this.byLeader) {
      if (f.remove(p) && f.size === 0) {
        f.stop();
        this.byLeader.delete(leader);
      }
    }
  }

  /** Partitions being fetched, by leader id. */
  stats(): Record<number, string[]> {
    return Object.fromEntries([...this.byLeader].map(([l, f]) => [l, f.names()]));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.byLeader.values()].map((f) => f.stop()));
    this.byLeader.clear();
  }
}

const keyOf = (p: Partition) => `${p.topic}\u0000${p.index}`;

class LeaderFetcher {
  private readonly parts = new Map<string, Followed>();
  private conn: ReplicaConnection | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(
    readonly leaderId: number,
    private readonly deps: ReplicaFetcherDeps,
    private readonly limits: ReplicaFetchLimits,
  ) {
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ component: 'replica-fetcher', leader: leaderId });
  }

  get size(): number {
    return this.parts.size;
  }

  names(): string[] {
    return [...this.parts.values()].map((f) => `${f.partition.topic}-${f.partition.index}`);
  }

  add(p: Partition): void {
    this.parts.set(keyOf(p), { partition: p, generation: p.generation, epoch: p.leaderEpoch, needsTruncation: true, stalled: false, retryAtMs: 0 });
    this.running ??= this.loop().finally(() => (this.running = null));
  }

  remove(p: Partition): boolean {
    return this.parts.delete(keyOf(p));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.conn?.close();
    await this.running?.catch(() => undefined);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => this.clock.setTimeout(r, ms));
  }

  private async connection(): Promise<ReplicaConnection> {
    if (this.conn && !this.conn.closed) return this.conn;
    const addr = this.deps.addressOf(this.leaderId);
    if (!addr) throw new EdgeqError('BROKER_NOT_AVAILABLE', `leader ${this.leaderId} is not registered`);
    this.conn = await (this.deps.connect ?? tcpConnect(this.clock))(addr, internalClientId(`replica-${this.deps.brokerId}`));
    return this.conn;
  }

  /** Entries due now, in one of the two steps. */
  private due(truncation: boolean): Followed[] {
    const now = this.clock.monotonicMs();
    const out: Followed[] = [];
    for (const f of this.parts.values()) {
      if (f.retryAtMs > now || !current(f)) continue;
      // A stalled entry whose wait is over goes back to the truncation step.
      if (f.stalled) f.stalled = false;
      if (f.needsTruncation === truncation) out.push(f);
    }
    return out;
  }

  /** The entry an answer is for, if it is still the one the request was sent for. */
  private answered(sent: Map<string, Followed>, topic: string, partition: number): Followed | undefined {
    const key = `${topic}\u0000${partition}`;
    const f = sent.get(key);
    if (!f || this.parts.get(key) !== f || !current(f)) return undefined;
    return f;
  }

  private async loop(): Promise<void> {
    while (!this.stopped && this.parts.size > 0) {
      try {
        const conn = await this.connection();
        await this.truncate(conn);
        const active = this.due(false);
        if (active.length === 0) {
          await this.sleep(this.limits.replicaBackoffMs);
          continue;
        }
        await this.fetchOnce(conn, active);
      } catch (err) {
        if (this.stopped) return;
        const e = toEdgeqError(err);
        this.logger.debug({ code: e.code, err: e.message }, 'replica fetch failed; backing off');
        this.conn?.close();
        this.conn = null;
        await this.sleep(this.limits.replicaBackoffMs);
      }
    }
  }

  private async truncate(conn: ReplicaConnection): Promise<void> {
    const pending = this.due(true);
    if (pending.length === 0) return;
    const sent = new Map<string, Followed>();
    const req: OffsetForLeaderEpochRequest = { replicaId: this.deps.brokerId, topics: [] };
    for (const f of pending) {
      const p = f.partition;
      sent.set(keyOf(p), f);
      let t = req.topics.find((x) => x.name === p.topic);
      if (!t) req.topics.push((t = { name: p.topic, partitions: [] }));
      t.partitions.push({ partition: p.index, leaderEpoch: p.epochs.latestEpoch, currentLeaderEpoch: f.epoch });
    }
    const res = await conn.request('OffsetForLeaderEpoch', req, { timeoutMs: 5000 });
    for (const t of res.topics) {
      for (const r of t.partitions) {
        const f = this.answered(sent, t.name, r.partition);
        if (!f) continue;
        const err = errorOf(r.error);
        if (err) {
          onRefusal(f, err.code, this.clock.monotonicMs(), this.limits);
          continue;
        }
        const p = f.partition;
        // No epoch at or below ours on the leader: nothing of ours is known to be shared.
        const target = r.endOffset < 0 ? p.logStartOffset : Math.min(r.endOffset, p.logEndOffset);
        if (target < p.logEndOffset) {
          this.logger.info({ topic: p.topic, partition: p.index, from: p.logEndOffset, to: target, ourEpoch: p.epochs.latestEpoch, leaderEpoch: r.leaderEpoch }, 'truncating a divergent tail');
          if (!(await p.truncateTo(Math.max(target, p.logStartOffset), f.generation))) continue;
        }
        if (this.parts.get(keyOf(p)) === f) f.needsTruncation = false;
      }
    }
  }

  private async fetchOnce(conn: ReplicaConnection, active: Followed[]): Promise<void> {
    const req: FetchRequest = {
      replicaId: this.deps.brokerId,
      maxWaitMs: this.limits.replicaFetchWaitMs,
      minBytes: 1,
      maxBytes: this.limits.replicaFetchBytesMax,
      topics: [],
    };
    const sent = new Map<string, Followed>();
    for (const f of active) {
      const p = f.partition;
      sent.set(keyOf(p), f);
      let t = req.topics.find((x) => x.name === p.topic);
      // The topic id makes a leader that holds another incarnation of the name refuse the fetch.
      if (!t) req.topics.push((t = { name: p.topic, topicId: p.topicId, partitions: [] }));
      t.partitions.push({ partition: p.index, fetchOffset: p.logEndOffset, maxBytes: this.limits.replicaFetchPartitionBytesMax, currentLeaderEpoch: f.epoch });
    }
    const res = await conn.request('Fetch', req, { timeoutMs: this.limits.replicaFetchWaitMs + 10_000 });
    for (const t of res.topics) {
      for (const r of t.partitions) {
        const f = this.answered(sent, t.name, r.partition);
        if (!f) continue;
        const p = f.partition;
        const err = errorOf(r.error);
        if (err) {
          if (err.code === 'OFFSET_OUT_OF_RANGE') {
            if (p.logEndOffset < r.logStartOffset) {
              this.logger.warn({ topic: p.topic, partition: p.index, ours: p.logEndOffset, leaderStart: r.logStartOffset }, 'fell behind the leader\'s log start: starting over there');
              await p.resetTo(r.logStartOffset, f.generation);
            } else {
              f.needsTruncation = true;
            }
          } else {
            if (!['FENCED_LEADER_EPOCH', 'NOT_LEADER', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION'].includes(err.code)) {
              this.logger.warn({ code: err.code, err: err.message, topic: p.topic, partition: p.index }, 'replica fetch refused');
            }
            onRefusal(f, err.code, this.clock.monotonicMs(), this.limits);
          }
          continue;
        }
        const replica = traceReplica(p.topic, p.index, r.records, { brokerId: this.deps.brokerId });
        if (r.records.length > 0) await p.appendAsFollower(r.records, r.highWatermark, f.generation);
        else p.setFollowerHw(r.highWatermark, f.generation);
        p.noteLeaderEnd(r.logEndOffset, f.generation);
        replica?.end();
      }
    }
  }
}
