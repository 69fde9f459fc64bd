/**
 * The broker-side group coordinator: consumer groups (join, sync, heartbeat, leave) and their
 * committed offsets. Pure: no sockets. Each method takes a protocol request and resolves with the
 * protocol response; per-request failures go in the response's `error` field (never thrown), so
 * the broker only encodes what it gets back.
 *
 * Unknown groups: DescribeGroups answers GROUP_ID_NOT_FOUND in the group's `error` (state reads
 * `Dead`). A group known only by its committed offsets (no members since the broker started)
 * lists and describes as `Empty`.
 */
import { randomUUID } from 'node:crypto';
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger } from '../core/index.ts';
import {
  wireError,
  type DescribeGroupsRequest,
  type DescribeGroupsResponse,
  type GroupDescription,
  type GroupListing,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinGroupRequest,
  type JoinGroupResponse,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type ListGroupsResponse,
  type OffsetCommitPartitionResult,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type OffsetFetchTopicResult,
  type SyncGroupRequest,
  type SyncGroupResponse,
  type WireError,
} from '../protocol/index.ts';
import { resolveCoordinatorConfig, type CoordinatorConfig } from './coordinator-config.ts';
import { Group, type JoinParams, type MemberProtocol } from './group.ts';
import type { CommittedOffset, OffsetCommitEntry, OffsetStore } from './offset-store.ts';

/** Where a request came from (the broker knows it from the connection). */
export interface RequestContext {
  clientId: string;
  host: string;
}

/** What the coordinator needs from the broker. */
export interface CoordinatorDeps {
  /** Committed offsets, loaded from the `__consumer_offsets` log. The coordinator does not close it. */
  offsets: OffsetStore;
  clock?: Clock;
  logger?: Logger;
  /**
   * True when the partition exists (and this broker may take commits for it). Commits to others
   * get UNKNOWN_TOPIC_OR_PARTITION. Every partition is accepted when absent.
   */
  validatePartition?: (topic: string, partition: number) => boolean;
  /**
   * The id of the topic now (KIP-516): commits are stamped with it, and a committed offset of
   * another incarnation of the name (the topic was deleted and created again) is never served.
   * Absent: ids are not checked.
   */
  topicIdOf?: (topic: string) => string | undefined;
  /** Member ids for first joins; `${clientId}-${uuid}` when absent. */
  newMemberId?: (clientId: string) => string;
}

// C0 and C1 control characters (and DEL) would break logs and tools that print group ids.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Kafka's classic group coordinator over an offset store. */
export class GroupCoordinator {
  readonly config: CoordinatorConfig;
  private readonly offsets: OffsetStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly validatePartition: (topic: string, partition: number) => boolean;
  private readonly topicIdOf: (topic: string) => string | undefined;
  private readonly newMemberId: (clientId: string) => string;
  /** Bounded by `groupsMax`; insertion order makes eviction of Empty groups oldest-first. */
  private readonly groups = new Map<string, Group>();
  private closed = false;

  constructor(deps: CoordinatorDeps, config: Partial<CoordinatorConfig> = {}) {
    this.config = resolveCoordinatorConfig(config);
    this.offsets = deps.offsets;
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ component: 'group-coordinator' });
    this.validatePartition = deps.validatePartition ?? (() => true);
    this.topicIdOf = deps.topicIdOf ?? (() => undefined);
    this.newMemberId = deps.newMemberId ?? ((clientId) => `${clientId}-${randomUUID()}`);
  }

  /** JoinGroup: resolves when the rebalance this join takes part in completes (or it fails). */
  async joinGroup(req: JoinGroupRequest, ctx: RequestContext): Promise<JoinGroupResponse> {
    const memberId = req.memberId ?? '';
    const fail = (err: unknown): JoinGroupResponse => ({
      error: wireError(err),
      generationId: -1,
      protocolName: '',
      leaderId: '',
      memberId,
      members: [],
    });
    try {
      this.checkOpen();
      this.checkGroupId(req.groupId);
      const params = this.joinParams(req, ctx);
      return await this.groupForJoin(req.groupId).join(params);
    } catch (err) {
      return fail(err);
    }
  }

  /** SyncGroup: the leader's sync stores the assignments; every member's sync gets its own. */
  async syncGroup(req: SyncGroupRequest): Promise<SyncGroupResponse> {
    try {
      this.checkOpen();
      this.checkGroupId(req.groupId);
      return await this.existingGroup(req.groupId, req.memberId).sync(req);
    } catch (err) {
      return { error: wireError(err), assignment: Buffer.alloc(0) };
    }
  }

  /** Heartbeat: keeps the member's session alive; REBALANCE_IN_PROGRESS asks it to rejoin. */
  async heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.answer(() => this.existingGroup(req.groupId, req.memberId).heartbeat(req), req.groupId);
  }

  /** LeaveGroup: removes the member at once; the others rebalance. */
  async leaveGroup(req: LeaveGroupRequest): Promise<LeaveGroupResponse> {
    return this.answer(() => this.existingGroup(req.groupId, req.memberId).leave(req.memberId), req.groupId);
  }

  /**
   * OffsetCommit, fenced by generation (see `Group.validateCommit`). Partitions are checked one by
   * one; the valid ones are written as one batch and answered once durable.
   */
  async commitOffsets(req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    const everyPartition = (err: WireError | null): OffsetCommitResponse => ({
      error: err,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partition: p.partition, error: err })) })),
    });
    try {
      this.checkOpen();
      this.checkGroupId(req.groupId);
      const count = req.topics.reduce((n, t) => n + t.partitions.length, 0);
      if (count > this.config.commitPartitionsMax) {
        throw new EdgeqError('INVALID_ARGUMENT', `commit of ${count} partitions is over ${this.config.commitPartitionsMax}`, {
          details: { commitPartitionsMax: this.config.commitPartitionsMax },
        });
      }
      const group = this.groups.get(req.groupId);
      const memberId = req.memberId ?? '';
      const fenced = group
        ? group.validateCommit(req.generationId, memberId)
        : req.generationId < 0 && memberId === ''
          ? null
          : new EdgeqError('UNKNOWN_MEMBER_ID', `group ${req.groupId} has no member "${memberId}"`, { details: { groupId: req.groupId } });
      if (fenced) throw fenced;
    } catch (err) {
      return everyPartition(wireError(err));
    }

    const results = new Map<string, OffsetCommitPartitionResult>();
    const key = (topic: string, partition: number): string => JSON.stringify([topic, partition]);
    const entries: OffsetCommitEntry[] = [];
    for (const t of req.topics) {
      const topicId = this.topicIdOf(t.name);
      const stale =
        t.topicId && topicId && t.topicId !== topicId
          ? new EdgeqError('UNKNOWN_TOPIC_ID', `topic ${t.name} is now ${topicId}, not ${t.topicId}: it was deleted and created again`, {
              details: { topic: t.name, topicId: t.topicId, currentTopicId: topicId },
            })
          : null;
      for (const p of t.partitions) {
        const err = stale ?? this.checkCommitPartition(t.name, p.partition, p.offset, p.metadata ?? '');
        results.set(key(t.name, p.partition), { partition: p.partition, error: err ? wireError(err) : null });
        if (!err) entries.push({ topic: t.name, partition: p.partition, offset: p.offset, metadata: p.metadata ?? '', ...(topicId ? { topicId } : {}) });
      }
    }
    try {
      await this.offsets.commit(req.groupId, entries);
    } catch (err) {
      const w = wireError(err);
      this.logger.warn({ groupId: req.groupId, err: toEdgeqError(err) }, 'offset commit failed');
      for (const e of entries) results.set(key(e.topic, e.partition), { partition: e.partition, error: w });
    }
    return {
      error: null,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => results.get(key(t.name, p.partition))!) })),
    };
  }

  /** OffsetFetch: -1 for partitions with nothing committed; no topics = everything committed. */
  async fetchOffsets(req: OffsetFetchRequest): Promise<OffsetFetchResponse> {
    try {
      this.checkOpen();
      this.checkGroupId(req.groupId);
    } catch (err) {
      return { error: wireError(err), topics: [] };
    }
    const wanted = req.topics ?? [];
    if (wanted.length === 0) {
      const byTopic = new Map<string, OffsetFetchTopicResult>();
      for (const o of this.offsets.groupOffsets(req.groupId)) {
        if (!this.current(o.topic, o)) continue;
        let t = byTopic.get(o.topic);
        if (!t) {
          t = { name: o.topic, partitions: [] };
          byTopic.set(o.topic, t);
        }
        t.partitions.push({ partition: o.partition, error: null, offset: o.offset, metadata: o.metadata });
      }
      return { error: null, topics: [...byTopic.values()] };
    }
    return {
      error: null,
      topics: wanted.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((partition) => {
          const found = this.offsets.get(req.groupId, t.name, partition);
          const c = found && this.current(t.name, found) ? found : undefined;
          return { partition, error: null, offset: c?.offset ?? -1, metadata: c?.metadata ?? '' };
        }),
      })),
    };
  }

  /**
   * False for an offset committed for another incarnation of `topic`: the topic was deleted and
   * created again, and the old offsets mean nothing in the new log.
   */
  private current(topic: string, c: CommittedOffset): boolean {
    if (!c.topicId) return true;
    const now = this.topicIdOf(topic);
    return now === undefined || now === c.topicId;
  }

  /** ListGroups: every group with members or committed offsets, sorted by id. */
  async listGroups(): Promise<ListGroupsResponse> {
    if (this.closed) return { error: wireError(this.closedError()), groups: [] };
    const out = new Map<string, GroupListing>();
    for (const g of this.groups.values()) out.set(g.groupId, g.listing());
    for (const id of this.offsets.groupIds()) if (!out.has(id)) out.set(id, { groupId: id, state: 'Empty', protocolType: '' });
    return { error: null, groups: [...out.values()].sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0)) };
  }

  /** DescribeGroups: one description per id, GROUP_ID_NOT_FOUND (state `Dead`) for unknown ids. */
  async describeGroups(req: DescribeGroupsRequest): Promise<DescribeGroupsResponse> {
    return { groups: req.groupIds.map((id) => this.describeOne(id)) };
  }

  /**
   * Stops the coordinator: pending joins and syncs are answered COORDINATOR_NOT_AVAILABLE, every
   * timer stops, later requests get COORDINATOR_NOT_AVAILABLE. Resolves once commits in flight
   * have settled. The offsets log stays open (the broker owns it).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const g of this.groups.values()) g.shutdown();
    this.groups.clear();
    await this.offsets.idle();
  }

  // -------------------------------------------------------------------------------------------

  private describeOne(groupId: string): GroupDescription {
    const blank = { state: 'Dead', protocolType: '', protocolName: '', generationId: -1, members: [], leaderId: '' };
    try {
      this.checkOpen();
      this.checkGroupId(groupId);
    } catch (err) {
      return { groupId, error: wireError(err), ...blank };
    }
    const g = this.groups.get(groupId);
    if (g) return g.describe();
    if (this.offsets.hasGroup(groupId)) return { groupId, error: null, ...blank, state: 'Empty', generationId: 0 };
    return {
      groupId,
      error: wireError(new EdgeqError('GROUP_ID_NOT_FOUND', `group ${groupId} does not exist`, { details: { groupId } })),
      ...blank,
    };
  }

  /** Runs a request that answers with an optional error, catching validation failures. */
  private answer(fn: () => EdgeqError | null, groupId: string): { error: WireError | null } {
    try {
      this.checkOpen();
      this.checkGroupId(groupId);
      const err = fn();
      return { error: err ? wireError(err) : null };
    } catch (err) {
      return { error: wireError(err) };
    }
  }

  private checkOpen(): void {
    if (this.closed) throw this.closedError();
  }

  private closedError(): EdgeqError {
    return new EdgeqError('COORDINATOR_NOT_AVAILABLE', 'the group coordinator is closed');
  }

  /** Group ids: 1..groupIdBytesMax UTF-8 bytes, no control characters. */
  private checkGroupId(groupId: string): void {
    if (typeof groupId !== 'string' || groupId === '') throw new EdgeqError('INVALID_GROUP', 'group id is empty');
    if (utf8Bytes(groupId) > this.config.groupIdBytesMax) {
      throw new EdgeqError('INVALID_GROUP', `group id is over ${this.config.groupIdBytesMax} bytes`, {
        details: { groupIdBytesMax: this.config.groupIdBytesMax },
      });
    }
    if (CONTROL_CHARS.test(groupId)) throw new EdgeqError('INVALID_GROUP', 'group id holds control characters');
  }

  /** The group a request names, or UNKNOWN_MEMBER_ID: only joins create groups. */
  private existingGroup(groupId: string, memberId: string): Group {
    const g = this.groups.get(groupId);
    if (!g) {
      throw new EdgeqError('UNKNOWN_MEMBER_ID', `group ${groupId} has no member "${memberId}"`, { details: { groupId, memberId } });
    }
    return g;
  }

  /** The group to join, created when new; evicts the oldest Empty group when `groupsMax` is reached. */
  private groupForJoin(groupId: string): Group {
    const existing = this.groups.get(groupId);
    if (existing) return existing;
    if (this.groups.size >= this.config.groupsMax) {
      let evicted = false;
      for (const g of this.groups.values()) {
        if (g.state === 'Empty') {
          this.groups.delete(g.groupId);
          evicted = true;
          break;
        }
      }
      if (!evicted) {
        throw new EdgeqError('QUEUE_FULL', `coordinator already holds ${this.config.groupsMax} active groups`, {
          details: { groupsMax: this.config.groupsMax },
        });
      }
    }
    const g = new Group(groupId, { clock: this.clock, logger: this.logger, config: this.config, newMemberId: this.newMemberId });
    this.groups.set(groupId, g);
    return g;
  }

  /** Checks a JoinGroup's timeouts, protocols and sizes (INVALID_ARGUMENT) and copies its bytes. */
  private joinParams(req: JoinGroupRequest, ctx: RequestContext): JoinParams {
    const c = this.config;
    const bad = (message: string, details: Record<string, unknown> = {}): never => {
      throw new EdgeqError('INVALID_ARGUMENT', message, { details: { groupId: req.groupId, ...details } });
    };
    const clientId = ctx.clientId || req.clientId || 'member';
    if (utf8Bytes(clientId) > c.clientIdBytesMax) bad(`client id is over ${c.clientIdBytesMax} bytes`);
    const session = req.sessionTimeoutMs;
    if (!Number.isSafeInteger(session) || session < c.sessionTimeoutMsMin || session > c.sessionTimeoutMsMax) {
      bad(`session timeout ${session} ms is outside [${c.sessionTimeoutMsMin}, ${c.sessionTimeoutMsMax}]`, {
        sessionTimeoutMsMin: c.sessionTimeoutMsMin,
        sessionTimeoutMsMax: c.sessionTimeoutMsMax,
      });
    }
    // 0 (an older client) means "the session timeout", as in Kafka's JoinGroup v0.
    const rebalance = req.rebalanceTimeoutMs === 0 ? session : req.rebalanceTimeoutMs;
    if (!Number.isSafeInteger(rebalance) || rebalance < 1 || rebalance > c.rebalanceTimeoutMsMax) {
      bad(`rebalance timeout ${rebalance} ms is outside [1, ${c.rebalanceTimeoutMsMax}]`, { rebalanceTimeoutMsMax: c.rebalanceTimeoutMsMax });
    }
    if (!req.protocolType || utf8Bytes(req.protocolType) > c.protocolNameBytesMax) {
      bad(`protocol type must be 1..${c.protocolNameBytesMax} bytes`);
    }
    if (req.protocols.length === 0 || req.protocols.length > c.protocolsPerMemberMax) {
      bad(`a member must announce 1..${c.protocolsPerMemberMax} protocols, got ${req.protocols.length}`);
    }
    const names = new Set<string>();
    let metadataBytes = 0;
    const protocols: MemberProtocol[] = req.protocols.map((p) => {
      if (!p.name || utf8Bytes(p.name) > c.protocolNameBytesMax) bad(`protocol names must be 1..${c.protocolNameBytesMax} bytes`);
      if (names.has(p.name)) bad(`protocol ${p.name} is announced twice`);
      names.add(p.name);
      metadataBytes += p.metadata.length;
      // Copied: the request's bytes may be a view into a whole frame we should not keep alive.
      return { name: p.name, metadata: Buffer.from(p.metadata) };
    });
    if (metadataBytes > c.memberMetadataBytesMax) {
      bad(`member metadata is ${metadataBytes} bytes, over ${c.memberMetadataBytesMax}`, { memberMetadataBytesMax: c.memberMetadataBytesMax });
    }
    return {
      memberId: req.memberId ?? '',
      clientId,
      host: ctx.host,
      sessionTimeoutMs: session,
      rebalanceTimeoutMs: rebalance,
      protocolType: req.protocolType,
      protocols,
    };
  }

  private checkCommitPartition(topic: string, partition: number, offset: number, metadata: string): EdgeqError | null {
    if (!Number.isSafeInteger(offset) || offset < 0) {
      return new EdgeqError('INVALID_ARGUMENT', `offset ${offset} of ${topic}/${partition} is not a non-negative integer`, {
        details: { topic, partition },
      });
    }
    if (utf8Bytes(metadata) > this.config.offsetMetadataBytesMax) {
      return new EdgeqError('INVALID_ARGUMENT', `offset metadata of ${topic}/${partition} is over ${this.config.offsetMetadataBytesMax} bytes`, {
        details: { topic, partition, offsetMetadataBytesMax: this.config.offsetMetadataBytesMax },
      });
    }
    if (topic === '' || !Number.isSafeInteger(partition) || partition < 0 || !this.validatePartition(topic, partition)) {
      return new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `${topic}/${partition} does not exist`, { details: { topic, partition } });
    }
    return null;
  }
}
