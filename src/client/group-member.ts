/**
 * Membership of one consumer group, Kafka's classic protocol: FindCoordinator → JoinGroup (the
 * leader gets every member's subscription and computes the assignment client-side) → SyncGroup →
 * a heartbeat loop. A heartbeat answered REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION starts a
 * rejoin in the background (so a member that is not polling still rejoins within the rebalance
 * timeout); UNKNOWN_MEMBER_ID also forgets the member id. Before each rejoin the consumer's
 * `onRevoke` runs (it commits what was consumed), after each sync `onAssign`.
 */
import { EdgeqError, toEdgeqError, type Logger, type TimerHandle } from '../core/index.ts';
import {
  CONSUMER_PROTOCOL_TYPE,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  type Assignor,
} from '../group/index.ts';
import { errorOf, type OffsetCommitTopic } from '../protocol/index.ts';
import type { Cluster } from './cluster.ts';
import { retry, type RetryOptions } from './retry.ts';

/** A topic and partition. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

/** An offset for a partition: the next offset to consume. */
export interface TopicPartitionOffset extends TopicPartition {
  offset: number;
  /** The commit's metadata string (Kafka's offset metadata); absent: empty. */
  metadata?: string;
}

/** Options of a membership. */
export interface GroupMemberOptions {
  groupId: string;
  clientId: string;
  assignor: Assignor;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number;
  requestTimeoutMs: number;
  retry: RetryOptions;
  logger: Logger;
}

/** What the consumer does around rebalances. */
export interface GroupMemberHooks {
  /** Runs before leaving the current generation (commit consumed positions). */
  onRevoke(partitions: TopicPartition[]): Promise<void>;
  /** Runs once a generation's assignment is known. */
  onAssign(partitions: TopicPartition[]): Promise<void>;
}

type State = 'unjoined' | 'joining' | 'stable' | 'closed';

/** One consumer's membership of a group. */
export class GroupMember {
  memberId = '';
  generationId = -1;
  leaderId = '';
  private state: State = 'unjoined';
  private topics: string[] = [];
  private assignment: TopicPartition[] = [];
  private joining: Promise<void> | null = null;
  private rejoinRequested = false;
  /** True while `onRevoke` runs inside a join: its commit belongs to the generation being left. */
  private revoking = false;
  /** False until the first join completed: until then the member has consumed nothing of its own. */
  private joinedOnce = false;
  private heartbeatTimer: TimerHandle | null = null;
  private readonly logger: Logger;

  constructor(
    private readonly cluster: Cluster,
    private readonly options: GroupMemberOptions,
    private readonly hooks: GroupMemberHooks,
  ) {
    this.logger = options.logger.child({ component: 'group-member', groupId: options.groupId });
  }

  /** The partitions of the current generation. */
  get assigned(): readonly TopicPartition[] {
    return this.assignment;
  }

  /** True while the member holds a generation. */
  get isStable(): boolean {
    return this.state === 'stable';
  }

  /** Sets the subscription; a change rejoins. */
  subscribe(topics: readonly string[]): void {
    const next = [...new Set(topics)].sort();
    if (next.join('\u0000') === this.topics.join('\u0000')) return;
    this.topics = next;
    if (this.state === 'stable') this.requestRejoin('subscription changed');
  }

  /** Joins (or rejoins) when needed; resolves once the member holds a generation. */
  ensureActive(): Promise<void> {
    if (this.state === 'closed') return Promise.reject(new EdgeqError('CONNECTION_CLOSED', 'the consumer is closed', { retriable: false }));
    if (this.state === 'stable' && !this.joining) return Promise.resolve();
    this.joining ??= this.joinLoop().finally(() => (this.joining = null));
    return this.joining;
  }

  private async joinLoop(): Promise<void> {
    do {
      this.rejoinRequested = false;
      this.state = 'joining';
      try {
        await this.join();
      } catch (err) {
        if (this.state === 'joining') this.state = 'unjoined';
        throw err;
      }
      // A rebalance noticed while onAssign ran (the new generation is already gone): go again.
    } while (this.rejoinRequested && (this.state as State) !== 'closed');
  }

  /** Leaves the generation and joins again (in the background). */
  requestRejoin(reason: string): void {
    if (this.state !== 'stable') return;
    this.logger.info({ reason, generationId: this.generationId }, 'rejoining');
    this.stopHeartbeat();
    this.state = 'unjoined';
    if (this.joining) {
      this.rejoinRequested = true;
      return;
    }
    this.ensureActive().catch((err) => this.logger.warn({ err: toEdgeqError(err).message }, 'rejoin failed; the next poll retries'));
  }

  private async join(): Promise<void> {
    if (this.assignment.length > 0) {
      const revoked = this.assignment;
      this.assignment = [];
      this.revoking = true;
      try {
        await this.hooks.onRevoke(revoked);
      } catch (err) {
        this.logger.warn({ err: toEdgeqError(err).message }, 'revoke hook failed');
      } finally {
        this.revoking = false;
      }
    }
    const joinTimeoutMs = this.options.rebalanceTimeoutMs + this.options.requestTimeoutMs;
    await retry(async () => {
      if (this.state === 'closed') throw new EdgeqError('CONNECTION_CLOSED', 'the consumer is closed', { retriable: false });
      const conn = await this.coordinator();
      const join = await conn.request(
        'JoinGroup',
        {
          groupId: this.options.groupId,
          sessionTimeoutMs: this.options.sessionTimeoutMs,
          rebalanceTimeoutMs: this.options.rebalanceTimeoutMs,
          memberId: this.memberId,
          protocolType: CONSUMER_PROTOCOL_TYPE,
          protocols: [{ name: this.options.assignor.name, metadata: encodeSubscription({ topics: this.topics }) }],
          clientId: this.options.clientId,
        },
        { timeoutMs: joinTimeoutMs },
      );
      const joinErr = errorOf(join.error, { groupId: this.options.groupId });
      if (joinErr) throw this.onGroupError(joinErr);
      this.memberId = join.memberId;
      this.generationId = join.generationId;
      this.leaderId = join.leaderId;
      let assignments: { memberId: string; assignment: Uint8Array }[] = [];
      if (join.leaderId === join.memberId) assignments = await this.computeAssignments(join.members);
      const sync = await conn.request(
        'SyncGroup',
        { groupId: this.options.groupId, generationId: this.generationId, memberId: this.memberId, assignments },
        { timeoutMs: joinTimeoutMs },
      );
      const syncErr = errorOf(sync.error, { groupId: this.options.groupId });
      if (syncErr) throw this.onGroupError(syncErr);
      const decoded = decodeAssignment(sync.assignment);
      this.assignment = decoded.partitions.flatMap((tp) => tp.partitions.map((partition) => ({ topic: tp.topic, partition })));
    }, {
      ...this.options.retry,
      clock: this.cluster.clock,
      // A rejoin after ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID is the normal way forward.
      isRetriable: (e) => e.retriable || e.code === 'ILLEGAL_GENERATION' || e.code === 'UNKNOWN_MEMBER_ID',
    });
    this.logger.info({ generationId: this.generationId, memberId: this.memberId, leader: this.leaderId === this.memberId, partitions: this.assignment.length }, 'joined group');
    this.joinedOnce = true;
    if ((this.state as State) === 'closed') return;
    // Stable before onAssign runs: heartbeats must flow while it fetches offsets.
    this.state = 'stable';
    this.startHeartbeat();
    await this.hooks.onAssign(this.assignment);
  }

  /** Reacts to a group error (forgets the member id or coordinator) and returns it to throw. */
  private onGroupError(err: EdgeqError): EdgeqError {
    if (err.code === 'UNKNOWN_MEMBER_ID') {
      this.memberId = '';
      this.generationId = -1;
    }
    if (err.code === 'COORDINATOR_NOT_AVAILABLE' || err.code === 'CONNECTION_CLOSED') this.cluster.invalidateCoordinator(this.options.groupId);
    return err;
  }

  private async coordinator() {
    try {
      return await this.cluster.coordinatorFor(this.options.groupId);
    } catch (err) {
      this.cluster.invalidateCoordinator(this.options.groupId);
      throw err;
    }
  }

  private async computeAssignments(members: readonly { memberId: string; metadata: Uint8Array }[]) {
    const subs = members.map((m) => ({ memberId: m.memberId, topics: decodeSubscription(m.metadata).topics }));
    const allTopics = [...new Set(subs.flatMap((s) => s.topics))];
    await this.cluster.ensureFresh(allTopics);
    const counts = new Map<string, number>();
    for (const t of allTopics) {
      const info = this.cluster.topic(t);
      if (info && info.partitions.length > 0) counts.set(t, info.partitions.length);
      else this.logger.warn({ topic: t }, 'subscribed topic does not exist; not assigned');
    }
    const plan = this.options.assignor.assign(subs, counts);
    return subs.map((s) => ({ memberId: s.memberId, assignment: encodeAssignment({ partitions: plan.get(s.memberId) ?? [] }) }));
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    const generation = this.generationId;
    const beat = async () => {
      if (this.state !== 'stable' || this.generationId !== generation) return;
      try {
        const conn = await this.coordinator();
        const res = await conn.request('Heartbeat', { groupId: this.options.groupId, generationId: generation, memberId: this.memberId });
        const err = errorOf(res.error, { groupId: this.options.groupId });
        if (err) throw err;
      } catch (raw) {
        const err = toEdgeqError(raw);
        if (this.state !== 'stable' || this.generationId !== generation) return;
        if (err.code === 'REBALANCE_IN_PROGRESS' || err.code === 'ILLEGAL_GENERATION' || err.code === 'UNKNOWN_MEMBER_ID') {
          this.onGroupError(err);
          this.requestRejoin(err.code);
          return;
        }
        // A lost coordinator: find it again next beat; the session timeout is the real deadline.
        this.onGroupError(err);
        this.logger.debug({ err: err.code }, 'heartbeat failed');
      }
      if (this.state === 'stable' && this.generationId === generation) {
        this.heartbeatTimer = this.cluster.clock.setTimeout(() => void beat(), this.options.heartbeatIntervalMs);
      }
    };
    this.heartbeatTimer = this.cluster.clock.setTimeout(() => void beat(), this.options.heartbeatIntervalMs);
  }

  private stopHeartbeat(): void {
    this.heartbeatTimer?.cancel();
    this.heartbeatTimer = null;
  }

  /**
   * Commits offsets under the current generation (or as a non-member with generation -1 when
   * `asMember` is false). A member that never held a generation (its first join is under way)
   * first waits for that join: the coordinator refuses a member's commit without a generation,
   * and such a member has no earlier generation whose partitions it could be committing for.
   * ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / REBALANCE_IN_PROGRESS also start a rejoin, but only
   * when they answer the membership the commit was sent under: a refusal that arrives after a
   * newer join answered must not make the member forget the id it was just given (a second member
   * would join while the first stayed until its session expired: issue 11, finding 12).
   */
  async commit(offsets: readonly TopicPartitionOffset[], asMember = true): Promise<void> {
    if (offsets.length === 0) return;
    if (asMember && !this.joinedOnce && !this.revoking) await this.ensureActive();
    const topics = new Map<string, OffsetCommitTopic>();
    for (const o of offsets) {
      let t = topics.get(o.topic);
      if (!t) {
        t = { name: o.topic, partitions: [] };
        topics.set(o.topic, t);
      }
      t.partitions.push({ partition: o.partition, offset: o.offset, ...(o.metadata ? { metadata: o.metadata } : {}) });
    }
    const generationId = asMember ? this.generationId : -1;
    const memberId = asMember ? this.memberId : '';
    const conn = await this.coordinator();
    const res = await conn.request('OffsetCommit', {
      groupId: this.options.groupId,
      generationId,
      memberId,
      topics: [...topics.values()],
    });
    let err = errorOf(res.error, { groupId: this.options.groupId });
    if (!err) {
      for (const t of res.topics) {
        for (const p of t.partitions) {
          err ??= errorOf(p.error, { groupId: this.options.groupId, topic: t.name, partition: p.partition });
        }
      }
    }
    if (err) {
      const current = this.memberId === memberId && this.generationId === generationId;
      if (asMember && (err.code === 'ILLEGAL_GENERATION' || err.code === 'UNKNOWN_MEMBER_ID' || err.code === 'REBALANCE_IN_PROGRESS')) {
        if (current) {
          this.onGroupError(err);
          this.requestRejoin(`commit failed: ${err.code}`);
        }
      } else {
        this.onGroupError(err);
      }
      throw err;
    }
  }

  /** The committed offsets of partitions (-1 where nothing was committed), with their metadata. */
  async committed(partitions: readonly TopicPartition[]): Promise<Map<string, { offset: number; metadata: string }>> {
    const byTopic = new Map<string, number[]>();
    for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
    const res = await retry(async () => {
      const conn = await this.coordinator();
      const r = await conn.request('OffsetFetch', {
        groupId: this.options.groupId,
        topics: [...byTopic].map(([name, ps]) => ({ name, partitions: ps })),
      });
      const err = errorOf(r.error, { groupId: this.options.groupId });
      if (err) throw this.onGroupError(err);
      return r;
    }, { ...this.options.retry, clock: this.cluster.clock });
    const out = new Map<string, { offset: number; metadata: string }>();
    for (const t of res.topics) {
      for (const p of t.partitions) {
        if (!p.error || p.error.code === 0) out.set(`${t.name}\u0000${p.partition}`, { offset: p.offset, metadata: p.metadata ?? '' });
      }
    }
    return out;
  }

  /** Stops heartbeats and leaves the group (best effort). */
  async leave(): Promise<void> {
    const wasMember = this.memberId !== '' && this.state !== 'closed';
    this.state = 'closed';
    this.stopHeartbeat();
    if (!wasMember) return;
    try {
      const conn = await this.cluster.coordinatorFor(this.options.groupId);
      await conn.request('LeaveGroup', { groupId: this.options.groupId, memberId: this.memberId }, { timeoutMs: this.options.requestTimeoutMs });
    } catch (err) {
      this.logger.debug({ err: toEdgeqError(err).message }, 'leave failed; the session timeout will remove the member');
    }
    this.memberId = '';
    this.generationId = -1;
    this.assignment = [];
  }
}
