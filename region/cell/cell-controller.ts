/**
 * A broker's membership in its regional cell, through the arbiter.
 *
 * - **Membership and fencing.** The broker holds a lease (TTL `leaseTtlMs`) and keeps its key
 *   `brokers/<id>` bound to it. It renews every `keepAliveIntervalMs`; it may take writes only
 *   until `leaseSafetyMarginMs` before the lease would run out without a renewal (Patroni's rule),
 *   so a leader elected after the expiry never overlaps with the old one.
 * - **Elections.** When a partition's leader is gone (its broker key vanished with its lease) the
 *   live members of the ISR race to take over with a compare-and-set on the partition's state:
 *   new leader, epoch + 1. The preferred candidate (first in the ISR) goes at once, the others
 *   after a delay; the revision check makes sure one wins. Outside the ISR only with
 *   `unclean.leader.election.enable`.
 * - **ISR changes** are compare-and-sets by the leader, effective once written.
 * - **Topics** are records in the arbiter; every broker applies them to its local replicas.
 * - **Producer ids** come in blocks taken by compare-and-set, so they are unique in the cell.
 */
import { EdgeqError, isEdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../../src/core/index.ts';
import {
  CONSUMER_OFFSETS_TOPIC,
  parseTopicConfig,
  validateUserTopicName,
  isInternalTopic,
  type CellController,
  type CellHost,
  type CreateTopicInput,
  type Partition,
  type PartitionState,
  type TopicRecord,
} from '../../src/broker/index.ts';
import type { BrokerInfo, BrokerStatus } from '../../src/protocol/index.ts';
import type { Arbiter, KeyValue, Lease, Watch, WatchEvent } from '../arbiter/index.ts';
import { CellKeys } from './cell-keys.ts';
import { randomUUID } from 'node:crypto';

/** Settings of a broker's cell membership. */
export interface CellControllerOptions {
  arbiter: Arbiter;
  cellId: string;
  /** Lease TTL: how long a dead broker keeps its partitions before others take over. */
  leaseTtlMs?: number;
  /** Renew this often (a few renewals per TTL survive a slow one). */
  keepAliveIntervalMs?: number;
  /** Stop taking writes this long before the lease could expire. */
  leaseSafetyMarginMs?: number;
  /** Extra wait per rank for candidates after the preferred one. */
  electionDelayMs?: number;
  /** Brokers the cell is meant to have; the offsets topic is created once this many are up. */
  cellSize?: number;
  /** Replication factor of the internal offsets topic (capped by the cell size). */
  offsetsReplicationFactor?: number;
  /** How long topic creation waits to see the topic applied locally. */
  topicApplyWaitMs?: number;
  clock?: Clock;
  logger?: Logger;
}

const ID_BLOCK = 1000;
const EPOCH_MAX = 32767;

interface BrokerEntry extends BrokerInfo {
  pid: number;
}

/** The cell controller of one broker. */
export class ArbiterCellController implements CellController {
  readonly cellId: string;
  private readonly arbiter: Arbiter;
  private readonly keys: CellKeys;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly leaseTtlMs: number;
  private readonly keepAliveIntervalMs: number;
  private readonly marginMs: number;
  private readonly electionDelayMs: number;
  private readonly cellSize: number;
  private readonly offsetsRf: number;
  private readonly topicApplyWaitMs: number;
  private host: CellHost | null = null;
  private lease: Lease | null = null;
  private leaseValidUntil = -Infinity;
  private keepAliveTimer: TimerHandle | null = null;
  private watch: Watch | null = null;
  private closed = false;
  private readonly brokersById = new Map<number, BrokerEntry>();
  /** Every broker id ever seen in assignments or membership (for status: alive or not). */
  private readonly knownBrokers = new Set<number>();
  private readonly topicsByName = new Map<string, { rec: TopicRecord; modRevision: number }>();
  private readonly states = new Map<string, { state: PartitionState; modRevision: number }>();
  private readonly producerEpochs = new Map<number, number>();
  private readonly electionTimers = new Map<string, TimerHandle>();
  private readonly partitionHooks = { canLead: () => this.canLead(), changeIsr: (p: Partition, isr: number[]) => this.changeIsr(p, isr) };
  private idNext = 0;
  private idEnd = 0;
  private idChain: Promise<unknown> = Promise.resolve();
  private applyChain: Promise<unknown> = Promise.resolve();
  private readonly applyWaiters: (() => void)[] = [];

  constructor(options: CellControllerOptions) {
    this.arbiter = options.arbiter;
    this.cellId = options.cellId;
    this.keys = new CellKeys(options.cellId);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'cell' });
    this.leaseTtlMs = options.leaseTtlMs ?? 2000;
    this.keepAliveIntervalMs = options.keepAliveIntervalMs ?? Math.max(100, Math.floor(this.leaseTtlMs / 4));
    this.marginMs = options.leaseSafetyMarginMs ?? Math.max(100, Math.floor(this.leaseTtlMs / 4));
    this.electionDelayMs = options.electionDelayMs ?? 200;
    this.cellSize = options.cellSize ?? 3;
    this.offsetsRf = options.offsetsReplicationFactor ?? 3;
    this.topicApplyWaitMs = options.topicApplyWaitMs ?? 5000;
    if (this.marginMs + this.keepAliveIntervalMs >= this.leaseTtlMs) {
      throw new EdgeqError('INVALID_CONFIG', `leaseSafetyMarginMs (${this.marginMs}) + keepAliveIntervalMs (${this.keepAliveIntervalMs}) must be below leaseTtlMs (${this.leaseTtlMs})`, {
        details: { key: 'cell.leaseTtlMs' },
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle

  async start(host: CellHost): Promise<void> {
    this.host = host;
    host.topics.knownElsewhere = (topic) => this.topicsByName.has(topic);
    await this.register();
    const items = await this.arbiter.getPrefix(this.keys.root);
    const fromRevision = items.reduce((m, kv) => Math.max(m, kv.modRevision), this.registeredRevision);
    for (const kv of items) this.ingest(kv.key, kv.value, kv.modRevision, false);
    // Local topics the cell no longer has (deleted while this broker was away) go.
    for (const view of host.topics.list({ includeInternal: true })) {
      if (!this.topicsByName.has(view.record.name)) await host.topics.removeTopic(view.record.name);
    }
    for (const { rec } of this.topicsByName.values()) await host.topics.applyTopic(rec);
    for (const [k, { state }] of this.states) {
      const [topic, p] = splitKey(k);
      this.applyState(topic, p, state);
    }
    this.watch = await this.arbiter.watchPrefix(this.keys.root, (e) => this.onEvent(e), {
      fromRevision,
      onError: (err) => this.logger.error({ err }, 'arbiter watch broke'),
    });
    this.scheduleKeepAlive();
    this.sweep();
    void this.maybeCreateOffsetsTopic();
  }

  private registeredRevision = 0;

  private async register(): Promise<void> {
    const host = this.host!;
    const t0 = this.clock.monotonicMs();
    const lease = await this.arbiter.grantLease(this.leaseTtlMs);
    this.lease = lease;
    this.leaseValidUntil = t0 + lease.ttlMs;
    const entry: BrokerEntry = { id: host.brokerId, host: host.host, port: host.port, region: host.region, pid: process.pid };
    this.registeredRevision = await this.arbiter.put(this.keys.broker(host.brokerId), Buffer.from(JSON.stringify(entry)), { leaseId: lease.id });
    this.brokersById.set(host.brokerId, entry);
    this.knownBrokers.add(host.brokerId);
    this.logger.info({ leaseTtlMs: lease.ttlMs, cell: this.cellId }, 'registered in the cell');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.keepAliveTimer?.cancel();
    for (const t of this.electionTimers.values()) t.cancel();
    await this.watch?.close().catch(() => undefined);
    // Revoking hands our partitions over at once instead of after the TTL.
    await this.lease?.revoke().catch(() => undefined);
    await this.arbiter.close().catch(() => undefined);
  }

  canLead(): boolean {
    return !this.closed && this.clock.monotonicMs() < this.leaseValidUntil - this.marginMs;
  }

  private scheduleKeepAlive(): void {
    if (this.closed) return;
    this.keepAliveTimer = this.clock.setTimeout(() => void this.keepAlive(), this.keepAliveIntervalMs);
  }

  private async keepAlive(): Promise<void> {
    const t0 = this.clock.monotonicMs();
    try {
      const ttl = await this.lease!.keepAliveOnce();
      // Counted from when the renewal was sent: the arbiter's clock started no earlier.
      this.leaseValidUntil = t0 + ttl;
    } catch (err) {
      const e = toEdgeqError(err);
      if (e.code === 'LEASE_EXPIRED' && !this.closed) {
        this.logger.warn('lease expired: registering again (partitions led before are someone else\'s now)');
        this.demoteAll();
        try {
          await this.register();
        } catch (err2) {
          this.logger.warn({ code: toEdgeqError(err2).code }, 'could not register again; retrying');
        }
      } else {
        this.logger.warn({ code: e.code, validForMs: Math.round(this.leaseValidUntil - this.clock.monotonicMs()) }, 'lease renewal failed');
      }
    }
    this.sweep();
    this.scheduleKeepAlive();
  }

  /** After losing the lease: every replica led here becomes a follower until the arbiter says more. */
  private demoteAll(): void {
    for (const p of this.host?.topics.localPartitions() ?? []) {
      if (p.role === 'leader') {
        p.becomeFollower(-1, p.leaderEpoch, p.isr, p.replicas);
        this.host!.onRoleChange(p);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // State from the arbiter

  private onEvent(e: WatchEvent): void {
    this.ingest(e.key, e.type === 'put' ? e.value : null, e.modRevision, true);
  }

  private ingest(key: string, value: Buffer | null, modRevision: number, live: boolean): void {
    const k = this.keys.parse(key);
    try {
      if (k.kind === 'broker') {
        if (value) {
          const b = JSON.parse(value.toString('utf8')) as BrokerEntry;
          this.brokersById.set(k.id, b);
          this.knownBrokers.add(k.id);
        } else {
          this.brokersById.delete(k.id);
          if (k.id === this.host?.brokerId && !this.closed) this.logger.warn('our broker key vanished (lease gone)');
        }
        if (live) {
          this.sweep();
          void this.maybeCreateOffsetsTopic();
        }
      } else if (k.kind === 'topic') {
        const known = this.topicsByName.get(k.name);
        if (known && known.modRevision >= modRevision) return;
        if (value) {
          const rec = JSON.parse(value.toString('utf8')) as TopicRecord;
          this.topicsByName.set(k.name, { rec, modRevision });
          for (const a of rec.assignments ?? []) for (const id of a) this.knownBrokers.add(id);
          if (live) this.enqueueApply(async () => {
            await this.host!.topics.applyTopic(rec);
            for (let p = 0; p < rec.partitions; p++) {
              const st = this.states.get(stateKey(rec.name, p));
              if (st) this.applyState(rec.name, p, st.state);
            }
          });
        } else {
          this.topicsByName.delete(k.name);
          if (live) this.enqueueApply(() => this.host!.topics.removeTopic(k.name));
        }
      } else if (k.kind === 'partition') {
        const sk = stateKey(k.topic, k.partition);
        const known = this.states.get(sk);
        if (known && known.modRevision >= modRevision) return;
        if (value) {
          const state = JSON.parse(value.toString('utf8')) as PartitionState;
          this.states.set(sk, { state, modRevision });
          if (live) this.enqueueApply(async () => this.applyState(k.topic, k.partition, state));
        } else {
          this.states.delete(sk);
        }
        if (live) this.sweep();
      } else if (k.kind === 'producer-epoch') {
        if (value) this.producerEpochs.set(k.id, (JSON.parse(value.toString('utf8')) as { epoch: number }).epoch);
      }
    } catch (err) {
      this.logger.error({ err, key }, 'could not read a cell record');
    }
  }

  /** Applies in arrival order (topic before its partitions' roles), one at a time. */
  private enqueueApply(fn: () => Promise<void>): void {
    this.applyChain = this.applyChain
      .then(fn)
      .catch((err: unknown) => this.logger.error({ err }, 'applying a cell change failed'))
      .finally(() => {
        for (const w of this.applyWaiters.splice(0)) w();
      });
  }

  /** Brings the local replica's role in line with the partition's state. */
  private applyState(topic: string, index: number, state: PartitionState): void {
    const host = this.host;
    if (!host) return;
    const p = host.topics.get(topic)?.partitions[index];
    if (!p) return;
    p.setHooks(this.partitionHooks);
    const me = host.brokerId;
    if (state.leader === me) {
      if (p.role !== 'leader' || p.leaderEpoch !== state.leaderEpoch) {
        p.becomeLeader(state.leaderEpoch, state.isr, state.replicas);
        this.logger.info({ topic, partition: index, epoch: state.leaderEpoch, isr: state.isr }, 'leading');
        host.onRoleChange(p);
      } else {
        p.setIsr(state.isr);
      }
      return;
    }
    if (p.role !== 'follower' || p.leaderId !== state.leader || p.leaderEpoch !== state.leaderEpoch) {
      p.becomeFollower(state.leader, state.leaderEpoch, state.isr, state.replicas);
      if (state.leader >= 0) this.logger.info({ topic, partition: index, leader: state.leader, epoch: state.leaderEpoch }, 'following');
      host.onRoleChange(p);
    } else {
      p.isr = [...state.isr];
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Elections

  /** Looks for partitions without a live leader where this broker may take over. */
  private sweep(): void {
    if (!this.host || this.closed) return;
    const me = this.host.brokerId;
    for (const [sk, { state }] of this.states) {
      if (state.leader >= 0 && this.brokersById.has(state.leader)) {
        this.electionTimers.get(sk)?.cancel();
        this.electionTimers.delete(sk);
        continue;
      }
      if (!state.replicas.includes(me) || this.electionTimers.has(sk)) continue;
      const candidates = this.candidates(sk, state);
      const rank = candidates.indexOf(me);
      if (rank < 0) continue;
      const delay = rank * this.electionDelayMs;
      this.electionTimers.set(
        sk,
        this.clock.setTimeout(() => {
          this.electionTimers.delete(sk);
          void this.elect(sk);
        }, delay),
      );
    }
  }

  private candidates(sk: string, state: PartitionState): number[] {
    const alive = (id: number) => this.brokersById.has(id);
    const inIsr = state.isr.filter(alive);
    if (inIsr.length > 0) return inIsr;
    const [topic] = splitKey(sk);
    const rec = this.topicsByName.get(topic)?.rec;
    const unclean = rec ? parseTopicConfig(rec.config, {}).uncleanLeaderElection : false;
    return unclean ? state.replicas.filter(alive) : [];
  }

  private async elect(sk: string): Promise<void> {
    const me = this.host!.brokerId;
    const cur = this.states.get(sk);
    if (!cur || this.closed) return;
    const { state, modRevision } = cur;
    if (state.leader >= 0 && this.brokersById.has(state.leader)) return;
    if (!this.candidates(sk, state).includes(me)) return;
    if (!this.canLead()) return; // without a valid lease we could not serve anyway
    const [topic, p] = splitKey(sk);
    const local = this.host!.topics.get(topic)?.partitions[p];
    if (!local) return;
    const alive = state.isr.filter((id) => this.brokersById.has(id));
    const isr = alive.includes(me) ? alive : [me, ...alive];
    const next: PartitionState = { leader: me, leaderEpoch: state.leaderEpoch + 1, isr, replicas: state.replicas };
    try {
      const r = await this.arbiter.compareAndSet(this.keys.partition(topic, p), Buffer.from(JSON.stringify(next)), { expectedModRevision: modRevision });
      if (r.ok) {
        this.logger.info({ topic, partition: p, epoch: next.leaderEpoch, previous: state.leader, isr }, 'won the leader election');
        this.ingest(this.keys.partition(topic, p), Buffer.from(JSON.stringify(next)), r.revision, false);
        this.enqueueApply(async () => this.applyState(topic, p, next));
      }
    } catch (err) {
      this.logger.warn({ code: toEdgeqError(err).code, topic, partition: p }, 'election attempt failed');
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reads for the broker

  brokers(): BrokerInfo[] {
    return [...this.brokersById.values()].map((b) => ({ id: b.id, host: b.host, port: b.port, region: b.region })).sort((a, b) => a.id - b.id);
  }

  brokerStatus(): BrokerStatus[] {
    return [...this.knownBrokers]
      .sort((a, b) => a - b)
      .map((id) => {
        const b = this.brokersById.get(id);
        return b
          ? { id, pid: b.pid, host: b.host, port: b.port, region: b.region, alive: true }
          : { id, pid: 0, host: '', port: 0, region: '', alive: false };
      });
  }

  topicRecords(): TopicRecord[] {
    return [...this.topicsByName.values()].map((t) => t.rec);
  }

  partitionState(topic: string, partition: number): PartitionState | undefined {
    return this.states.get(stateKey(topic, partition))?.state;
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  async createTopic(input: CreateTopicInput, options: { validateOnly?: boolean; internal?: boolean } = {}): Promise<void> {
    const name = input.name;
    if (this.topicsByName.has(name)) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${name} already exists`, { details: { topic: name } });
    const alive = [...this.brokersById.keys()].sort((a, b) => a - b);
    // The broker's own checks (name, partitions, replication factor, config, limits), against the
    // cell's live brokers instead of the one broker.
    const { replicationFactor: rf } = this.host!.topics.validateCreate(input, {
      ...(options.internal ? { internal: true } : {}),
      brokerCount: alive.length,
      defaultReplicationFactor: Math.min(3, alive.length),
    });
    const n = input.partitions;
    if (options.validateOnly) return;
    // Spread leaders: partition p starts at broker (start + p) and takes the next rf brokers.
    const start = Math.floor(Math.random() * alive.length);
    const assignments = Array.from({ length: n }, (_, p) => Array.from({ length: rf }, (_, r) => alive[(start + p + r) % alive.length]!));
    const rec: TopicRecord = {
      name,
      id: randomUUID().slice(0, 8),
      partitions: n,
      replicationFactor: rf,
      config: { ...(input.config ?? {}) },
      leaderEpoch: 1,
      createdAtMs: this.clock.nowMs(),
      internal: options.internal === true || isInternalTopic(name),
      assignments,
    };
    // Partition states first, so a broker applying the topic finds its roles.
    for (let p = 0; p < n; p++) {
      const replicas = assignments[p]!;
      const st: PartitionState = { leader: replicas[0]!, leaderEpoch: 1, isr: [...replicas], replicas };
      await this.arbiter.put(this.keys.partition(name, p), Buffer.from(JSON.stringify(st)));
    }
    const r = await this.arbiter.compareAndSet(this.keys.topic(name), Buffer.from(JSON.stringify(rec)), { expectedModRevision: 0 });
    if (!r.ok) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${name} already exists`, { details: { topic: name } });
    await this.waitUntil(() => this.host?.topics.get(name)?.record.id === rec.id, this.topicApplyWaitMs);
  }

  async deleteTopic(name: string): Promise<void> {
    validateUserTopicName(name);
    const known = this.topicsByName.get(name);
    if (!known) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } });
    const r = await this.arbiter.delete(this.keys.topic(name), { expectedModRevision: known.modRevision });
    if (!r.ok) throw new EdgeqError('CAS_FAILED', `topic ${name} changed while being deleted; try again`, { details: { topic: name } });
    for (const kv of await this.arbiter.getPrefix(this.keys.partitionsOf(name))) await this.arbiter.delete(kv.key);
    await this.waitUntil(() => this.host?.topics.get(name) === undefined, this.topicApplyWaitMs);
  }

  async changeIsr(p: Partition, isr: number[]): Promise<boolean> {
    const key = this.keys.partition(p.topic, p.index);
    const cur = this.states.get(stateKey(p.topic, p.index));
    if (!cur || cur.state.leader !== this.host?.brokerId || cur.state.leaderEpoch !== p.leaderEpoch || !this.canLead()) return false;
    if (!isr.includes(cur.state.leader)) return false;
    const next: PartitionState = { ...cur.state, isr };
    const r = await this.arbiter.compareAndSet(key, Buffer.from(JSON.stringify(next)), { expectedModRevision: cur.modRevision });
    if (!r.ok) return false;
    this.ingest(key, Buffer.from(JSON.stringify(next)), r.revision, false);
    this.logger.info({ topic: p.topic, partition: p.index, from: cur.state.isr, to: isr }, 'ISR changed');
    return true;
  }

  /** Creates the internal offsets topic once the cell has its brokers (any broker may; one wins). */
  private async maybeCreateOffsetsTopic(): Promise<void> {
    if (this.closed || this.topicsByName.has(CONSUMER_OFFSETS_TOPIC) || this.brokersById.size < this.cellSize) return;
    try {
      await this.createTopic(
        { name: CONSUMER_OFFSETS_TOPIC, partitions: 1, replicationFactor: Math.min(this.offsetsRf, this.brokersById.size), config: { 'flush.policy': 'interval', 'retention.ms': '-1' } },
        { internal: true },
      );
    } catch (err) {
      if (!isEdgeqError(err, 'TOPIC_ALREADY_EXISTS')) this.logger.warn({ code: toEdgeqError(err).code }, 'could not create the offsets topic yet');
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Producer ids

  currentEpoch(producerId: number): number | undefined {
    return this.producerEpochs.get(producerId);
  }

  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    const run = this.idChain.then(() => (producerId < 0 ? this.allocate() : this.bump(producerId, producerEpoch)));
    this.idChain = run.catch(() => undefined);
    return run;
  }

  private async allocate(): Promise<{ producerId: number; producerEpoch: number }> {
    if (this.idNext >= this.idEnd) {
      for (let attempt = 0; attempt < 20; attempt++) {
        const cur = await this.arbiter.get(this.keys.producerIds);
        const next = cur ? (JSON.parse(cur.value.toString('utf8')) as { next: number }).next : 0;
        const r = await this.arbiter.compareAndSet(this.keys.producerIds, Buffer.from(JSON.stringify({ next: next + ID_BLOCK })), {
          expectedModRevision: cur?.modRevision ?? 0,
        });
        if (r.ok) {
          this.idNext = next;
          this.idEnd = next + ID_BLOCK;
          break;
        }
      }
      if (this.idNext >= this.idEnd) throw new EdgeqError('CAS_FAILED', 'could not reserve producer ids: too much contention');
    }
    return { producerId: this.idNext++, producerEpoch: 0 };
  }

  private async bump(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    const key = this.keys.producerEpoch(producerId);
    const cur: KeyValue | null = await this.arbiter.get(key);
    const current = cur ? (JSON.parse(cur.value.toString('utf8')) as { epoch: number }).epoch : 0;
    if (producerEpoch !== current) {
      throw new EdgeqError('INVALID_PRODUCER_EPOCH', `producer ${producerId} epoch ${producerEpoch} is not the current epoch ${current}`, {
        details: { producerId, producerEpoch, currentEpoch: current },
      });
    }
    if (current >= EPOCH_MAX) return this.allocate();
    const r = await this.arbiter.compareAndSet(key, Buffer.from(JSON.stringify({ epoch: current + 1 })), { expectedModRevision: cur?.modRevision ?? 0 });
    if (!r.ok) throw new EdgeqError('INVALID_PRODUCER_EPOCH', `producer ${producerId} was bumped concurrently`, { details: { producerId } });
    this.producerEpochs.set(producerId, current + 1);
    return { producerId, producerEpoch: current + 1 };
  }

  private async waitUntil(cond: () => boolean, ms: number): Promise<void> {
    const deadline = this.clock.monotonicMs() + ms;
    while (!cond()) {
      if (this.clock.monotonicMs() >= deadline) return;
      await new Promise<void>((resolve) => {
        this.applyWaiters.push(resolve);
        this.clock.setTimeout(resolve, 50);
      });
    }
  }
}

function stateKey(topic: string, p: number): string {
  return `${topic}\u0000${p}`;
}

function splitKey(k: string): [string, number] {
  const i = k.lastIndexOf('\u0000');
  return [k.slice(0, i), Number(k.slice(i + 1))];
}
