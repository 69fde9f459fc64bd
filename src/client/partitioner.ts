/**
 * Choosing a partition for a record: keyed records hash with Kafka's murmur2 so they land where a
 * Java producer would put them; keyless records stick to one partition until the batch for it is
 * sent, then move on (Kafka's sticky partitioner, KIP-480), which fills batches instead of
 * spraying one-record batches over every partition.
 */
import { murmur2, toPositive } from './murmur2.ts';

/** What a partitioner decides from. */
export interface PartitionInput {
  topic: string;
  key: Buffer | null;
  partitionCount: number;
}

/** Picks partitions for records and hears when a batch was sent. */
export interface Partitioner {
  /** The partition in [0, partitionCount) for a record. */
  partition(input: PartitionInput): number;
  /** Tells the partitioner that the open batch of `topic`/`partition` was sent. */
  onBatchSent(topic: string, partition: number): void;
}

/** The partition of a key: `toPositive(murmur2(key)) % partitionCount`. */
export function partitionForKey(key: Uint8Array, partitionCount: number): number {
  return toPositive(murmur2(key)) % partitionCount;
}

/** Options of the default partitioner. */
export interface DefaultPartitionerOptions {
  /** Returns a number in [0, 1); injected so tests are repeatable. */
  random?: () => number;
}

/** Keyed: murmur2. Keyless: sticky until the batch is sent. */
export class DefaultPartitioner implements Partitioner {
  private readonly random: () => number;
  /** topic → partition keyless records currently go to. One entry per topic the producer uses. */
  private readonly sticky = new Map<string, number>();
  /** topic → the partition whose batch was just sent, so a fresh pick avoids it when it can. */
  private readonly lastSent = new Map<string, number>();

  constructor(options: DefaultPartitionerOptions = {}) {
    this.random = options.random ?? Math.random;
  }

  partition(input: PartitionInput): number {
    if (input.key !== null) return partitionForKey(input.key, input.partitionCount);
    const current = this.sticky.get(input.topic);
    // A topic can grow partitions; a sticky choice past the new count is still valid, but one past
    // a shrunk count (a recreated topic) is not.
    if (current !== undefined && current < input.partitionCount) return current;
    const left = this.lastSent.get(input.topic);
    let next: number;
    if (left === undefined || left >= input.partitionCount || input.partitionCount === 1) {
      next = Math.floor(this.random() * input.partitionCount);
    } else {
      // Pick among the other partitions: a draw in [0, count-1) that skips the one just left.
      next = Math.floor(this.random() * (input.partitionCount - 1));
      if (next >= left) next++;
    }
    this.sticky.set(input.topic, next);
    return next;
  }

  onBatchSent(topic: string, partition: number): void {
    const current = this.sticky.get(topic);
    if (current !== partition) return;
    // Forget the choice; the next keyless record picks afresh (the pick needs the partition
    // count, which the next `partition` call has).
    this.sticky.delete(topic);
    this.lastSent.set(topic, partition);
  }
}
