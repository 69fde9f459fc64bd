/**
 * The cell as one broker knows it: its copy of the cell's keys in the arbiter (live brokers,
 * topic records, partition states, bumped producer epochs, quotas), fed by the watch one event at a time
 * or by a full read after the watch was lost. It never touches the arbiter; it says what changed
 * so the controller can act.
 *
 * Every key keeps the revision it was last seen at, and older news is ignored: the controller's
 * own writes are ingested when they succeed, before the watch delivers them again, and a resumed
 * watch may repeat a revision. A topic's partitions need no key until their state first changes:
 * until then a partition is in its initial state, derived from the topic record (leader the first
 * assigned replica, every replica in sync, the record's epoch), so a topic and all its states are
 * created by one write whatever its partition count (a transaction holding one key per partition
 * would stop at 128, etcd's limit of operations per transaction). A partition key counts only
 * when written after its topic's creation: every later write is.
 */
import type { BrokerInfo } from '../../src/protocol/index.ts';
import type { PartitionState, TopicRecord } from '../../src/broker/index.ts';
import { EdgeqError, type Logger } from '../../src/core/index.ts';
import { parseQuota, quotaKey, type Quota } from '../../ratelimit/index.ts';
import type { KeyValue } from '../arbiter/index.ts';
import type { CellKeys } from './cell-keys.ts';

/** A live broker's registration. */
export interface BrokerEntry extends BrokerInfo {
  pid: number;
}

/** A topic record with the revisions of its key. */
export interface TopicEntry {
  rec: TopicRecord;
  /** Revision of the topic's creation: partition writes are conditional on it (same incarnation). */
  createRevision: number;
  modRevision: number;
}

/** A partition's state with the revision its next write must compare against. */
export interface StateEntry {
  state: PartitionState;
  /** Revision of the partition's key (0: no key). */
  modRevision: number;
  /** The topic's initial state, derived from its record (no key written since the topic was created). */
  initial: boolean;
}

/** A broker's word that its replica of a partition is recovering (may lack records it held). */
export interface RecoveringEntry {
  /** The topic incarnation it is about: entries for another id are ignored. */
  topicId: string;
  lastEpoch: number;
  logEndOffset: number;
  reason: string;
}

/** What one ingested key changed. */
export type CellChange =
  | { kind: 'broker'; id: number; up: boolean }
  | { kind: 'topic'; name: string }
  | { kind: 'partition'; topic: string; partition: number }
  | { kind: 'producer-epoch'; id: number; epoch: number }
  | { kind: 'recovering'; topic: string; partition: number; id: number }
  | { kind: 'quota'; tenant: string; topic: string; quota: Quota | null };

/** One broker's copy of the cell's state. */
export class CellView {
  readonly brokers = new Map<number, BrokerEntry>();
  /** Every broker id ever seen in assignments or membership (status reports dead ones too). */
  readonly knownBrokers = new Set<number>();
  readonly topics = new Map<string, TopicEntry>();
  /** Revision of every key held, by full key. */
  private readonly revisions = new Map<string, number>();
  private readonly states = new Map<string, StateEntry>();
  /** The cell's quotas, by quotaKey. */
  readonly quotas = new Map<string, Quota>();
  /** Recovering replicas: partition key → broker id → entry. */
  private readonly recoveringByPartition = new Map<string, Map<number, RecoveringEntry>>();

  constructor(
    private readonly keys: CellKeys,
    private readonly logger: Logger,
  ) {}

  /** The partition's state: its key's, or the initial one from the topic record; undefined for a partition the cell does not have. */
  state(topic: string, partition: number): StateEntry | undefined {
    const t = this.topics.get(topic);
    if (!t || !Number.isInteger(partition) || partition < 0 || partition >= t.rec.partitions) return undefined;
    const stored = this.states.get(this.keys.partition(topic, partition));
    // A state written before the topic's creation is an earlier incarnation's whose delete has
    // not arrived yet (or a leftover of the old non-atomic create): this topic starts afresh.
    // Such a key still exists in the arbiter, so the next write compares against its revision.
    if (stored && stored.modRevision > t.createRevision) return stored;
    const replicas = t.rec.assignments?.[partition] ?? [];
    return { state: { leader: replicas[0] ?? -1, leaderEpoch: t.rec.leaderEpoch, isr: [...replicas], replicas: [...replicas] }, modRevision: stored?.modRevision ?? 0, initial: true };
  }

  /** Broker `id`'s word that its replica of the partition is recovering, for the topic as it is now. */
  recovering(topic: string, partition: number, id: number): RecoveringEntry | undefined {
    const e = this.recoveringByPartition.get(this.keys.partition(topic, partition))?.get(id);
    return e && e.topicId === this.topics.get(topic)?.rec.id ? e : undefined;
  }

  /** Every partition of every topic the cell has, with its state. */
  *partitions(): Generator<{ topic: string; partition: number; entry: StateEntry }> {
    for (const [name, t] of this.topics) {
      for (let p = 0; p < t.rec.partitions; p++) yield { topic: name, partition: p, entry: this.state(name, p)! };
    }
  }

  /**
   * Takes in a key's value at `modRevision` (null: deleted). Returns what changed, or null when
   * the news is not newer than what is held or the key is not one of the cell's.
   */
  ingest(key: string, value: Buffer | null, modRevision: number, createRevision = modRevision): CellChange | null {
    const known = this.revisions.get(key);
    // A delete carries a revision above the put it removes, so `>=` also drops a repeated delete.
    if (known !== undefined && known >= modRevision) return null;
    if (value === null && known === undefined) return null;
    let change: CellChange | null;
    try {
      change = this.apply(key, value, modRevision, createRevision);
    } catch (err) {
      this.logger.error({ err, key }, 'could not read a cell record');
      return null;
    }
    if (change === null) return null;
    if (value === null) this.revisions.delete(key);
    else this.revisions.set(key, modRevision);
    return change;
  }

  /**
   * Makes the view equal a full read of the cell's keys (after the watch was lost for good):
   * keys missing from the read were deleted meanwhile. Returns every change.
   */
  reconcile(kvs: KeyValue[]): CellChange[] {
    const present = new Set(kvs.map((kv) => kv.key));
    const changes: CellChange[] = [];
    for (const key of [...this.revisions.keys()]) {
      if (present.has(key)) continue;
      const c = this.ingest(key, null, Number.MAX_SAFE_INTEGER);
      if (c) changes.push(c);
    }
    for (const kv of kvs) {
      const c = this.ingest(kv.key, kv.value, kv.modRevision, kv.createRevision);
      if (c) changes.push(c);
    }
    return changes;
  }

  private apply(key: string, value: Buffer | null, modRevision: number, createRevision: number): CellChange | null {
    const k = this.keys.parse(key);
    switch (k.kind) {
      case 'broker': {
        if (value) {
          const b = JSON.parse(value.toString('utf8')) as BrokerEntry;
          this.brokers.set(k.id, b);
          this.knownBrokers.add(k.id);
        } else {
          this.brokers.delete(k.id);
        }
        return { kind: 'broker', id: k.id, up: value !== null };
      }
      case 'topic': {
        if (value) {
          const rec = JSON.parse(value.toString('utf8')) as TopicRecord;
          // A topic key is written once, when the topic is created, so a watch event's revision
          // is also its creation revision (a read gives it explicitly).
          this.topics.set(k.name, { rec, createRevision, modRevision });
          for (const a of rec.assignments ?? []) for (const id of a) this.knownBrokers.add(id);
        } else {
          this.topics.delete(k.name);
        }
        return { kind: 'topic', name: k.name };
      }
      case 'partition': {
        if (value) this.states.set(key, { state: JSON.parse(value.toString('utf8')) as PartitionState, modRevision, initial: false });
        else this.states.delete(key);
        return { kind: 'partition', topic: k.topic, partition: k.partition };
      }
      case 'recovering': {
        const pk = this.keys.partition(k.topic, k.partition);
        let byId = this.recoveringByPartition.get(pk);
        if (value) {
          if (!byId) this.recoveringByPartition.set(pk, (byId = new Map()));
          byId.set(k.id, JSON.parse(value.toString('utf8')) as RecoveringEntry);
        } else if (byId) {
          byId.delete(k.id);
          if (byId.size === 0) this.recoveringByPartition.delete(pk);
        }
        return { kind: 'recovering', topic: k.topic, partition: k.partition, id: k.id };
      }
      case 'quota': {
        // Parsed as any quota is: a value no broker could have written is logged and skipped.
        if (value) {
          const { tenant, topic, ...limits } = JSON.parse(value.toString('utf8')) as Quota;
          if (tenant !== k.tenant || topic !== k.topic) throw new EdgeqError('INVALID_DATA', `quota for (${tenant}, ${topic}) under the key of (${k.tenant}, ${k.topic})`, { details: { key } });
          const quota = parseQuota(tenant, topic, limits);
          this.quotas.set(quotaKey(k.tenant, k.topic), quota);
          return { kind: 'quota', tenant: k.tenant, topic: k.topic, quota };
        }
        this.quotas.delete(quotaKey(k.tenant, k.topic));
        return { kind: 'quota', tenant: k.tenant, topic: k.topic, quota: null };
      }
      case 'producer-epoch': {
        const epoch = value ? (JSON.parse(value.toString('utf8')) as { epoch: number }).epoch : 0;
        return { kind: 'producer-epoch', id: k.id, epoch };
      }
      default:
        return null;
    }
  }
}
