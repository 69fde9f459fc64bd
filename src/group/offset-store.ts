/**
 * Committed consumer-group offsets, kept durably in an internal log (partition 0 of
 * `__consumer_offsets`) and served from memory.
 *
 * Every commit appends ONE batch, so a commit is all-or-nothing, and resolves only once the log
 * says the batch is durable (under the log's flush policy). The in-memory table changes only
 * after that, in commit order, so a reader never sees an offset the log could still lose.
 *
 * Record format (JSON, UTF-8; protobuf has no message for these and JSON keeps the log readable
 * with `edgeq log dump`):
 *
 *   key    JSON array  [1, groupId, topic, partition]   1 = key schema version. A JSON array of
 *                                                        escaped strings is unambiguous whatever
 *                                                        characters ids hold.
 *   value  JSON object {"offset": n, "metadata": s, "commitTimestampMs": t, "topicId": id}
 *          or null     tombstone: the entry was deleted (its group's offsets were deleted)
 *
 * `topicId` is the id of the topic the offset was committed for (KIP-516); a topic created again
 * under the same name has another, and its readers never see the old one's offsets. Records
 * written before the field existed have none and match any id.
 *
 * On load the whole log is replayed; the last record of a key wins. The log is never compacted
 * (the segment log has no compaction yet), so replay time grows with the number of commits ever
 * made that retention kept: the offsets log should keep everything (retentionMs = -1).
 */
import { assert, EdgeqError, silentLogger, systemClock, type Clock, type Logger } from '../core/index.ts';
import { buildBatch, decodeBatches, type LogRecord, type PartitionLog, type RecordInput } from '../log/index.ts';

/**
 * What the store needs of its log: a PartitionLog, or in a cell the leader's replica of
 * `__consumer_offsets`, whose appends answer only once the in-sync replicas hold them.
 */
export type OffsetLog = Pick<PartitionLog, 'read' | 'append' | 'logStartOffset' | 'logEndOffset'>;

/** Version tag in the first element of every key. */
const KEY_VERSION = 1;

/** One committed offset. */
export interface CommittedOffset {
  offset: number;
  metadata: string;
  commitTimestampMs: number;
  /** The id of the topic incarnation the offset belongs to; absent on records from before ids. */
  topicId?: string;
}

/** A committed offset with the partition it belongs to. */
export interface PartitionOffset extends CommittedOffset {
  topic: string;
  partition: number;
}

/** One partition's offset to commit. */
export interface OffsetCommitEntry {
  topic: string;
  partition: number;
  offset: number;
  metadata?: string;
  /** The id of the topic now (the coordinator stamps it). */
  topicId?: string;
}

/** Bounds and surroundings of an offset store. */
export interface OffsetStoreOptions {
  /**
   * Most (group, topic, partition) entries held. Each costs ~200 B of heap plus its metadata, so
   * 1,000,000 entries ≈ 200 MB worst case without metadata; commits that would add entries beyond
   * are refused with QUEUE_FULL.
   */
  committedOffsetsMax?: number;
  /** Bytes asked of the log per read while replaying. */
  replayReadBytesMax?: number;
  /**
   * Tombstones per batch when deleting a group: a key is ≤ ~530 B (group id 255 B, topic 255 B,
   * JSON framing), so 1000 keys ≈ 530 KB, well under the log's default 4 MiB messageBytesMax.
   */
  tombstonesPerBatchMax?: number;
  clock?: Clock;
  logger?: Logger;
}

export const OFFSET_STORE_DEFAULTS = Object.freeze({
  committedOffsetsMax: 1_000_000,
  replayReadBytesMax: 1024 * 1024,
  tombstonesPerBatchMax: 1000,
});

/** Encodes the record key of one (group, topic, partition). */
export function offsetKey(groupId: string, topic: string, partition: number): Buffer {
  return Buffer.from(JSON.stringify([KEY_VERSION, groupId, topic, partition]), 'utf8');
}

/** Encodes the record value of one committed offset. */
export function offsetValue(v: CommittedOffset): Buffer {
  return Buffer.from(
    JSON.stringify({ offset: v.offset, metadata: v.metadata, commitTimestampMs: v.commitTimestampMs, ...(v.topicId ? { topicId: v.topicId } : {}) }),
    'utf8',
  );
}

type Decoded = { kind: 'entry'; groupId: string; topic: string; partition: number; value: CommittedOffset | null } | { kind: 'unknown' };

/** Decodes one record of the offsets log; CORRUPT_LOG for a record this version should read but cannot. */
function decodeRecord(r: LogRecord): Decoded {
  const fail = (why: string): never => {
    throw new EdgeqError('CORRUPT_LOG', `offsets log record at ${r.offset} ${why}`, { details: { offset: r.offset } });
  };
  if (r.key === null) return fail('has no key');
  let key: unknown;
  try {
    key = JSON.parse(r.key.toString('utf8'));
  } catch (err) {
    return fail(`has a key that is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(key) || typeof key[0] !== 'number') return fail('has a key without a version');
  // A newer broker may have written kinds this one does not know: skip them rather than refuse to start.
  if (key[0] !== KEY_VERSION) return { kind: 'unknown' };
  const [, groupId, topic, partition] = key as unknown[];
  if (typeof groupId !== 'string' || typeof topic !== 'string' || !Number.isSafeInteger(partition)) return fail('has a malformed key');
  if (r.value === null) return { kind: 'entry', groupId, topic, partition: partition as number, value: null };
  let v: unknown;
  try {
    v = JSON.parse(r.value.toString('utf8'));
  } catch (err) {
    return fail(`has a value that is not JSON: ${(err as Error).message}`);
  }
  const o = v as Partial<CommittedOffset> | null;
  if (
    o === null ||
    typeof o !== 'object' ||
    !Number.isSafeInteger(o.offset) ||
    typeof o.metadata !== 'string' ||
    !Number.isSafeInteger(o.commitTimestampMs) ||
    (o.topicId !== undefined && typeof o.topicId !== 'string')
  ) {
    return fail('has a malformed value');
  }
  return {
    kind: 'entry',
    groupId,
    topic,
    partition: partition as number,
    value: { offset: o.offset!, metadata: o.metadata, commitTimestampMs: o.commitTimestampMs!, ...(o.topicId ? { topicId: o.topicId } : {}) },
  };
}

/** Committed offsets of every group this coordinator owns, durable in an internal log. */
export class OffsetStore {
  /** groupId → topic → partition → offset. */
  private readonly groups = new Map<string, Map<string, Map<number, CommittedOffset>>>();
  private entries = 0;
  /** New entries promised to commits still in flight, counted against the bound. */
  private reserved = 0;
  /** Appends are issued in commit order: each waits for the previous one to be *issued*. */
  private issueTail: Promise<void> = Promise.resolve();
  /** Results are applied in commit order: each waits for the previous one to be applied. */
  private applyTail: Promise<void> = Promise.resolve();
  private readonly committedOffsetsMax: number;
  private readonly tombstonesPerBatchMax: number;
  private readonly clock: Clock;
  private readonly logger: Logger;

  private constructor(
    private readonly log: OffsetLog,
    options: OffsetStoreOptions,
  ) {
    this.committedOffsetsMax = options.committedOffsetsMax ?? OFFSET_STORE_DEFAULTS.committedOffsetsMax;
    this.tombstonesPerBatchMax = options.tombstonesPerBatchMax ?? OFFSET_STORE_DEFAULTS.tombstonesPerBatchMax;
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'offset-store' });
    for (const key of ['committedOffsetsMax', 'tombstonesPerBatchMax'] as const) {
      const v = key === 'committedOffsetsMax' ? this.committedOffsetsMax : this.tombstonesPerBatchMax;
      if (!Number.isSafeInteger(v) || v < 1) {
        throw new EdgeqError('INVALID_CONFIG', `group.${key} must be a positive integer, got ${v}`, { details: { key: `group.${key}` } });
      }
    }
  }

  /**
   * Builds the table by replaying `log` (already open; the store does not own or close it).
   * Throws CORRUPT_LOG when a record cannot be read.
   */
  static async load(log: OffsetLog, options: OffsetStoreOptions = {}): Promise<OffsetStore> {
    const store = new OffsetStore(log, options);
    const readBytes = options.replayReadBytesMax ?? OFFSET_STORE_DEFAULTS.replayReadBytesMax;
    const end = log.logEndOffset;
    let offset = log.logStartOffset;
    let records = 0;
    while (offset < end) {
      const r = await log.read(offset, readBytes);
      // A read below the end returns at least one whole batch; anything else would loop forever.
      if (r.nextOffset <= offset) {
        throw new EdgeqError('CORRUPT_LOG', `offsets log read at ${offset} made no progress`, { details: { offset } });
      }
      for (const rec of await decodeBatches(r.bytes, offset)) {
        const d = decodeRecord(rec);
        if (d.kind === 'entry') store.put(d.groupId, d.topic, d.partition, d.value);
        records++;
      }
      offset = r.nextOffset;
    }
    if (store.entries > store.committedOffsetsMax) {
      // Loaded anyway (refusing to start would lose every group); new entries are refused.
      store.logger.warn({ entries: store.entries, committedOffsetsMax: store.committedOffsetsMax }, 'offsets log holds more entries than the bound');
    }
    store.logger.info({ records, entries: store.entries, groups: store.groups.size }, 'offsets loaded');
    return store;
  }

  /** Number of (group, topic, partition) entries held. */
  get size(): number {
    return this.entries;
  }

  /** The committed offset of one partition, if any. */
  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.groups.get(groupId)?.get(topic)?.get(partition);
  }

  /** Every committed offset of a group, sorted by topic then partition. */
  groupOffsets(groupId: string): PartitionOffset[] {
    const byTopic = this.groups.get(groupId);
    if (!byTopic) return [];
    const out: PartitionOffset[] = [];
    for (const topic of [...byTopic.keys()].sort()) {
      const parts = byTopic.get(topic)!;
      for (const partition of [...parts.keys()].sort((a, b) => a - b)) out.push({ topic, partition, ...parts.get(partition)! });
    }
    return out;
  }

  /** True when the group has at least one committed offset. */
  hasGroup(groupId: string): boolean {
    return this.groups.has(groupId);
  }

  /** Ids of the groups with committed offsets. */
  groupIds(): string[] {
    return [...this.groups.keys()];
  }

  /**
   * Durably commits `entries` for a group as one batch; resolves once the log has them and the
   * table shows them. QUEUE_FULL when the entries would pass `committedOffsetsMax`; the log's
   * errors (QUEUE_FULL, MESSAGE_TOO_LARGE, STORAGE_*, LOG_CLOSED) otherwise. On failure nothing
   * changes.
   */
  commit(groupId: string, entries: readonly OffsetCommitEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    const commitTimestampMs = this.clock.nowMs();
    let added = 0;
    const seen = new Set<string>();
    const records: RecordInput[] = [];
    const values: { topic: string; partition: number; value: CommittedOffset }[] = [];
    for (const e of entries) {
      if (!Number.isSafeInteger(e.offset) || e.offset < 0 || !Number.isSafeInteger(e.partition) || e.partition < 0) {
        return Promise.reject(
          new EdgeqError('INVALID_ARGUMENT', `bad offset ${e.offset} for ${e.topic}/${e.partition}`, { details: { topic: e.topic, partition: e.partition } }),
        );
      }
      const value: CommittedOffset = { offset: e.offset, metadata: e.metadata ?? '', commitTimestampMs, ...(e.topicId ? { topicId: e.topicId } : {}) };
      const k = JSON.stringify([e.topic, e.partition]);
      if (!seen.has(k) && this.get(groupId, e.topic, e.partition) === undefined) added++;
      seen.add(k);
      records.push({ key: offsetKey(groupId, e.topic, e.partition), value: offsetValue(value), timestamp: commitTimestampMs });
      values.push({ topic: e.topic, partition: e.partition, value });
    }
    if (added > 0 && this.entries + this.reserved + added > this.committedOffsetsMax) {
      return Promise.reject(
        new EdgeqError('QUEUE_FULL', `committed offsets table is full (${this.committedOffsetsMax} entries)`, {
          details: { committedOffsetsMax: this.committedOffsetsMax, groupId },
        }),
      );
    }
    this.reserved += added;
    return this.write(records, () => {
      for (const v of values) this.put(groupId, v.topic, v.partition, v.value);
    }).finally(() => {
      this.reserved -= added;
    });
  }

  /**
   * Deletes every committed offset of a group by appending tombstones; resolves with the number
   * of entries deleted once they are durable.
   */
  async deleteGroup(groupId: string): Promise<number> {
    const offsets = this.groupOffsets(groupId);
    for (let i = 0; i < offsets.length; i += this.tombstonesPerBatchMax) {
      const chunk = offsets.slice(i, i + this.tombstonesPerBatchMax);
      const records = chunk.map((o) => ({ key: offsetKey(groupId, o.topic, o.partition), value: null }));
      await this.write(records, () => {
        for (const o of chunk) this.put(groupId, o.topic, o.partition, null);
      });
    }
    return offsets.length;
  }

  /** Resolves once every commit issued so far has settled (for an orderly shutdown). */
  async idle(): Promise<void> {
    await this.applyTail;
  }

  /** Appends one batch of `records` in issue order and runs `apply` in the same order once durable. */
  private write(records: RecordInput[], apply: () => void): Promise<void> {
    const built = buildBatch(records, { nowMs: this.clock.nowMs() });
    // Wrapped in an object so the chain moves on as soon as append is *called*, not when it
    // resolves: appends queue in the log (and share its group commit) in commit order.
    const issued = this.issueTail.then(() => built).then((batch) => ({ appended: this.log.append(batch) }));
    this.issueTail = issued.then(
      () => undefined,
      () => undefined,
    );
    const done = this.applyTail.then(() => issued).then(async ({ appended }) => {
      await appended;
      apply();
    });
    this.applyTail = done.catch(() => undefined);
    return done;
  }

  private put(groupId: string, topic: string, partition: number, value: CommittedOffset | null): void {
    let byTopic = this.groups.get(groupId);
    if (value === null) {
      const parts = byTopic?.get(topic);
      if (!parts?.delete(partition)) return;
      this.entries--;
      if (parts.size === 0) byTopic!.delete(topic);
      if (byTopic!.size === 0) this.groups.delete(groupId);
      return;
    }
    if (!byTopic) {
      byTopic = new Map();
      this.groups.set(groupId, byTopic);
    }
    let parts = byTopic.get(topic);
    if (!parts) {
      parts = new Map();
      byTopic.set(topic, parts);
    }
    if (!parts.has(partition)) this.entries++;
    parts.set(partition, value);
    assert(this.entries >= 0, 'negative entry count');
  }
}
