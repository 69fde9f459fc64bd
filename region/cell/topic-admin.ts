/**
 * Creating and deleting the cell's topics, and the internal offsets topic once the cell is full.
 *
 * A topic is created by one transaction: only if its key does not exist, the record (with every
 * partition's replicas, from which each partition's initial state follows, see cell-view.ts) is
 * written and any partition state left under its name is deleted. So of many brokers creating the
 * same topic at once exactly one wins, and no state of a loser can outlive it. A topic is deleted
 * with its partition states by one transaction, conditional on the record read.
 */
import { randomUUID } from 'node:crypto';
import { EdgeqError, isEdgeqError, silentLogger, toEdgeqError, type Clock, type Logger } from '../../src/core/index.ts';
import { CONSUMER_OFFSETS_TOPIC, isInternalTopic, validateUserTopicName, type CellHost, type CreateTopicInput, type TopicRecord } from '../../src/broker/index.ts';
import type { Arbiter } from '../arbiter/index.ts';
import type { CellKeys } from './cell-keys.ts';
import type { CellChange, CellView } from './cell-view.ts';

/** Settings and collaborators of TopicAdmin. */
export interface TopicAdminOptions {
  arbiter: Arbiter;
  keys: CellKeys;
  view: CellView;
  clock: Clock;
  logger?: Logger;
  /** How long creation and deletion wait to see the change applied locally. */
  topicApplyWaitMs: number;
  /** Brokers the cell is meant to have; the offsets topic is created once this many are up. */
  cellSize: number;
  /** Replication factor of the offsets topic (capped by the live brokers). */
  offsetsReplicationFactor: number;
  host(): CellHost | null;
  /** Resolves once `cond` holds after a local apply, or after `msMax`. */
  waitApplied(cond: () => boolean, msMax: number): Promise<void>;
  /** A write succeeded and was taken into the view. */
  onChange(change: CellChange): void;
  isClosed(): boolean;
  /** Picks the broker the first partition's replicas start at; Math.random by default. */
  random?: () => number;
}

/** Topic creation and deletion for one broker's controller. */
export class TopicAdmin {
  private readonly logger: Logger;
  /** One attempt at a time: every broker-up event asks again. */
  private creatingOffsets = false;

  constructor(private readonly o: TopicAdminOptions) {
    this.logger = o.logger ?? silentLogger;
  }

  async create(input: CreateTopicInput, options: { validateOnly?: boolean; internal?: boolean } = {}): Promise<void> {
    const host = this.host();
    const name = input.name;
    if (this.o.view.topics.has(name)) throw alreadyExists(name);
    const alive = [...this.o.view.brokers.keys()].sort((a, b) => a - b);
    // The broker's own checks (name, partitions, replication factor, config, limits), against the
    // cell's live brokers instead of the one broker.
    const { replicationFactor: rf } = host.topics.validateCreate(input, {
      ...(options.internal ? { internal: true } : {}),
      brokerCount: alive.length,
      defaultReplicationFactor: Math.min(3, alive.length),
    });
    if (options.validateOnly) return;
    const n = input.partitions;
    // Spread leaders: partition p starts at broker (start + p) and takes the next rf brokers.
    const start = Math.floor((this.o.random ?? Math.random)() * alive.length);
    const assignments = Array.from({ length: n }, (_, p) => Array.from({ length: rf }, (_, r) => alive[(start + p + r) % alive.length]!));
    const rec: TopicRecord = {
      name,
      id: randomUUID().slice(0, 8),
      partitions: n,
      replicationFactor: rf,
      config: { ...(input.config ?? {}) },
      leaderEpoch: 1,
      createdAtMs: this.o.clock.nowMs(),
      internal: options.internal === true || isInternalTopic(name),
      assignments,
    };
    const key = this.o.keys.topic(name);
    const value = Buffer.from(JSON.stringify(rec));
    const r = await this.o.arbiter.txn({
      compares: [{ key, target: 'mod', revision: 0 }],
      // Leftovers under the name (an interrupted delete of an older version) must not shadow the new states.
      ops: [
        { type: 'put', key, value },
        { type: 'deletePrefix', prefix: this.o.keys.partitionsOf(name) },
        { type: 'deletePrefix', prefix: this.o.keys.recoveringOf(name) },
      ],
    });
    if (!r.ok) throw alreadyExists(name);
    this.ingest(key, value, r.revision);
    await this.o.waitApplied(() => host.topics.get(name)?.record.id === rec.id, this.o.topicApplyWaitMs);
  }

  async delete(name: string): Promise<void> {
    validateUserTopicName(name);
    const host = this.host();
    const known = this.o.view.topics.get(name);
    if (!known) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } });
    const key = this.o.keys.topic(name);
    const r = await this.o.arbiter.txn({
      compares: [{ key, target: 'mod', revision: known.modRevision }],
      ops: [
        { type: 'delete', key },
        { type: 'deletePrefix', prefix: this.o.keys.partitionsOf(name) },
        { type: 'deletePrefix', prefix: this.o.keys.recoveringOf(name) },
      ],
    });
    if (!r.ok) {
      if (r.current[0] === null) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } });
      throw new EdgeqError('CAS_FAILED', `topic ${name} changed while being deleted; try again`, { details: { topic: name } });
    }
    this.ingest(key, null, r.revision);
    await this.o.waitApplied(() => host.topics.get(name) === undefined, this.o.topicApplyWaitMs);
  }

  /** Creates the internal offsets topic once the cell has its brokers (any broker may; one wins). */
  async maybeCreateOffsetsTopic(): Promise<void> {
    const live = this.o.view.brokers.size;
    if (this.creatingOffsets || this.o.isClosed() || !this.o.host() || this.o.view.topics.has(CONSUMER_OFFSETS_TOPIC) || live < this.o.cellSize) return;
    this.creatingOffsets = true;
    try {
      // Commits are as durable as the records they point into: synced before they are answered
      // (as on a lone broker), replicated on min(3, brokers) with min.insync.replicas 2 at rf 3.
      await this.create(
        { name: CONSUMER_OFFSETS_TOPIC, partitions: 1, replicationFactor: Math.min(this.o.offsetsReplicationFactor, live), config: { 'flush.policy': 'sync', 'retention.ms': '-1' } },
        { internal: true },
      );
    } catch (err) {
      if (!isEdgeqError(err, 'TOPIC_ALREADY_EXISTS')) this.logger.warn({ code: toEdgeqError(err).code }, 'could not create the offsets topic yet');
    } finally {
      this.creatingOffsets = false;
    }
  }

  private ingest(key: string, value: Buffer | null, revision: number): void {
    const change = this.o.view.ingest(key, value, revision);
    if (change) this.o.onChange(change);
  }

  private host(): CellHost {
    const host = this.o.host();
    if (!host) throw new EdgeqError('BROKER_NOT_AVAILABLE', 'the cell controller has not started');
    return host;
  }
}

function alreadyExists(name: string): EdgeqError {
  return new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${name} already exists`, { details: { topic: name } });
}
