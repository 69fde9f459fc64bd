/**
 * What the checked workload records and what the checker reads (issue 16). One shape shared by
 * the workload (drill/workload/), the drain and the checker (drill/checker/), so each can be
 * built and tested alone, and a planted fault can be written as data.
 */

/** How one produced record ended, as its producer saw it. */
export type ProduceOutcome =
  /** acks=all answered with an offset: it must be in every region that should hold it. */
  | { kind: 'acked'; offset: number; atMs: number }
  /** A definite error (the request was refused before anything was written): it must be nowhere. */
  | { kind: 'failed'; code: string; atMs: number }
  /** No answer (timeout, connection lost): it may or may not be anywhere. */
  | { kind: 'indeterminate'; code: string; atMs: number };

/** One record the workload tried to write. Its value is the `id`, unique across the whole run. */
export interface ProducedRecord {
  /** Unique across the run, e.g. `eu-west/g/p0/000123`: region, topic kind, producer, sequence. */
  readonly id: string;
  /** The region whose gateway or cell it was written to (its origin). */
  readonly region: string;
  readonly topic: string;
  readonly partition: number;
  /** The producer's own sequence (increasing per producer): the order the checker expects per origin. */
  readonly producer: string;
  readonly seq: number;
  readonly sentAtMs: number;
  readonly outcome: ProduceOutcome;
}

/** Whether a topic is exchanged between regions (global) or stays in its region (local). */
export interface CheckedTopic {
  readonly name: string;
  readonly scope: 'global' | 'local';
  readonly partitions: number;
}

/** One record as read back from a region's partition (the drain reads each partition whole). */
export interface DrainedRecord {
  readonly offset: number;
  /** The record's value: a produced record's id, or anything else (then it is "unexpected"). */
  readonly value: string;
  /** For global topics, where the record was written and its offset there; absent on local topics. */
  readonly originRegion?: string;
  readonly originOffset?: number;
}

/** Every partition of every checked topic, as each region holds it after the heal. */
export interface Drain {
  /** region → topic → partition → records in offset order. */
  readonly regions: Record<string, Record<string, DrainedRecord[][]>>;
  /** region → topic → partition → high watermark when drained. */
  readonly highWatermarks: Record<string, Record<string, number[]>>;
}

/** One poll of a consumer during the run (for "offsets went backwards" and "empty below the HWM"). */
export interface PollObservation {
  readonly region: string;
  readonly topic: string;
  readonly partition: number;
  /** The offset the poll asked from. */
  readonly fromOffset: number;
  /** Offsets returned, in the order returned. */
  readonly offsets: readonly number[];
  /** The high watermark the answer reported. */
  readonly highWatermark: number;
  readonly atMs: number;
}

/** One replica's batches of a partition up to the high watermark (from the broker's log files). */
export interface ReplicaBatches {
  readonly region: string;
  readonly broker: string;
  readonly topic: string;
  readonly partition: number;
  /**
   * Batches in offset order: [baseOffset, lastOffset] and the CRC32C of the batch's bytes as stored;
   * `corrupt` when that does not match the checksum stored in the batch (the checker counts it divergent).
   */
  readonly batches: readonly { readonly baseOffset: number; readonly lastOffset: number; readonly crc: number; readonly corrupt?: boolean }[];
  readonly highWatermark: number;
}

/** What the checker found. `verdict` is pass only with 0 lost, 0 unexpected, 0 reordered, 0 divergent, 0 bad reads. */
export interface CheckResult {
  readonly acked: number;
  readonly lost: number;
  readonly unexpected: number;
  readonly duplicates: number;
  /** Duplicates of records whose request was indeterminate or retried (allowed; counted apart). */
  readonly duplicatesOfIndeterminate: number;
  readonly reordered: number;
  readonly indeterminate: { readonly total: number; readonly found: number };
  /** Failed (definite error) records that were found anyway: a lie about failure. */
  readonly failedFound: number;
  readonly offsetsBackwards: number;
  readonly emptyBelowHighWatermark: number;
  readonly divergentOffsets: number;
  /** Up to CHECK_EXAMPLES_MAX examples per finding, for the report. */
  readonly examples: Readonly<Record<string, readonly string[]>>;
  readonly verdict: 'pass' | 'fail';
}
