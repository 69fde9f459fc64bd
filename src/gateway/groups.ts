/**
 * Consumer groups over HTTP, in the Kafka REST proxy's model: each HTTP member is a server-side
 * group consumer held by this gateway. The consumer heartbeats on its own, so a client that simply
 * stops calling would keep its partitions forever; members idle for `memberIdleMsMax` are
 * therefore expired here (their consumer leaves the group, which hands their partitions to the
 * others). The number of members is bounded because each holds broker connections and a slot in
 * its group.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, ConsumerRecord, EdgeqClient, TopicPartitionOffset } from '../client/index.ts';
import { EdgeqError, isEdgeqError, type ErrorCode } from '../core/index.ts';
import { COORDINATOR_DEFAULTS } from '../group/index.ts';
import { GATEWAY_CLIENT_ID } from '../protocol/index.ts';
import type { GatewayLimits } from './limits.ts';

/** Most topics one member may subscribe to (bounds the body and the group's metadata). */
export const MEMBER_TOPICS_MAX = 100;
/** Retry-After hint when the gateway holds `membersMax` members: a slot frees when one leaves or expires. */
export const MEMBERS_RETRY_AFTER_MS = 5_000;
/** Floor of the expiry sweep period; the sweep runs at a quarter of `memberIdleMsMax` above it. */
export const MEMBER_SWEEP_MS_MIN = 50;
/**
 * Longest group id, in UTF-8 bytes: the coordinator's bound (Kafka tools assume ≤ 255). Checked at
 * join, or the member would be created and only its consumer's join would fail, on every poll.
 */
export const GROUP_ID_BYTES_MAX = COORDINATOR_DEFAULTS.groupIdBytesMax;
// C0 and C1 control characters and DEL, which the coordinator refuses in group ids too.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/** Throws INVALID_GROUP unless `group` is an id the coordinator accepts. */
export function checkGroupId(group: string): void {
  if (group === '' || Buffer.byteLength(group, 'utf8') > GROUP_ID_BYTES_MAX || CONTROL_CHARS.test(group)) {
    throw new EdgeqError('INVALID_GROUP', `group id must be 1..${GROUP_ID_BYTES_MAX} UTF-8 bytes without control characters`, { details: { groupIdBytesMax: GROUP_ID_BYTES_MAX } });
  }
}

/** Group errors a member recovers from by rejoining, which its consumer does on its own. */
const REJOIN_CODES: ReadonlySet<ErrorCode> = new Set(['ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'REBALANCE_IN_PROGRESS']);

interface Member {
  id: string;
  group: string;
  topics: string[];
  consumer: Consumer;
  /** When the last poll or commit ended (or the member joined). */
  lastSeenMs: number;
  /** Requests using the member now; a member in a long poll is never idle. */
  inflight: number;
  /** Serializes polls and commits: one consumer is not safe to poll concurrently. */
  queue: Promise<unknown>;
}

/** What joining takes. */
export interface JoinRequest {
  topics: string[];
  fromBeginning: boolean;
}

/** The members this gateway holds. */
export class GroupMembers {
  private readonly members = new Map<string, Member>();
  private readonly sweep: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly client: EdgeqClient,
    private readonly limits: GatewayLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.sweep = setInterval(() => this.expireIdle(), Math.max(MEMBER_SWEEP_MS_MIN, Math.floor(limits.memberIdleMsMax / 4)));
    // The sweep alone must not keep a process alive.
    this.sweep.unref();
  }

  get size(): number {
    return this.members.size;
  }

  /** Creates a member of `group` subscribed to `req.topics`; THROTTLED past `membersMax`. */
  join(group: string, req: JoinRequest): { memberId: string; topics: string[] } {
    if (this.closed) throw new EdgeqError('BROKER_NOT_AVAILABLE', 'the gateway is stopping');
    if (this.members.size >= this.limits.membersMax) {
      throw new EdgeqError('THROTTLED', `${this.members.size} group members are held, the most the gateway holds (membersMax)`, { details: { retryAfterMs: MEMBERS_RETRY_AFTER_MS } });
    }
    const consumer = this.client.consumer({
      groupId: group,
      fromBeginning: req.fromBeginning,
      // Commits are explicit (the commit route): what a client polled is not processed until it says so.
      autoCommit: false,
      maxWaitMs: Math.min(this.limits.waitMsMax, 500),
      pollRecordsMax: this.limits.recordsMax,
      // The cell's own id: the broker does not limit it (the gateway limits per tenant itself).
      clientId: GATEWAY_CLIENT_ID,
    });
    consumer.subscribe(req.topics);
    const id = randomUUID();
    const member: Member = { id, group, topics: req.topics, consumer, lastSeenMs: this.now(), inflight: 0, queue: Promise.resolve() };
    this.members.set(id, member);
    // Start joining now, so the first poll finds the assignment under way.
    void consumer.poll({ timeoutMs: 0 }).catch(() => undefined);
    return { memberId: id, topics: req.topics };
  }

  /** The topics of a member (for grant checks); NOT_FOUND when unknown. */
  topicsOf(group: string, id: string): string[] {
    return this.get(group, id).topics;
  }

  private get(group: string, id: string): Member {
    const m = this.members.get(id);
    if (!m || m.group !== group) throw new EdgeqError('NOT_FOUND', `group "${group}" has no member "${id}" here (it left, expired, or joined through another gateway)`, { details: { group, memberId: id } });
    return m;
  }

  private use<T>(group: string, id: string, fn: (consumer: Consumer) => Promise<T>): Promise<T> {
    const m = this.get(group, id);
    m.inflight++;
    const run = m.queue.then(() => {
      if (!this.members.has(id)) throw new EdgeqError('NOT_FOUND', `member "${id}" left`, { details: { group, memberId: id } });
      return fn(m.consumer);
    });
    m.queue = run.catch(() => undefined);
    return run.finally(() => {
      m.inflight--;
      m.lastSeenMs = this.now();
    });
  }

  /** Polls up to `maxRecords`, waiting up to `waitMs` for some. */
  poll(group: string, id: string, o: { maxRecords: number; waitMs: number }): Promise<ConsumerRecord[]> {
    return this.use(group, id, (c) => c.poll({ maxRecords: o.maxRecords, timeoutMs: o.waitMs }));
  }

  /**
   * Commits `offsets`, or without them the positions after everything polled so far. A refusal
   * from a rebalance (the member's generation is over, or it was dropped) is answered retriable:
   * the member's consumer rejoins the group by itself, so the client polls again and commits what
   * that poll returned, through the same member id.
   */
  async commit(group: string, id: string, offsets?: TopicPartitionOffset[]): Promise<void> {
    try {
      await this.use(group, id, (c) => c.commit(offsets));
    } catch (err) {
      if (!isEdgeqError(err) || !REJOIN_CODES.has(err.code)) throw err;
      throw new EdgeqError(err.code, `${err.message}; member "${id}" rejoins group "${group}" by itself: poll again, then commit what that poll returned`, {
        cause: err,
        retriable: true,
        details: { ...err.details, group, memberId: id, rejoining: true },
      });
    }
  }

  /** Removes a member and waits for its consumer to leave the group. */
  async leave(group: string, id: string): Promise<void> {
    const m = this.get(group, id);
    this.members.delete(id);
    await m.consumer.close();
  }

  /** Expires members idle for `memberIdleMsMax`; their consumers leave, and the group rebalances. */
  expireIdle(): void {
    const cutoff = this.now() - this.limits.memberIdleMsMax;
    for (const m of [...this.members.values()]) {
      if (m.inflight > 0 || m.lastSeenMs > cutoff) continue;
      this.members.delete(m.id);
      void m.consumer.close().catch(() => undefined);
    }
  }

  /** Closes every member (they leave their groups) and stops the sweep. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweep);
    const all = [...this.members.values()];
    this.members.clear();
    await Promise.allSettled(all.map((m) => m.consumer.close()));
  }
}
