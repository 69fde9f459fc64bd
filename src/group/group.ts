/**
 * One consumer group's state machine (Kafka's classic group protocol):
 *
 *   Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
 *     ▲                  ▲      │ (no members left)                  │ leader's sync
 *     └──────────────────┼──────┘                                    ▼
 *                        └──── join of leader / new metadata, leave, ─ Stable
 *                              session expiry
 *   any ──coordinator close──▶ Dead
 *
 * PreparingRebalance collects joins: it completes when every known member has (re)joined, or when
 * the rebalance timeout (the largest of the members') passes, dropping those that did not. A
 * rebalance out of Empty first waits `initialRebalanceDelayMs` (extended per new member, capped
 * by the rebalance timeout) so members starting together share one generation. Completing a join
 * bumps the generation, picks the protocol and the leader, and answers every join; the leader
 * alone gets the members' metadata. CompletingRebalance then waits for the leader's SyncGroup,
 * whose assignments answer every member's sync and make the group Stable.
 *
 * Requests are answered through resolved promises; failures are EdgeqErrors the coordinator puts
 * in the response's `error` field. Input shapes and sizes are checked by the coordinator first.
 */
import { assert, EdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import {
  wireError,
  type GroupDescription,
  type GroupListing,
  type HeartbeatRequest,
  type JoinGroupResponse,
  type SyncGroupRequest,
  type SyncGroupResponse,
} from '../protocol/index.ts';
import type { CoordinatorConfig } from './coordinator-config.ts';

/** The states of a group, as ListGroups and DescribeGroups report them. */
export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

/** A protocol (assignor) a member supports, with its metadata (for consumers: the subscription). */
export interface MemberProtocol {
  name: string;
  metadata: Buffer;
}

/** A validated JoinGroup, as the group sees it. */
export interface JoinParams {
  /** Empty for a first join: the group generates one. */
  memberId: string;
  clientId: string;
  host: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: MemberProtocol[];
}

/** What a group needs from the coordinator. */
export interface GroupDeps {
  clock: Clock;
  logger: Logger;
  config: CoordinatorConfig;
  newMemberId: (clientId: string) => string;
}

interface Member {
  readonly memberId: string;
  clientId: string;
  host: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocols: MemberProtocol[];
  assignment: Buffer;
  /** The member's JoinGroup waiting for the rebalance to complete. */
  awaitingJoin: ((r: JoinGroupResponse) => void) | null;
  /** The member's SyncGroup waiting for the leader's assignments. */
  awaitingSync: ((r: SyncGroupResponse) => void) | null;
  /** Monotonic time after which the member is dead unless it was heard from. */
  sessionDeadlineMs: number;
  sessionTimer: TimerHandle | null;
  sessionTimerAtMs: number;
}

const EMPTY = Buffer.alloc(0);

function sameProtocols(a: readonly MemberProtocol[], b: readonly MemberProtocol[]): boolean {
  return a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.metadata.equals(b[i]!.metadata));
}

function joinFailure(memberId: string, err: EdgeqError): JoinGroupResponse {
  return { error: wireError(err), generationId: -1, protocolName: '', leaderId: '', memberId, members: [] };
}

function syncFailure(err: EdgeqError): SyncGroupResponse {
  return { error: wireError(err), assignment: EMPTY };
}

/** One consumer group: members, generation, protocol, leader and timers. */
export class Group {
  private stateValue: GroupState = 'Empty';
  private generation = 0;
  private protocolTypeValue: string | null = null;
  private protocolName: string | null = null;
  private leaderId: string | null = null;
  /** Insertion order = join order: the first member leads when the leader is gone. */
  private readonly members = new Map<string, Member>();
  private rebalanceTimer: TimerHandle | null = null;
  /** Set while the initial delay of a rebalance out of Empty runs. */
  private initialDelay: { startedMs: number } | null = null;
  private readonly logger: Logger;

  constructor(
    readonly groupId: string,
    private readonly deps: GroupDeps,
  ) {
    this.logger = deps.logger.child({ groupId });
  }

  get state(): GroupState {
    return this.stateValue;
  }

  get generationId(): number {
    return this.generation;
  }

  get memberCount(): number {
    return this.members.size;
  }

  /** Ids of the members, in join order. */
  memberIds(): string[] {
    return [...this.members.keys()];
  }

  // -------------------------------------------------------------------------------------------
  // Requests

  /** Handles a JoinGroup; resolves when the member's join is answered. */
  join(p: JoinParams): Promise<JoinGroupResponse> {
    if (this.stateValue === 'Dead') return Promise.resolve(joinFailure(p.memberId, this.deadError()));
    if (this.members.size > 0 && p.protocolType !== this.protocolTypeValue) {
      return Promise.resolve(
        joinFailure(
          p.memberId,
          new EdgeqError('INVALID_GROUP', `protocol type "${p.protocolType}" does not match the group's "${this.protocolTypeValue}"`, {
            details: { groupId: this.groupId },
          }),
        ),
      );
    }
    const common = this.commonProtocols(p.memberId);
    if (common !== null && !p.protocols.some((x) => common.has(x.name))) {
      return Promise.resolve(
        joinFailure(
          p.memberId,
          new EdgeqError('INVALID_GROUP', `none of the protocols [${p.protocols.map((x) => x.name).join(', ')}] is supported by every member`, {
            details: { groupId: this.groupId, common: [...common] },
          }),
        ),
      );
    }
    if (p.memberId === '') return this.joinNew(p);

    const member = this.members.get(p.memberId);
    if (!member) return Promise.resolve(joinFailure(p.memberId, this.unknownMember(p.memberId)));
    const changed = !sameProtocols(member.protocols, p.protocols);
    this.update(member, p);
    this.touch(member);
    switch (this.stateValue) {
      case 'PreparingRebalance': {
        const answer = this.awaitJoin(member);
        this.maybeCompleteJoin();
        return answer;
      }
      case 'CompletingRebalance':
      case 'Stable': {
        // A follower re-sending the same join (a retry) learns the current generation; the
        // leader (it must recompute) or a member with a new subscription starts a rebalance.
        const rebalance = changed || (this.stateValue === 'Stable' && member.memberId === this.leaderId);
        if (!rebalance) return Promise.resolve(this.joinAnswer(member));
        const answer = this.awaitJoin(member);
        this.prepareRebalance(`member ${member.memberId} rejoined${changed ? ' with new metadata' : ''}`);
        return answer;
      }
      default:
        // Empty groups have no members; Dead was handled above.
        return Promise.resolve(joinFailure(p.memberId, this.unknownMember(p.memberId)));
    }
  }

  /** Handles a SyncGroup; resolves when the leader's assignment is known (or the sync fails). */
  sync(req: SyncGroupRequest): Promise<SyncGroupResponse> {
    const err = this.checkMember(req.memberId, req.generationId);
    if (err) return Promise.resolve(syncFailure(err));
    const member = this.members.get(req.memberId)!;
    if (this.stateValue === 'PreparingRebalance') return Promise.resolve(syncFailure(this.rebalancing()));
    this.touch(member);
    if (this.stateValue === 'Stable') return Promise.resolve({ error: null, assignment: member.assignment });
    assert(this.stateValue === 'CompletingRebalance', `sync in state ${this.stateValue}`);

    let assignments: Map<string, Buffer> | null = null;
    if (member.memberId === this.leaderId) {
      assignments = new Map();
      for (const a of req.assignments ?? []) {
        if (assignments.has(a.memberId)) {
          return Promise.resolve(syncFailure(new EdgeqError('INVALID_ARGUMENT', `member ${a.memberId} is assigned twice`)));
        }
        if (a.assignment.length > this.deps.config.assignmentBytesMax) {
          return Promise.resolve(
            syncFailure(
              new EdgeqError('INVALID_ARGUMENT', `assignment of ${a.memberId} is ${a.assignment.length} bytes, over ${this.deps.config.assignmentBytesMax}`, {
                details: { assignmentBytesMax: this.deps.config.assignmentBytesMax },
              }),
            ),
          );
        }
        if (this.members.has(a.memberId)) assignments.set(a.memberId, Buffer.from(a.assignment));
        else this.logger.debug({ memberId: a.memberId }, 'leader assigned to a member not in the group; ignored');
      }
    }
    const answer = new Promise<SyncGroupResponse>((resolve) => {
      member.awaitingSync?.(syncFailure(this.rebalancing('superseded by a newer SyncGroup')));
      member.awaitingSync = resolve;
    });
    if (assignments) {
      for (const m of this.members.values()) m.assignment = assignments.get(m.memberId) ?? EMPTY;
      this.stateValue = 'Stable';
      this.logger.info({ generationId: this.generation, members: this.members.size }, 'group stable');
      for (const m of this.members.values()) {
        const resolve = m.awaitingSync;
        m.awaitingSync = null;
        resolve?.({ error: null, assignment: m.assignment });
      }
    }
    return answer;
  }

  /** Handles a Heartbeat: null when all is well. REBALANCE_IN_PROGRESS tells the member to rejoin. */
  heartbeat(req: HeartbeatRequest): EdgeqError | null {
    const err = this.checkMember(req.memberId, req.generationId);
    if (err) return err;
    this.touch(this.members.get(req.memberId)!);
    return this.stateValue === 'PreparingRebalance' ? this.rebalancing() : null;
  }

  /** Handles a LeaveGroup: the member goes and the others rebalance. */
  leave(memberId: string): EdgeqError | null {
    if (this.stateValue === 'Dead') return this.deadError();
    const member = this.members.get(memberId);
    if (!member) return this.unknownMember(memberId);
    this.removeMember(member, 'left the group');
    this.afterMemberRemoved();
    return null;
  }

  /**
   * Fences an OffsetCommit: null when the committer may commit. Generation -1 with an empty
   * member id (a commit from outside the group) is accepted only while the group has no members.
   */
  validateCommit(generationId: number, memberId: string): EdgeqError | null {
    if (this.stateValue === 'Dead') return this.deadError();
    if (generationId < 0 && memberId === '') {
      if (this.members.size === 0) return null;
      return new EdgeqError('UNKNOWN_MEMBER_ID', `group ${this.groupId} has members: commits must come from its current generation`, {
        details: { groupId: this.groupId },
      });
    }
    const err = this.checkMember(memberId, generationId);
    if (err) return err;
    // While a rebalance is being prepared the generation has not changed yet, so its members may
    // still commit what they consumed before giving their partitions up (as Kafka allows); the
    // next owner then starts after it instead of re-reading it.
    this.touch(this.members.get(memberId)!);
    return null;
  }

  /** The group as DescribeGroups reports it. */
  describe(): GroupDescription {
    return {
      groupId: this.groupId,
      error: null,
      state: this.stateValue,
      protocolType: this.protocolTypeValue ?? '',
      protocolName: this.protocolName ?? '',
      generationId: this.generation,
      leaderId: this.leaderId ?? '',
      members: [...this.members.values()].map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        host: m.host,
        metadata: this.metadataFor(m),
        assignment: m.assignment,
      })),
    };
  }

  /** The group as ListGroups reports it. */
  listing(): GroupListing {
    return { groupId: this.groupId, state: this.stateValue, protocolType: this.protocolTypeValue ?? '' };
  }

  /** Stops the group for good: pending joins and syncs get COORDINATOR_NOT_AVAILABLE, timers stop. */
  shutdown(): void {
    if (this.stateValue === 'Dead') return;
    this.stateValue = 'Dead';
    this.cancelRebalanceTimer();
    const err = this.deadError();
    for (const m of this.members.values()) {
      m.sessionTimer?.cancel();
      m.sessionTimer = null;
      this.answerPending(m, err);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Joins and rebalances

  private joinNew(p: JoinParams): Promise<JoinGroupResponse> {
    const max = this.deps.config.membersPerGroupMax;
    if (this.members.size >= max) {
      return Promise.resolve(
        joinFailure('', new EdgeqError('QUEUE_FULL', `group ${this.groupId} already has ${max} members`, { details: { membersPerGroupMax: max } })),
      );
    }
    const memberId = this.deps.newMemberId(p.clientId);
    assert(!this.members.has(memberId), `generated member id ${memberId} is taken`);
    const member: Member = {
      memberId,
      clientId: p.clientId,
      host: p.host,
      sessionTimeoutMs: p.sessionTimeoutMs,
      rebalanceTimeoutMs: p.rebalanceTimeoutMs,
      protocols: p.protocols,
      assignment: EMPTY,
      awaitingJoin: null,
      awaitingSync: null,
      sessionDeadlineMs: 0,
      sessionTimer: null,
      sessionTimerAtMs: 0,
    };
    if (this.members.size === 0) this.protocolTypeValue = p.protocolType;
    this.members.set(memberId, member);
    this.touch(member);
    const answer = this.awaitJoin(member);
    this.logger.info({ memberId, clientId: p.clientId }, 'member joined');
    this.prepareRebalance(`member ${memberId} joined`);
    return answer;
  }

  private update(member: Member, p: JoinParams): void {
    member.clientId = p.clientId;
    member.host = p.host;
    member.sessionTimeoutMs = p.sessionTimeoutMs;
    member.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    member.protocols = p.protocols;
  }

  private awaitJoin(member: Member): Promise<JoinGroupResponse> {
    return new Promise<JoinGroupResponse>((resolve) => {
      member.awaitingJoin?.(joinFailure(member.memberId, this.rebalancing('superseded by a newer JoinGroup')));
      member.awaitingJoin = resolve;
    });
  }

  /** Starts a rebalance, or keeps the running one going. */
  private prepareRebalance(reason: string): void {
    if (this.stateValue === 'PreparingRebalance') {
      if (this.initialDelay) this.scheduleInitialDelay();
      else this.maybeCompleteJoin();
      return;
    }
    if (this.stateValue === 'CompletingRebalance') {
      // The assignment being computed is for members that are about to change: drop it.
      const err = this.rebalancing();
      for (const m of this.members.values()) {
        const resolve = m.awaitingSync;
        m.awaitingSync = null;
        resolve?.(syncFailure(err));
      }
    }
    const fromEmpty = this.stateValue === 'Empty';
    this.stateValue = 'PreparingRebalance';
    for (const m of this.members.values()) m.assignment = EMPTY;
    this.logger.info({ reason, generationId: this.generation }, 'rebalance started');
    if (fromEmpty && this.deps.config.initialRebalanceDelayMs > 0) {
      this.initialDelay = { startedMs: this.deps.clock.monotonicMs() };
      this.scheduleInitialDelay();
      return;
    }
    this.cancelRebalanceTimer();
    this.rebalanceTimer = this.deps.clock.setTimeout(() => {
      this.rebalanceTimer = null;
      this.logger.info('rebalance timeout passed; members that did not rejoin are removed');
      this.completeJoin();
    }, this.rebalanceTimeoutMs());
    this.maybeCompleteJoin();
  }

  /** (Re)arms the initial delay: another `initialRebalanceDelayMs`, never past the rebalance timeout. */
  private scheduleInitialDelay(): void {
    assert(this.initialDelay !== null, 'no initial delay running');
    this.cancelRebalanceTimer();
    const now = this.deps.clock.monotonicMs();
    const deadline = this.initialDelay.startedMs + this.rebalanceTimeoutMs();
    const delay = Math.max(0, Math.min(this.deps.config.initialRebalanceDelayMs, deadline - now));
    this.rebalanceTimer = this.deps.clock.setTimeout(() => {
      this.rebalanceTimer = null;
      this.initialDelay = null;
      this.completeJoin();
    }, delay);
  }

  private maybeCompleteJoin(): void {
    if (this.stateValue !== 'PreparingRebalance' || this.initialDelay) return;
    for (const m of this.members.values()) if (!m.awaitingJoin) return;
    this.completeJoin();
  }

  /** Ends PreparingRebalance: drops members that did not rejoin, starts the next generation. */
  private completeJoin(): void {
    assert(this.stateValue === 'PreparingRebalance', `completeJoin in state ${this.stateValue}`);
    this.cancelRebalanceTimer();
    this.initialDelay = null;
    for (const m of [...this.members.values()]) if (!m.awaitingJoin) this.removeMember(m, 'did not rejoin in time');
    this.generation++;
    if (this.members.size === 0) {
      this.stateValue = 'Empty';
      this.protocolName = null;
      this.leaderId = null;
      this.logger.info({ generationId: this.generation }, 'group empty');
      return;
    }
    if (this.leaderId === null || !this.members.has(this.leaderId)) this.leaderId = this.members.keys().next().value!;
    this.protocolName = this.selectProtocol();
    this.stateValue = 'CompletingRebalance';
    this.logger.info(
      { generationId: this.generation, protocol: this.protocolName, leaderId: this.leaderId, members: this.members.size },
      'join complete',
    );
    for (const m of this.members.values()) {
      const resolve = m.awaitingJoin!;
      m.awaitingJoin = null;
      this.touch(m);
      resolve(this.joinAnswer(m));
    }
  }

  /**
   * The protocol every member supports that most members prefer: each member votes for the first
   * protocol in its own list that all support; ties go to the one the leader lists first.
   */
  private selectProtocol(): string {
    const common = this.commonProtocols('')!;
    const leader = this.members.get(this.leaderId!)!;
    const votes = new Map<string, number>();
    for (const m of this.members.values()) {
      const choice = m.protocols.find((p) => common.has(p.name))!;
      votes.set(choice.name, (votes.get(choice.name) ?? 0) + 1);
    }
    let best: string | null = null;
    for (const p of leader.protocols) {
      if (!common.has(p.name)) continue;
      if (best === null || (votes.get(p.name) ?? 0) > (votes.get(best) ?? 0)) best = p.name;
    }
    assert(best !== null, 'members share no protocol');
    return best;
  }

  /** Protocol names every member except `exceptId` supports; null when there is no such member. */
  private commonProtocols(exceptId: string): Set<string> | null {
    let common: Set<string> | null = null;
    for (const m of this.members.values()) {
      if (m.memberId === exceptId) continue;
      const names = new Set(m.protocols.map((p) => p.name));
      common = common === null ? names : new Set([...common].filter((n: string) => names.has(n)));
    }
    return common;
  }

  private joinAnswer(member: Member): JoinGroupResponse {
    const isLeader = member.memberId === this.leaderId;
    return {
      error: null,
      generationId: this.generation,
      protocolName: this.protocolName ?? '',
      leaderId: this.leaderId ?? '',
      memberId: member.memberId,
      members: isLeader ? [...this.members.values()].map((m) => ({ memberId: m.memberId, metadata: this.metadataFor(m) })) : [],
    };
  }

  private metadataFor(member: Member): Buffer {
    return member.protocols.find((p) => p.name === this.protocolName)?.metadata ?? EMPTY;
  }

  private rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  private cancelRebalanceTimer(): void {
    this.rebalanceTimer?.cancel();
    this.rebalanceTimer = null;
  }

  // -------------------------------------------------------------------------------------------
  // Members and sessions

  /** Marks the member as heard from now. */
  private touch(member: Member): void {
    const now = this.deps.clock.monotonicMs();
    member.sessionDeadlineMs = now + member.sessionTimeoutMs;
    // One timer per member, re-armed lazily when it fires early, instead of one per heartbeat.
    if (member.sessionTimer && member.sessionTimerAtMs <= member.sessionDeadlineMs) return;
    member.sessionTimer?.cancel();
    this.armSession(member, member.sessionTimeoutMs);
  }

  private armSession(member: Member, delayMs: number): void {
    member.sessionTimerAtMs = this.deps.clock.monotonicMs() + delayMs;
    member.sessionTimer = this.deps.clock.setTimeout(() => this.onSessionTimer(member), delayMs);
  }

  private onSessionTimer(member: Member): void {
    member.sessionTimer = null;
    if (this.members.get(member.memberId) !== member || this.stateValue === 'Dead') return;
    const now = this.deps.clock.monotonicMs();
    // A member whose join or sync is parked here cannot heartbeat: its request keeps it alive
    // (the rebalance timeout, not the session, bounds a join).
    if (member.awaitingJoin || member.awaitingSync) member.sessionDeadlineMs = now + member.sessionTimeoutMs;
    if (now < member.sessionDeadlineMs) {
      this.armSession(member, member.sessionDeadlineMs - now);
      return;
    }
    this.removeMember(member, 'session timed out');
    this.afterMemberRemoved();
  }

  private removeMember(member: Member, reason: string): void {
    member.sessionTimer?.cancel();
    member.sessionTimer = null;
    this.members.delete(member.memberId);
    this.answerPending(member, this.unknownMember(member.memberId));
    this.logger.info({ memberId: member.memberId, reason }, 'member removed');
  }

  private afterMemberRemoved(): void {
    switch (this.stateValue) {
      case 'Stable':
      case 'CompletingRebalance':
        this.prepareRebalance('a member left');
        return;
      case 'PreparingRebalance':
        if (this.members.size === 0) this.completeJoin();
        else this.maybeCompleteJoin();
        return;
      case 'Empty':
      case 'Dead':
        return;
    }
  }

  private answerPending(member: Member, err: EdgeqError): void {
    const join = member.awaitingJoin;
    const sync = member.awaitingSync;
    member.awaitingJoin = null;
    member.awaitingSync = null;
    join?.(joinFailure(member.memberId, err));
    sync?.(syncFailure(err));
  }

  // -------------------------------------------------------------------------------------------
  // Errors

  /** Checks membership then generation, in Kafka's order. */
  private checkMember(memberId: string, generationId: number): EdgeqError | null {
    if (this.stateValue === 'Dead') return this.deadError();
    if (!this.members.has(memberId)) return this.unknownMember(memberId);
    if (generationId !== this.generation) {
      return new EdgeqError('ILLEGAL_GENERATION', `generation ${generationId} is not the group's current ${this.generation}`, {
        details: { groupId: this.groupId, generationId, currentGenerationId: this.generation },
      });
    }
    return null;
  }

  private unknownMember(memberId: string): EdgeqError {
    return new EdgeqError('UNKNOWN_MEMBER_ID', `member "${memberId}" is not in group ${this.groupId}`, {
      details: { groupId: this.groupId, memberId },
    });
  }

  private rebalancing(why = 'the group is rebalancing: rejoin'): EdgeqError {
    return new EdgeqError('REBALANCE_IN_PROGRESS', why, { details: { groupId: this.groupId } });
  }

  private deadError(): EdgeqError {
    return new EdgeqError('COORDINATOR_NOT_AVAILABLE', `the coordinator of group ${this.groupId} is shutting down`, {
      details: { groupId: this.groupId },
    });
  }
}
