/**
 * Followers fetch from their leaders over the broker protocol: one fetch loop per leader broker,
 * covering every partition this broker follows there. Before fetching a partition after a
 * leadership change, the follower asks the leader where its own latest epoch ends and truncates a
 * divergent tail there (Kafka's KIP-101), so no offset ever holds two different batches.
 */
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger } from '../core/index.ts';
import { Connection } from '../client/index.ts';
import { errorOf, type FetchRequest, type OffsetForLeaderEpochRequest } from '../protocol/index.ts';
import type { Partition } from './partition.ts';

/** Bounds of replica fetching. */
export interface ReplicaFetchLimits {
  /** Longest a follower's fetch waits at the leader for new data. */
  replicaFetchWaitMs: number;
  /** Bytes per partition in one fetch. */
  replicaFetchPartitionBytesMax: number;
  /** Bytes in one fetch, all partitions. */
  replicaFetchBytesMax: number;
  /** Pause after a failed fetch or connect before the next try. */
  replicaBackoffMs: number;
}

export const REPLICA_FETCH_DEFAULTS: ReplicaFetchLimits = {
  replicaFetchWaitMs: 500,
  replicaFetchPartitionBytesMax: 1024 * 1024,
  replicaFetchBytesMax: 8 * 1024 * 1024,
  replicaBackoffMs: 100,
};

interface Followed {
  partition: Partition;
  /** Ask the leader where our last epoch ends before fetching. */
  needsTruncation: boolean;
  /** Our epoch is older than the leader's: wait for the arbiter's next word (a role change). */
  stalled: boolean;
  /** Not before this (monotonic ms): the leader was not ready yet. */
  retryAtMs: number;
}

/**
 * What a follower does with a leader's refusal. FENCED_LEADER_EPOCH: we are behind, and the
 * arbiter's watch will bring the new state (a role change re-adds the partition). NOT_LEADER,
 * LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION: the leader has not applied the topic or its
 * leadership yet (it hears from the arbiter a moment after us): try again shortly, from the
 * truncation step.
 */
function onRefusal(f: Followed, code: string, now: number, backoffMs: number): void {
  if (code === 'FENCED_LEADER_EPOCH') {
    f.stalled = true;
    return;
  }
  if (code === 'NOT_LEADER' || code === 'LEADER_NOT_AVAILABLE' || code === 'UNKNOWN_TOPIC_OR_PARTITION') {
    f.needsTruncation = true;
    f.retryAtMs = now + backoffMs;
  }
}

/** What the fetchers need. */
export interface ReplicaFetcherDeps {
  brokerId: number;
  /** Address of a live broker, or undefined when it is not registered. */
  addressOf(brokerId: number): { host: string; port: number } | undefined;
  limits?: Partial<ReplicaFetchLimits>;
  clock?: Clock;
  logger?: Logger;
}

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
  private conn: Connection | null = null;
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
    this.parts.set(keyOf(p), { partition: p, needsTruncation: true, stalled: false, retryAtMs: 0 });
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

  private async connection(): Promise<Connection> {
    if (this.conn && !this.conn.closed) return this.conn;
    const addr = this.deps.addressOf(this.leaderId);
    if (!addr) throw new EdgeqError('BROKER_NOT_AVAILABLE', `leader ${this.leaderId} is not registered`);
    this.conn = await Connection.connect(addr, { clientId: `replica-${this.deps.brokerId}`, connectTimeoutMs: 2000, clock: this.clock });
    return this.conn;
  }

  private async loop(): Promise<void> {
    while (!this.stopped && this.parts.size > 0) {
      try {
        const conn = await this.connection();
        await this.truncate(conn);
        const now = this.clock.monotonicMs();
        const active = [...this.parts.values()].filter((f) => !f.needsTruncation && !f.stalled && f.retryAtMs <= now && f.partition.role === 'follower');
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

  private async truncate(conn: Connection): Promise<void> {
    const now = this.clock.monotonicMs();
    const pending = [...this.parts.values()].filter((f) => f.needsTruncation && !f.stalled && f.retryAtMs <= now);
    if (pending.length === 0) return;
    const req: OffsetForLeaderEpochRequest = { replicaId: this.deps.brokerId, topics: [] };
    for (const f of pending) {
      const p = f.partition;
      let t = req.topics.find((x) => x.name === p.topic);
      if (!t) req.topics.push((t = { name: p.topic, partitions: [] }));
      t.partitions.push({ partition: p.index, leaderEpoch: p.epochs.latestEpoch, currentLeaderEpoch: p.leaderEpoch });
    }
    const res = await conn.request('OffsetForLeaderEpoch', req, { timeoutMs: 5000 });
    for (const t of res.topics) {
      for (const r of t.partitions) {
        const f = this.parts.get(`${t.name}\u0000${r.partition}`);
        if (!f) continue;
        const err = errorOf(r.error);
        if (err) {
          onRefusal(f, err.code, this.clock.monotonicMs(), this.limits.replicaBackoffMs);
          continue;
        }
        const p = f.partition;
        // No epoch at or below ours on the leader: nothing of ours is known to be shared.
        const target = r.endOffset < 0 ? p.logStartOffset : Math.min(r.endOffset, p.logEndOffset);
        if (target < p.logEndOffset) {
          this.logger.info({ topic: p.topic, partition: p.index, from: p.logEndOffset, to: target, ourEpoch: p.epochs.latestEpoch, leaderEpoch: r.leaderEpoch }, 'truncating a divergent tail');
          await p.truncateTo(Math.max(target, p.logStartOffset));
        }
        f.needsTruncation = false;
      }
    }
  }

  private async fetchOnce(conn: Connection, active: Followed[]): Promise<void> {
    const req: FetchRequest = {
      replicaId: this.deps.brokerId,
      maxWaitMs: this.limits.replicaFetchWaitMs,
      minBytes: 1,
      maxBytes: this.limits.replicaFetchBytesMax,
      topics: [],
    };
    for (const f of active) {
      const p = f.partition;
      let t = req.topics.find((x) => x.name === p.topic);
      if (!t) req.topics.push((t = { name: p.topic, partitions: [] }));
      t.partitions.push({ partition: p.index, fetchOffset: p.logEndOffset, maxBytes: this.limits.replicaFetchPartitionBytesMax, currentLeaderEpoch: p.leaderEpoch });
    }
    const res = await conn.request('Fetch', req, { timeoutMs: this.limits.replicaFetchWaitMs + 10_000 });
    for (const t of res.topics) {
      for (const r of t.partitions) {
        const f = this.parts.get(`${t.name}\u0000${r.partition}`);
        if (!f || f.partition.role !== 'follower') continue;
        const p = f.partition;
        const err = errorOf(r.error);
        if (err) {
          if (err.code === 'OFFSET_OUT_OF_RANGE') {
            if (p.logEndOffset < r.logStartOffset) {
              this.logger.warn({ topic: p.topic, partition: p.index, ours: p.logEndOffset, leaderStart: r.logStartOffset }, 'fell behind the leader\'s log start: starting over there');
              await p.resetTo(r.logStartOffset);
            } else {
              f.needsTruncation = true;
            }
          } else if (['FENCED_LEADER_EPOCH', 'NOT_LEADER', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION'].includes(err.code)) {
            onRefusal(f, err.code, this.clock.monotonicMs(), this.limits.replicaBackoffMs);
          } else {
            this.logger.debug({ code: err.code, topic: p.topic, partition: p.index }, 'replica fetch error');
          }
          continue;
        }
        if (r.records.length > 0) await p.appendAsFollower(r.records, r.highWatermark);
        else p.setFollowerHw(r.highWatermark);
      }
    }
  }
}
