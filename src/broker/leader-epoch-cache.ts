/**
 * Where each leader epoch starts in a partition's log: the list of (epoch, start offset) pairs
 * that lets a replica find, after a leadership change, the point where its log and the new
 * leader's diverge (Kafka's KIP-101). The leader answers "where does epoch E end?" with the start
 * of the first epoch after E (or its log end when E is its latest); the asker truncates there.
 *
 * Persisted as `leader-epochs.json` beside the log on every change (changes are rare: one per
 * leadership change) and completed at open from the headers written after the last entry.
 */
import { join } from 'node:path';
import { readBatchHeader, splitBatches, type PartitionLog, type Storage } from '../log/index.ts';

export const LEADER_EPOCHS_FILE = 'leader-epochs.json';
/** Entries kept; older ones are dropped first (they fall below the log start anyway). */
const ENTRIES_MAX = 10_000;
const REBUILD_READ_BYTES = 4 * 1024 * 1024;

/** One epoch and the first offset written in it. */
export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

/** The epoch history of one partition log. */
export class LeaderEpochCache {
  private entries: EpochEntry[] = [];
  private dirty = false;

  constructor(
    private readonly storage: Storage,
    private readonly dir: string,
  ) {}

  /** The latest epoch in the log, or -1. */
  get latestEpoch(): number {
    return this.entries[this.entries.length - 1]?.epoch ?? -1;
  }

  list(): EpochEntry[] {
    return [...this.entries];
  }

  /** Records that `epoch` starts at `startOffset` (ignored unless newer than the latest). */
  assign(epoch: number, startOffset: number): void {
    if (epoch < 0) return;
    const last = this.entries[this.entries.length - 1];
    if (last && epoch <= last.epoch) return;
    this.entries.push({ epoch, startOffset });
    if (this.entries.length > ENTRIES_MAX) this.entries.shift();
    this.dirty = true;
  }

  /** Where `epoch` starts in this log, or undefined when the log holds no entry for it. */
  startOffsetOf(epoch: number): number | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i]!;
      if (e.epoch === epoch) return e.startOffset;
      if (e.epoch < epoch) return undefined;
    }
    return undefined;
  }

  /**
   * The end of `epoch` in this log: the largest epoch at or below it and the offset where it ends
   * (the next epoch's start, or `logEndOffset` for the latest). {-1, -1} when none is at or below.
   */
  endOffsetFor(epoch: number, logEndOffset: number): { epoch: number; endOffset: number } {
    let i = this.entries.length - 1;
    while (i >= 0 && this.entries[i]!.epoch > epoch) i--;
    if (i < 0) return { epoch: -1, endOffset: -1 };
    const next = this.entries[i + 1];
    return { epoch: this.entries[i]!.epoch, endOffset: next ? next.startOffset : logEndOffset };
  }

  /** Drops entries for offsets at or after `offset` (the log was truncated there). */
  truncateFrom(offset: number): void {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.startOffset < offset);
    if (this.entries.length !== before) this.dirty = true;
  }

  /** Forgets everything (the log was reset). */
  clear(): void {
    this.entries = [];
    this.dirty = true;
  }

  /** Writes the file if anything changed. */
  async save(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    await this.storage.writeFileAtomic(join(this.dir, LEADER_EPOCHS_FILE), Buffer.from(JSON.stringify(this.entries)));
  }

  /** Loads the file (dropping entries past the log end) and adds epochs from headers after it. */
  async rebuild(log: PartitionLog): Promise<void> {
    this.entries = [];
    const path = join(this.dir, LEADER_EPOCHS_FILE);
    if (await this.storage.exists(path)) {
      try {
        const parsed = JSON.parse((await this.storage.readFile(path)).toString('utf8')) as EpochEntry[];
        if (Array.isArray(parsed)) this.entries = parsed.filter((e) => Number.isSafeInteger(e.epoch) && Number.isSafeInteger(e.startOffset));
      } catch {
        this.entries = []; // the headers below rebuild it
      }
    }
    this.entries = this.entries.filter((e) => e.startOffset < log.logEndOffset);
    let from = Math.max(log.logStartOffset, this.entries[this.entries.length - 1]?.startOffset ?? log.logStartOffset);
    while (from < log.logEndOffset) {
      const r = await log.read(from, REBUILD_READ_BYTES);
      if (r.bytes.length === 0) break;
      for (const b of splitBatches(r.bytes)) {
        const h = readBatchHeader(b);
        this.assign(h.partitionLeaderEpoch, h.baseOffset);
      }
      from = r.nextOffset;
    }
    this.dirty = true;
    await this.save();
  }
}
