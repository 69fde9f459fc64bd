/**
 * The topics of one broker: creates, deletes and describes them, opens their partitions' logs at
 * start and closes them at stop. Mutations run one at a time (a create and a delete of the same
 * name cannot interleave).
 */
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger } from '../core/index.ts';
import { PartitionLog, type FilePool, type LogConfig, type LogObserver, type Storage } from '../log/index.ts';
import { LeaderEpochCache } from './leader-epoch-cache.ts';
import { Partition } from './partition.ts';
import { OriginState } from './origin-state.ts';
import { ProducerState } from './producer-state.ts';
import type { ProducerIdSource } from './controller.ts';
import { hwCheckpointKey, readHwCheckpoint, writeHwCheckpoint } from './hw-checkpoint.ts';
import { markReason, readRecoveryMark, writeRecoveryMark, type RecoveryMark } from './recovery-mark.ts';
import { describeTopicConfig, parseTopicConfig, type TopicSettings } from './topic-config.ts';
import { TopicStore, type TopicRecord } from './topic-store.ts';
import { isInternalTopic, validateTopicName, validateUserTopicName } from './topic-name.ts';

/** Bounds on topics. */
export interface TopicLimits {
  topicsMax: number;
  partitionsPerTopicMax: number;
  /** Partitions across all topics: each holds open indexes and a producer state. */
  partitionsMax: number;
}

export const TOPIC_LIMITS_DEFAULT: TopicLimits = { topicsMax: 1000, partitionsPerTopicMax: 1024, partitionsMax: 10_000 };

/** A topic as this broker knows it: every partition, with the local replica where one is here. */
export interface TopicView {
  record: TopicRecord;
  settings: TopicSettings;
  /** Indexed by partition; undefined where this broker holds no replica (a cell). */
  partitions: (Partition | undefined)[];
}

/** What the manager needs. */
export interface TopicManagerDeps {
  storage: Storage;
  dataDir: string;
  filePool: FilePool;
  producerIds: ProducerIdSource;
  logDefaults: Partial<LogConfig>;
  brokerCount: number;
  /** How often each log checks its retention limits. */
  retentionCheckIntervalMs: number;
  brokerId: number;
  /**
   * A lone broker starts a new leader term for its partitions at every start; in a cell the
   * arbiter hands out epochs, so they are left alone.
   */
  bumpEpochsOnOpen?: boolean;
  limits?: Partial<TopicLimits>;
  clock?: Clock;
  logger?: Logger;
  observer?: LogObserver;
}

/** A request to create a topic. */
export interface CreateTopicInput {
  name: string;
  partitions: number;
  replicationFactor?: number;
  config?: Record<string, string>;
}

export class TopicManager {
  private readonly topics = new Map<string, TopicView>();
  private readonly limits: TopicLimits;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** True for topics the cell has that may not be applied here yet (set by the cell controller). */
  knownElsewhere: (topic: string) => boolean = () => false;
  /** Told when a recovering replica is no longer recovering (set by the broker in a cell). */
  onReplicaRecovered: (p: Partition, why: string) => void = () => undefined;

  private constructor(
    private readonly deps: TopicManagerDeps,
    private readonly store: TopicStore,
    /** High watermarks from the checkpoint, consumed as partitions open. */
    private readonly hwAtStart: Map<string, number>,
  ) {
    this.limits = { ...TOPIC_LIMITS_DEFAULT, ...deps.limits };
    this.clock = deps.clock ?? systemClock;
    this.logger = (deps.logger ?? silentLogger).child({ component: 'topics' });
  }

  /** Loads topics.json, removes orphaned folders and opens every partition (recovering logs). */
  static async open(deps: TopicManagerDeps): Promise<TopicManager> {
    const store = await TopicStore.open(deps.storage, deps.dataDir);
    const m = new TopicManager(deps, store, await readHwCheckpoint(deps.storage, deps.dataDir));
    for (const dir of await store.orphanDirs()) {
      m.logger.warn({ dir }, 'removing the folder of a topic that no longer exists');
      await deps.storage.rmdir(dir);
    }
    // A broker that restarts is a new leader term for every partition it leads: bump the epochs
    // so requests aimed at the previous term are recognised.
    if (deps.bumpEpochsOnOpen !== false) await store.setLeaderEpochs((t) => t.leaderEpoch + 1);
    for (const rec of store.list()) {
      const settings = parseTopicConfig(rec.config, deps.logDefaults, rec.replicationFactor);
      const partitions: (Partition | undefined)[] = [];
      for (let p = 0; p < rec.partitions; p++) partitions.push(m.hostsReplica(rec, p) ? await m.openPartition(rec, p, settings) : undefined);
      m.topics.set(rec.name, { record: rec, settings, partitions });
    }
    return m;
  }

  /** True when this broker holds a replica of partition `p` of `rec`. */
  hostsReplica(rec: TopicRecord, p: number): boolean {
    return !rec.assignments || (rec.assignments[p] ?? []).includes(this.deps.brokerId);
  }

  /** Every local replica. */
  localPartitions(): Partition[] {
    return [...this.topics.values()].flatMap((t) => t.partitions.filter((p): p is Partition => p !== undefined));
  }

  /**
   * Makes the local state match a topic record from the cell: opens the replicas assigned here
   * (a topic re-created under the same name replaces the old one's files).
   */
  applyTopic(rec: TopicRecord): Promise<TopicView> {
    return this.serial(async () => {
      const known = this.topics.get(rec.name);
      if (known && known.record.id !== rec.id) await this.dropLocal(known);
      const current = this.topics.get(rec.name);
      if (current) return current;
      const settings = parseTopicConfig(rec.config, this.deps.logDefaults, rec.replicationFactor);
      await this.store.put(rec);
      const partitions: (Partition | undefined)[] = [];
      for (let p = 0; p < rec.partitions; p++) partitions.push(this.hostsReplica(rec, p) ? await this.openPartition(rec, p, settings) : undefined);
      const view = { record: rec, settings, partitions };
      this.topics.set(rec.name, view);
      this.logger.info({ topic: rec.name, id: rec.id, local: partitions.filter(Boolean).length }, 'topic applied from the cell');
      return view;
    });
  }

  /** Removes a topic's local replicas and entry (the cell deleted it). */
  removeTopic(name: string): Promise<void> {
    return this.serial(async () => {
      const view = this.topics.get(name);
      if (view) await this.dropLocal(view);
    });
  }

  private async dropLocal(view: TopicView): Promise<void> {
    await this.store.remove(view.record.name).catch(() => undefined);
    this.topics.delete(view.record.name);
    for (const p of view.partitions) p?.goOffline();
    await Promise.all(view.partitions.map((p) => p?.log.abort().catch(() => undefined)));
    await this.deps.storage.rmdir(this.store.topicDir(view.record));
    this.logger.info({ topic: view.record.name }, 'topic removed');
  }

  /** Every topic; internal ones only when asked. */
  list(options: { includeInternal?: boolean } = {}): TopicView[] {
    return [...this.topics.values()].filter((t) => options.includeInternal || !t.record.internal);
  }

  get(name: string): TopicView | undefined {
    return this.topics.get(name);
  }

  /**
   * The local replica, or UNKNOWN_TOPIC_OR_PARTITION; NOT_LEADER (retriable) when the partition
   * exists but lives on other brokers of the cell.
   */
  partition(topic: string, index: number): Partition {
    const t = this.topics.get(topic);
    if (!t && this.knownElsewhere(topic)) {
      // The cell has the topic and this broker is about to apply it: ask again shortly.
      throw new EdgeqError('LEADER_NOT_AVAILABLE', `topic ${topic} is still being set up on broker ${this.deps.brokerId}`, { details: { topic, partition: index } });
    }
    if (!t || !Number.isInteger(index) || index < 0 || index >= t.partitions.length) {
      throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', t ? `topic ${topic} has no partition ${index}` : `topic ${topic} does not exist`, {
        details: { topic, partition: index },
      });
    }
    const p = t.partitions[index];
    if (!p) {
      throw new EdgeqError('NOT_LEADER', `broker ${this.deps.brokerId} holds no replica of ${topic}-${index}`, { details: { topic, partition: index } });
    }
    return p;
  }

  /**
   * Throws UNKNOWN_TOPIC_ID when a request resolved `topic` to another incarnation than the one
   * here (KIP-516: the name was deleted and created again). An empty id skips the check; an
   * unknown name is left to the partition lookup.
   */
  checkTopicId(topic: string, topicId: string | null | undefined): void {
    if (!topicId) return;
    const t = this.topics.get(topic);
    if (t && t.record.id !== topicId) {
      throw new EdgeqError('UNKNOWN_TOPIC_ID', `topic ${topic} is now ${t.record.id}, not ${topicId}: it was deleted and created again; refresh metadata`, {
        details: { topic, topicId, currentTopicId: t.record.id },
      });
    }
  }

  /** Partition count of every topic (for assignors and offset validation). */
  partitionCounts(): Map<string, number> {
    return new Map([...this.topics.values()].map((t) => [t.record.name, t.partitions.length]));
  }

  /** Validates a create request without doing it; returns the parsed settings. */
  validateCreate(
    input: CreateTopicInput,
    options: {
      internal?: boolean;
      /** Brokers a replica may go to (a cell passes its live brokers); default the manager's own. */
      brokerCount?: number;
      /** Replication factor when the request names none. */
      defaultReplicationFactor?: number;
    } = {},
  ): { settings: TopicSettings; replicationFactor: number } {
    const name = options.internal ? validateTopicName(input.name) : validateUserTopicName(input.name);
    if (this.topics.has(name)) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${name} already exists`, { details: { topic: name } });
    const n = input.partitions;
    if (!Number.isInteger(n) || n < 1 || n > this.limits.partitionsPerTopicMax) {
      throw new EdgeqError('INVALID_ARGUMENT', `partitions must be an integer in [1, ${this.limits.partitionsPerTopicMax}], got ${n}`, {
        details: { key: 'partitions', value: n },
      });
    }
    const brokers = options.brokerCount ?? this.deps.brokerCount;
    const rf = input.replicationFactor ?? options.defaultReplicationFactor ?? 1;
    if (!Number.isInteger(rf) || rf < 1 || rf > brokers) {
      throw new EdgeqError('INVALID_ARGUMENT', `replication factor must be in [1, ${brokers}] (brokers available), got ${rf}`, {
        details: { key: 'replicationFactor', value: rf },
      });
    }
    if (this.topics.size >= this.limits.topicsMax) {
      throw new EdgeqError('INVALID_ARGUMENT', `the broker already holds ${this.topics.size} topics, the limit (topicsMax)`);
    }
    const total = [...this.topics.values()].reduce((s, t) => s + t.partitions.length, 0);
    if (total + n > this.limits.partitionsMax) {
      throw new EdgeqError('INVALID_ARGUMENT', `${n} more partitions would exceed partitionsMax=${this.limits.partitionsMax} (now ${total})`);
    }
    const settings = parseTopicConfig(input.config ?? {}, this.deps.logDefaults, rf);
    if (settings.minInsyncReplicas > rf) {
      throw new EdgeqError('INVALID_ARGUMENT', `min.insync.replicas=${settings.minInsyncReplicas} exceeds the replication factor ${rf}`, {
        details: { key: 'min.insync.replicas' },
      });
    }
    return { settings, replicationFactor: rf };
  }

  /** Creates a topic: durable in topics.json, logs created, then visible. */
  create(input: CreateTopicInput, options: { internal?: boolean } = {}): Promise<TopicView> {
    return this.serial(async () => {
      const { settings } = this.validateCreate(input, options);
      const rec = await this.store.add(
        {
          name: input.name,
          partitions: input.partitions,
          replicationFactor: input.replicationFactor ?? 1,
          config: { ...(input.config ?? {}) },
          internal: options.internal === true || isInternalTopic(input.name),
        },
        this.clock.nowMs(),
      );
      const partitions: Partition[] = [];
      try {
        for (let p = 0; p < rec.partitions; p++) partitions.push(await this.openPartition(rec, p, settings));
      } catch (err) {
        // Undo: the entry goes first so a crash here leaves only orphan folders, removed at start.
        await Promise.all(partitions.map((p) => p.log.close().catch(() => undefined)));
        await this.store.remove(rec.name).catch(() => undefined);
        await this.deps.storage.rmdir(this.store.topicDir(rec)).catch(() => undefined);
        throw err;
      }
      const view = { record: rec, settings, partitions };
      this.topics.set(rec.name, view);
      this.logger.info({ topic: rec.name, partitions: rec.partitions, config: rec.config }, 'topic created');
      return view;
    });
  }

  /** Deletes a user topic: gone from topics.json first, then its logs closed and removed. */
  delete(name: string): Promise<void> {
    return this.serial(async () => {
      validateUserTopicName(name);
      const view = this.topics.get(name);
      if (!view) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } });
      await this.dropLocal(view);
    });
  }

  /** The effective configuration of a topic as a string map. */
  describeConfig(view: TopicView): Record<string, string> {
    return describeTopicConfig(view.settings);
  }

  /** Writes every partition's producer snapshot. */
  async snapshotProducers(): Promise<void> {
    for (const t of this.topics.values()) {
      for (const p of t.partitions) {
        if (!p) continue;
        await p.snapshotProducers(this.deps.storage).catch((err: unknown) => this.logger.warn({ err, topic: t.record.name }, 'producer snapshot failed'));
      }
    }
  }

  /** Writes every local replica's high watermark to the broker's checkpoint. */
  async checkpointHighWatermarks(): Promise<void> {
    const marks = new Map<string, number>();
    for (const t of this.topics.values()) {
      t.partitions.forEach((p, i) => {
        if (p) marks.set(hwCheckpointKey(t.record.name, t.record.id, i), p.highWatermark);
      });
    }
    await writeHwCheckpoint(this.deps.storage, this.deps.dataDir, marks);
  }

  /** Flushes and closes every log (after a final producer snapshot and high-watermark checkpoint). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.chain.catch(() => undefined);
    const all = this.localPartitions();
    await Promise.all(all.map((p) => p.log.close().catch((err: unknown) => this.logger.error({ err }, 'log close failed'))));
    await Promise.all(all.map((p) => p.snapshotProducers(this.deps.storage).catch(() => undefined)));
    await this.checkpointHighWatermarks().catch((err: unknown) => this.logger.warn({ err }, 'high-watermark checkpoint failed at close'));
    this.topics.clear();
  }

  private async openPartition(rec: TopicRecord, index: number, settings: TopicSettings): Promise<Partition> {
    const dir = this.store.partitionDir(rec, index);
    const log = await PartitionLog.open(dir, settings.log, {
      storage: this.deps.storage,
      clock: this.clock,
      logger: this.logger,
      filePool: this.deps.filePool,
      ...(this.deps.observer ? { observer: this.deps.observer } : {}),
    });
    log.scheduleRetention(this.deps.retentionCheckIntervalMs);
    const producers = new ProducerState({ clock: this.clock, currentEpoch: (id) => this.deps.producerIds.currentEpoch(id) });
    const scanned = await producers.rebuild(log, this.deps.storage);
    if (scanned > 0) this.logger.debug({ topic: rec.name, partition: index, scanned }, 'producer state rebuilt from the log');
    const origins = new OriginState({ clock: this.clock });
    await origins.rebuild(log, { scan: settings.scope === 'global' });
    const epochs = new LeaderEpochCache(this.deps.storage, dir);
    await epochs.rebuild(log);
    const recovering = rec.assignments ? await this.recoveryMarkOf(dir, log.recovery, rec.name, index) : null;
    const p = new Partition({
      topic: rec.name,
      topicId: rec.id,
      index,
      log,
      producers,
      origins,
      epochs,
      leaderEpoch: rec.leaderEpoch,
      settings,
      brokerId: this.deps.brokerId,
      storage: this.deps.storage,
      clock: this.clock,
      highWatermark: this.hwAtStart.get(hwCheckpointKey(rec.name, rec.id, index)) ?? log.logStartOffset,
      // In a cell the replica waits for the arbiter's word on who leads.
      ...(rec.assignments ? { cellReplicas: rec.assignments[index] ?? [] } : {}),
      recovering,
      onRecovered: (part, why) => {
        this.logger.info({ topic: part.topic, partition: part.index, why }, 'replica recovered: eligible to lead again');
        this.onReplicaRecovered(part, why);
      },
    });
    return p;
  }

  /**
   * A cell replica's recovery mark: the one on disk (it outlives restarts until the replica
   * caught up), or a new one when this open found the log may lack writes it once accepted. A
   * lone broker's partition is the only copy: there is nothing to catch up from, so no mark.
   */
  private async recoveryMarkOf(dir: string, report: PartitionLog['recovery'], topic: string, index: number): Promise<RecoveryMark | null> {
    const known = await readRecoveryMark(this.deps.storage, dir);
    const reason = markReason(report);
    if (known) {
      this.logger.warn({ topic, partition: index, reason: known.reason, sinceMs: known.sinceMs }, 'replica still recovering: not eligible to lead until it has caught up');
      return known;
    }
    if (reason === null) return null;
    const mark: RecoveryMark = { reason, sinceMs: this.clock.nowMs() };
    await writeRecoveryMark(this.deps.storage, dir, mark);
    this.logger.warn({ topic, partition: index, reason }, 'replica may lack records it held: not eligible to lead until it has caught up');
    return mark;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new EdgeqError('BROKER_NOT_AVAILABLE', 'the broker is shutting down'));
    const run = this.chain.then(fn);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
