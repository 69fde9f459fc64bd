/**
 * Keeps a MemoryArbiter's snapshot file up to date. Changes are coalesced: at most one write runs
 * and at most one more is queued, however many changes arrive meanwhile. `flushed()` resolves once
 * every change made before the call is on disk; the server waits on it before it acknowledges a
 * write or forwards a watch event, so nothing a client saw can be lost by a crash.
 */
import { EdgeqError, silentLogger, type Logger } from '../../src/core/index.ts';
import type { MemoryArbiter } from './memory-arbiter.ts';
import { writeSnapshotFile } from './snapshot.ts';

/**
 * History kept in the snapshot file: enough for watchers to resume across a restart that takes a
 * few seconds, small enough that rewriting the file on every change stays cheap (1 000 events of a
 * few hundred bytes is a few hundred KiB).
 */
export const PERSIST_HISTORY_EVENTS_MAX_DEFAULT = 1_000;

/** Options of a SnapshotPersister. */
export interface SnapshotPersisterOptions {
  file: string;
  historyEventsMax?: number;
  logger?: Logger;
}

/** Writes the arbiter's snapshot after changes; see the file comment. */
export class SnapshotPersister {
  private arbiter: MemoryArbiter | null = null;
  private changeSeq = 0;
  private savedSeq = 0;
  private saving = false;
  private failure: EdgeqError | null = null;
  private waiters: { seq: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  private readonly logger: Logger;

  constructor(private readonly options: SnapshotPersisterOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  /** Binds the arbiter whose state is saved (it is built with `onChange: () => persister.changed()`). */
  attach(arbiter: MemoryArbiter): void {
    this.arbiter = arbiter;
  }

  /** Records that the state changed and starts a write if none is running. */
  changed(): void {
    this.changeSeq++;
    if (!this.saving && this.arbiter) void this.saveLoop();
  }

  /** Resolves once every change made before this call is on disk; rejects if saving failed. */
  flushed(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.savedSeq >= this.changeSeq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq: this.changeSeq, resolve, reject }));
  }

  /** The error that stopped saving, if any: the server must not acknowledge writes after it. */
  failed(): EdgeqError | null {
    return this.failure;
  }

  private async saveLoop(): Promise<void> {
    this.saving = true;
    try {
      while (this.savedSeq < this.changeSeq && this.arbiter && !this.failure) {
        const seq = this.changeSeq;
        await writeSnapshotFile(this.options.file, this.arbiter.snapshot(this.options.historyEventsMax ?? PERSIST_HISTORY_EVENTS_MAX_DEFAULT));
        this.savedSeq = seq;
        this.waiters = this.waiters.filter((w) => (w.seq <= seq ? (w.resolve(), false) : true));
      }
    } catch (err) {
      this.failure = new EdgeqError('ARBITER_UNAVAILABLE', `arbiter cannot save its state: ${(err as Error).message}`, { cause: err });
      this.logger.error({ err, file: this.options.file }, 'arbiter snapshot write failed');
      for (const w of this.waiters.splice(0)) w.reject(this.failure);
    } finally {
      this.saving = false;
    }
  }
}
