/**
 * A bounded pool of open files shared by every log of a broker. Segments borrow a handle for one
 * operation; idle handles beyond `openFilesMax` are closed least-recently-used first, so a broker
 * with thousands of segments keeps a bounded number of descriptors. A handle in use is never
 * closed, so the bound can be exceeded only while more operations than `openFilesMax` run at once.
 */
import type { Storage, StorageFile } from './storage.ts';

interface Entry {
  file: Promise<StorageFile>;
  refs: number;
  retired: boolean;
  onIdle: (() => void) | null;
}

/** A borrowed handle; call `release()` exactly once. */
export interface FileLease {
  file: StorageFile;
  release(): void;
}

/** Counters for tests and metrics. */
export interface FilePoolStats {
  open: number;
  peak: number;
  opened: number;
  evicted: number;
}

export class FilePool {
  /** Insertion order is recency order: a use moves the entry to the end. */
  private readonly entries = new Map<string, Entry>();
  private readonly counters: FilePoolStats = { open: 0, peak: 0, opened: 0, evicted: 0 };

  constructor(
    private readonly storage: Storage,
    readonly openFilesMax: number,
  ) {
    if (!Number.isInteger(openFilesMax) || openFilesMax < 1) throw new RangeError('openFilesMax must be >= 1');
  }

  /** Borrows the handle of `path`, opening (and creating, when asked) the file if needed. */
  async acquire(path: string, options: { create?: boolean } = {}): Promise<FileLease> {
    let entry = this.entries.get(path);
    if (entry && entry.retired) {
      // A retired handle is closing; wait for it and open afresh.
      await new Promise<void>((resolve) => setImmediate(resolve));
      return this.acquire(path, options);
    }
    if (entry) {
      this.entries.delete(path);
      this.entries.set(path, entry);
    } else {
      entry = { file: this.storage.open(path, options), refs: 0, retired: false, onIdle: null };
      this.entries.set(path, entry);
      this.counters.open++;
      this.counters.opened++;
      this.counters.peak = Math.max(this.counters.peak, this.counters.open);
      entry.file.catch(() => {
        if (this.entries.get(path) === entry) {
          this.entries.delete(path);
          this.counters.open--;
        }
      });
    }
    entry.refs++;
    let file: StorageFile;
    try {
      file = await entry.file;
    } catch (err) {
      entry.refs--;
      throw err;
    }
    this.evictIdle();
    let released = false;
    const e = entry;
    return {
      file,
      release: () => {
        if (released) return;
        released = true;
        e.refs--;
        if (e.refs === 0) {
          if (e.onIdle) e.onIdle();
          else this.evictIdle();
        }
      },
    };
  }

  /** Runs `fn` with a borrowed handle and returns its result. */
  async with<T>(path: string, fn: (file: StorageFile) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
    const lease = await this.acquire(path, options);
    try {
      return await fn(lease.file);
    } finally {
      lease.release();
    }
  }

  /** Closes the handle of `path` once nobody uses it (before deleting or renaming the file). */
  async retire(path: string): Promise<void> {
    const entry = this.entries.get(path);
    if (!entry || entry.retired) return;
    entry.retired = true;
    if (entry.refs > 0) await new Promise<void>((resolve) => (entry.onIdle = resolve));
    this.entries.delete(path);
    this.counters.open--;
    await entry.file.then((f) => f.close()).catch(() => undefined);
  }

  /** Closes every idle handle under `prefix` (a log being closed). */
  async retirePrefix(prefix: string): Promise<void> {
    await Promise.all([...this.entries.keys()].filter((p) => p.startsWith(prefix)).map((p) => this.retire(p)));
  }

  stats(): FilePoolStats {
    return { ...this.counters };
  }

  private evictIdle(): void {
    if (this.counters.open <= this.openFilesMax) return;
    for (const [path, entry] of this.entries) {
      if (this.counters.open <= this.openFilesMax) break;
      if (entry.refs > 0 || entry.retired) continue;
      this.entries.delete(path);
      this.counters.open--;
      this.counters.evicted++;
      void entry.file.then((f) => f.close()).catch(() => undefined);
    }
  }
}
