/**
 * One partition this broker leads: its log, its producer state and its leader epoch. Produce and
 * fetch requests for the partition come through here.
 *
 * The high watermark is the offset below which consumers may read. On a single broker it is the
 * log end offset (every written batch is as replicated as it will get); the cell's replication
 * moves it with the in-sync replicas.
 */
import { EdgeqError } from '../core/index.ts';
import {
  compressionName,
  splitBatches,
  validateBatchHeader,
  type AppendResult,
  type PartitionLog,
  type ReadResult,
  type Storage,
} from '../log/index.ts';
import { ProducerState } from './producer-state.ts';
import type { TopicSettings } from './topic-config.ts';

/** Options of one produce to a partition. */
export interface PartitionProduceOptions {
  /** The epoch the producer believes in; -1 or undefined skips the check. */
  leaderEpoch?: number | null;
}

/** A partition led by this broker. */
export class Partition {
  constructor(
    readonly topic: string,
    readonly index: number,
    readonly log: PartitionLog,
    readonly producers: ProducerState,
    public leaderEpoch: number,
    public settings: TopicSettings,
  ) {
    log.setAppendGuard(producers);
  }

  get highWatermark(): number {
    return this.log.logEndOffset;
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  get logEndOffset(): number {
    return this.log.logEndOffset;
  }

  /** Throws FENCED_LEADER_EPOCH for an older epoch, LEADER_NOT_AVAILABLE for a newer one. */
  checkEpoch(epoch: number | null | undefined): void {
    if (epoch === undefined || epoch === null || epoch < 0 || epoch === this.leaderEpoch) return;
    if (epoch < this.leaderEpoch) {
      throw new EdgeqError('FENCED_LEADER_EPOCH', `${this.topic}-${this.index}: epoch ${epoch} is older than the leader's ${this.leaderEpoch}`, {
        details: { topic: this.topic, partition: this.index, epoch, leaderEpoch: this.leaderEpoch },
      });
    }
    throw new EdgeqError('LEADER_NOT_AVAILABLE', `${this.topic}-${this.index}: epoch ${epoch} is newer than this broker knows (${this.leaderEpoch})`, {
      details: { topic: this.topic, partition: this.index, epoch, leaderEpoch: this.leaderEpoch },
    });
  }

  /**
   * Appends the one batch a producer sent for this partition. The checks here are the topic's
   * policy; the log checks the batch itself (CRC, lengths, size) and the producer state checks
   * sequences, both without writing anything on failure.
   */
  async produce(records: Uint8Array, options: PartitionProduceOptions = {}): Promise<AppendResult> {
    this.checkEpoch(options.leaderEpoch);
    const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength);
    const batches = splitBatches(buf);
    const covered = batches.reduce((n, b) => n + b.length, 0);
    if (batches.length === 0 || covered !== buf.length) {
      throw new EdgeqError('CORRUPT_BATCH', `${this.topic}-${this.index}: the records field is not one whole batch (${buf.length} bytes)`, {
        details: { topic: this.topic, partition: this.index },
      });
    }
    if (batches.length > 1) {
      throw new EdgeqError('INVALID_REQUEST', `${this.topic}-${this.index}: send one batch per partition per request, got ${batches.length}`);
    }
    const batch = batches[0]!;
    const header = validateBatchHeader(batch, this.settings.log);
    const codec = compressionName(header.codec);
    if (codec === undefined || !this.settings.compressionAllowed.includes(codec)) {
      throw new EdgeqError('UNSUPPORTED_COMPRESSION', `${this.topic} does not allow ${codec ?? `codec ${header.codec}`} batches`, {
        details: { topic: this.topic, codec: codec ?? header.codec, allowed: this.settings.compressionAllowed },
      });
    }
    return this.log.append(batch, { leaderEpoch: this.leaderEpoch });
  }

  /** Reads stored batches from `offset`, below the high watermark. */
  async read(offset: number, maxBytes: number, leaderEpoch?: number | null): Promise<ReadResult> {
    this.checkEpoch(leaderEpoch);
    return this.log.read(offset, maxBytes, { maxOffset: this.highWatermark });
  }

  /** Writes the producer-state snapshot (at close, and now and then to bound rebuild time). */
  snapshotProducers(storage: Storage): Promise<void> {
    return this.producers.snapshot(storage, this.log.dir, this.log.logEndOffset);
  }
}
