/**
 * A broker's membership in its regional cell, through the arbiter: the composition of one concept
 * per file.
 *
 * - **Lease** (lease-keeper.ts): the broker key bound to a renewed lease; writes only while it is
 *   valid with a safety margin.
 * - **State ingest and apply** (cell-view.ts, cell-watch.ts, state-applier.ts): the cell's keys
 *   copied into a local view by a watch that is re-established when it breaks (the broker is
 *   fenced until it is back and caught up), and applied to the local replicas.
 * - **Elections** (elections.ts, candidates.ts): leaderless partitions, epochs of earlier
 *   incarnations (bumped or resigned), ISR changes by the leader.
 * - **Topic admin** (topic-admin.ts): atomic create and delete, the offsets topic.
 * - **Producer ids** (producer-id-blocks.ts behind the broker's one allocator).
 * - **Quotas** (quota-writes.ts): AlterQuotas in one transaction; the watch hands every change
 *   to the broker's quota book.
 *
 * The broker may take writes (`canLead`) while the lease is valid and the watch is current.
 */
import { silentLogger, systemClock, type Clock, type Logger } from '../../src/core/index.ts';
import {
  ProducerIds,
  type CellController,
  type CellHost,
  type CreateTopicInput,
  type Partition,
  type PartitionState,
  type QuotaChange,
  type TopicRecord,
} from '../../src/broker/index.ts';
import type { BrokerInfo, BrokerStatus } from '../../src/protocol/index.ts';
import type { Arbiter } from '../arbiter/index.ts';
import { CellKeys } from './cell-keys.ts';
import { CellView, type BrokerEntry, type CellChange } from './cell-view.ts';
import { CellWatch } from './cell-watch.ts';
import { Elections } from './elections.ts';
import { LeaseKeeper } from './lease-keeper.ts';
import { ArbiterProducerIdStore } from './producer-id-blocks.ts';
import { writeQuotas } from './quota-writes.ts';
import { StateApplier } from './state-applier.ts';
import { TopicAdmin } from './topic-admin.ts';

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
  /** First and longest wait between attempts to re-establish a broken watch. */
  watchRetryMsMin?: number;
  watchRetryMsMax?: number;
  /** How long a re-established watch may take to deliver its barrier write. */
  watchCatchUpMsMax?: number;
  clock?: Clock;
  logger?: Logger;
}

/** The cell controller of one broker. */
export class ArbiterCellController implements CellController {
  readonly cellId: string;
  private readonly arbiter: Arbiter;
  private readonly keys: CellKeys;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly view: CellView;
  private readonly lease: LeaseKeeper;
  private readonly watch: CellWatch;
  private readonly applier: StateApplier;
  private readonly elections: Elections;
  private readonly topicAdmin: TopicAdmin;
  private readonly producerIdStore: ArbiterProducerIdStore;
  private readonly producerIds: ProducerIds;
  private host: CellHost | null = null;
  private closed = false;
  private sweepQueued = false;

  constructor(options: CellControllerOptions) {
    this.arbiter = options.arbiter;
    this.cellId = options.cellId;
    this.keys = new CellKeys(options.cellId);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'cell' });
    const leaseTtlMs = options.leaseTtlMs ?? 2000;
    this.view = new CellView(this.keys, this.logger);
    this.lease = new LeaseKeeper({
      arbiter: this.arbiter,
      clock: this.clock,
      logger: this.logger,
      key: () => this.keys.broker(this.host!.brokerId),
      value: () => Buffer.from(JSON.stringify(this.entry())),
      ttlMs: leaseTtlMs,
      keepAliveIntervalMs: options.keepAliveIntervalMs ?? Math.max(100, Math.floor(leaseTtlMs / 4)),
      marginMs: options.leaseSafetyMarginMs ?? Math.max(100, Math.floor(leaseTtlMs / 4)),
      onLost: () => this.onLeaseLost(),
      onRegistered: (revision) => this.onRegistered(revision),
      onTick: () => this.tick(),
    });
    this.watch = new CellWatch({
      arbiter: this.arbiter,
      prefix: this.keys.root,
      clock: this.clock,
      logger: this.logger,
      ...(options.watchRetryMsMin !== undefined ? { retryMsMin: options.watchRetryMsMin } : {}),
      ...(options.watchRetryMsMax !== undefined ? { retryMsMax: options.watchRetryMsMax } : {}),
      catchUpMsMax: options.watchCatchUpMsMax ?? leaseTtlMs,
      onEvent: (key, value, revision) => this.changed(this.view.ingest(key, value, revision)),
      onSnapshot: (kvs) => {
        for (const c of this.view.reconcile(kvs)) this.changed(c);
      },
      barrier: () => this.lease.refreshKey(),
      onCurrentChange: (current) => {
        if (current) this.tick();
      },
    });
    this.elections = new Elections({
      arbiter: this.arbiter,
      keys: this.keys,
      view: this.view,
      clock: this.clock,
      logger: this.logger,
      electionDelayMs: options.electionDelayMs ?? 200,
      brokerId: () => this.host?.brokerId ?? -1,
      canLead: () => this.canLead(),
      hostsReplica: (topic, p) => this.host?.topics.get(topic)?.partitions[p] !== undefined,
      isEligible: (topic, p) => this.host?.eligibleToLead?.(topic, p) ?? true,
      onChange: (c) => this.changed(c),
    });
    this.applier = new StateApplier({
      view: this.view,
      clock: this.clock,
      logger: this.logger,
      hooks: { canLead: () => this.canLead(), changeIsr: (p, isr) => this.changeIsr(p, isr) },
      holdsEpoch: (topic, p, entry) => this.elections.holdsEpoch(topic, p, entry),
    });
    this.topicAdmin = new TopicAdmin({
      arbiter: this.arbiter,
      keys: this.keys,
      view: this.view,
      clock: this.clock,
      logger: this.logger,
      topicApplyWaitMs: options.topicApplyWaitMs ?? 5000,
      cellSize: options.cellSize ?? 3,
      offsetsReplicationFactor: options.offsetsReplicationFactor ?? 3,
      host: () => this.host,
      waitApplied: (cond, ms) => this.applier.waitFor(cond, ms),
      onChange: (c) => this.changed(c),
      isClosed: () => this.closed,
    });
    this.producerIdStore = new ArbiterProducerIdStore(this.arbiter, this.keys);
    this.producerIds = new ProducerIds(this.producerIdStore);
  }

  // ---------------------------------------------------------------------------------------------
  // Lifecycle

  async start(host: CellHost): Promise<void> {
    this.host = host;
    host.topics.knownElsewhere = (topic) => this.view.topics.has(topic);
    await this.lease.register();
    await this.watch.start();
    await this.publishRecovering();
    // Topics first (local ones the cell no longer has go), then roles; a partition named ours in
    // an earlier incarnation's epoch is bumped or resigned before this broker serves it.
    this.applier.attach(host);
    this.applier.markAll();
    await this.applier.idle();
    this.elections.sweep();
    await this.elections.settled();
    await this.applier.idle();
    this.lease.start();
    void this.topicAdmin.maybeCreateOffsetsTopic();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.elections.close();
    await this.watch.close();
    await this.lease.close();
    await this.arbiter.close().catch(() => undefined);
  }

  canLead(): boolean {
    return !this.closed && this.lease.valid() && this.watch.isCurrent;
  }

  private entry(): BrokerEntry {
    const h = this.host!;
    return { id: h.brokerId, host: h.host, port: h.port, region: h.region, pid: process.pid };
  }

  private onRegistered(revision: number): void {
    this.elections.newIncarnation(revision);
    const me = this.entry();
    this.view.brokers.set(me.id, me);
    this.view.knownBrokers.add(me.id);
    // Every partition named ours is another incarnation's now: re-applied, then reclaimed.
    if (this.host) this.applier.markAll();
    // A watch that broke with the link can catch up now (its barrier needs the new lease).
    this.watch.retryNow();
  }

  /**
   * Tells the cell which local replicas are recovering (they may lack records they once held),
   * with where their logs end, before this broker takes part in any election: the others then
   * never count them as candidates, and when every replica of a partition is recovering they all
   * elect the one that holds the most. Each entry is written only while its topic is the same
   * incarnation; it is durable (not bound to the lease), so it outlives this broker's restarts
   * until the replica has caught up.
   */
  private async publishRecovering(): Promise<void> {
    for (const r of this.host?.recoveringReplicas?.() ?? []) {
      const t = this.view.topics.get(r.topic);
      if (!t || t.rec.id !== r.topicId) continue;
      const key = this.keys.recovering(r.topic, r.partition, this.host!.brokerId);
      const value = Buffer.from(JSON.stringify({ topicId: r.topicId, lastEpoch: r.lastEpoch, logEndOffset: r.logEndOffset, reason: r.reason }));
      const res = await this.arbiter.txn({ compares: [{ key: this.keys.topic(r.topic), target: 'create', revision: t.createRevision }], ops: [{ type: 'put', key, value }] });
      if (res.ok) this.changed(this.view.ingest(key, value, res.revision));
      this.logger.warn({ topic: r.topic, partition: r.partition, lastEpoch: r.lastEpoch, logEndOffset: r.logEndOffset, reason: r.reason }, 'told the cell this replica is recovering');
    }
  }

  /** A local replica caught up (or was elected): its recovering entry goes. */
  replicaRecovered(topic: string, partition: number): void {
    if (!this.host || this.closed) return;
    const key = this.keys.recovering(topic, partition, this.host.brokerId);
    void this.arbiter
      .delete(key)
      .then((r) => this.changed(this.view.ingest(key, null, r.revision)))
      .catch((err: unknown) => this.logger.warn({ err, topic, partition }, 'could not remove the recovering entry; the next start removes it'));
  }

  /** After losing the lease: every replica led here becomes a follower until the arbiter says more. */
  private onLeaseLost(): void {
    for (const p of this.host?.topics.localPartitions() ?? []) {
      if (p.role === 'leader') {
        p.becomeFollower(-1, p.leaderEpoch, p.isr, p.replicas);
        this.host!.onRoleChange(p);
      }
    }
  }

  /** The periodic tick (after each renewal) and the moment the watch is current again. */
  private tick(): void {
    if (this.closed || !this.host) return;
    this.elections.sweep();
    void this.topicAdmin.maybeCreateOffsetsTopic();
  }

  /**
   * One sweep for every change made in the same turn: a sweep looks at every partition, and a
   * full read brings one change per key.
   */
  private sweepSoon(): void {
    if (this.sweepQueued) return;
    this.sweepQueued = true;
    queueMicrotask(() => {
      this.sweepQueued = false;
      if (!this.closed && this.host) this.elections.sweep();
    });
  }

  /** Acts on one change of the view. */
  private changed(c: CellChange | null): void {
    if (!c || this.closed) return;
    switch (c.kind) {
      case 'broker':
        if (c.id === this.host?.brokerId && !c.up) this.logger.warn('our broker key vanished (lease gone)');
        this.sweepSoon();
        if (c.up && this.host) void this.topicAdmin.maybeCreateOffsetsTopic();
        return;
      case 'topic':
        this.applier.markTopic(c.name);
        this.sweepSoon();
        return;
      case 'partition':
        this.applier.markPartition(c.topic, c.partition);
        this.sweepSoon();
        return;
      case 'producer-epoch':
        this.producerIdStore.observe(c.id, c.epoch);
        return;
      case 'recovering':
        this.sweepSoon();
        return;
      case 'quota':
        this.host?.onQuotaChange?.(c.tenant, c.topic, c.quota);
        return;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reads for the broker

  brokers(): BrokerInfo[] {
    return [...this.view.brokers.values()].map((b) => ({ id: b.id, host: b.host, port: b.port, region: b.region })).sort((a, b) => a.id - b.id);
  }

  brokerStatus(): BrokerStatus[] {
    return [...this.view.knownBrokers]
      .sort((a, b) => a - b)
      .map((id) => {
        const b = this.view.brokers.get(id);
        return b ? { id, pid: b.pid, host: b.host, port: b.port, region: b.region, alive: true } : { id, pid: 0, host: '', port: 0, region: '', alive: false };
      });
  }

  topicRecords(): TopicRecord[] {
    return [...this.view.topics.values()].map((t) => t.rec);
  }

  partitionState(topic: string, partition: number): PartitionState | undefined {
    return this.view.state(topic, partition)?.state;
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  createTopic(input: CreateTopicInput, options: { validateOnly?: boolean; internal?: boolean } = {}): Promise<void> {
    return this.topicAdmin.create(input, options);
  }

  deleteTopic(name: string): Promise<void> {
    return this.topicAdmin.delete(name);
  }

  /**
   * Writes the changes in one transaction and takes them into the view at once (the watch brings
   * them again, ignored by revision), so this broker's book has them before the answer.
   */
  async alterQuotas(changes: readonly QuotaChange[]): Promise<void> {
    const { revision, writes } = await writeQuotas(this.arbiter, this.keys, changes);
    for (const w of writes) this.changed(this.view.ingest(w.key, w.value, revision));
  }

  changeIsr(p: Partition, isr: number[]): Promise<boolean> {
    return this.elections.changeIsr(p, isr);
  }

  currentEpoch(producerId: number): number | undefined {
    return this.producerIds.currentEpoch(producerId);
  }

  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    return this.producerIds.init(producerId, producerEpoch);
  }
}
