/**
 * A storage that can lose power: a test facility (unit tests, the crash tests, and later the
 * fault campaign). It wraps another `Storage` (the in-memory one or the real file system) and
 * keeps, for each file changed since its last fdatasync, an undo journal (`power-loss-journal.ts`).
 * A simulated power loss then discards every write after each file's last fdatasync, can tear the
 * first of them, and makes files whose folder was never synced since they were created vanish.
 *
 * The model, which is what POSIX promises and no more:
 * - `writev` and `truncate` are durable only after a `datasync` of that file;
 * - a created file exists after a power loss only if its folder was synced (`syncDir`) after it
 *   was created; until then even its synced bytes go with it;
 * - `writeFileAtomic` is durable once it returns (it syncs the file and the folder itself);
 * - `unlink`, `rename`, `mkdir` and `rmdir` are durable at once (the model does not undo them):
 *   rename or unlink a file only while no handle to it is open.
 *
 * Two ways to use it:
 * - in one process: `await storage.crash({ tear, seed })` applies the power loss and returns the
 *   storage of the next boot; this one (and every handle it gave out) fails with EIO from then on,
 *   as the dead machine's processes would.
 * - across processes: with `root` (the data folder) the journals are files under
 *   `<root>/.power-loss/`; a process (a broker, a test child) writes through it and is SIGKILLed,
 *   then the test calls `applyPowerLoss(root)`. `storageFromEnv` selects it for a process.
 *
 * `bootId()` changes at every power loss, so a log can tell a power loss from a SIGKILL.
 */
import { dirname } from 'node:path';
import { EdgeqError } from '../core/errors.ts';
import { DiskJournalStore, MemoryJournalStore, POWER_LOSS_DIR, type JournalHeader, type JournalRecord, type JournalStore } from './power-loss-journal.ts';
import { rewindToSynced, type PowerLossOptions, type PowerLossReport } from './power-loss-rewind.ts';
import type { Storage, StorageFile } from './storage.ts';

/** Options of a power-loss storage. */
export interface PowerLossStorageOptions {
  /**
   * Keep the journals on the wrapped storage under `<root>/.power-loss/`, so another process can
   * apply the power loss after this one is killed. Every file written must be under `root`.
   * Without it, the journals are in memory.
   */
  root?: string;
  /**
   * Bytes the journals may hold at once over every file (undo and first-write records). 256 MiB
   * covers a first write of a full write group (8 MiB) in each of 32 logs; undo records only
   * appear when synced bytes are overwritten or truncated, which the log does rarely. Past it an
   * overwrite fails (so no loss is ever silently unsimulated) and a first write is not kept for
   * tearing.
   */
  journalBytesMax?: number;
}

const JOURNAL_BYTES_MAX_DEFAULT = 256 * 1024 * 1024;

interface Tracked {
  header: JournalHeader;
  /** The first write since the sync is in the journal. */
  firstWritten: boolean;
  /** Record bytes this file's journal holds (for `journalBytesMax`). */
  recordBytes: number;
  /** Written or truncated since the sync (or unknown: a journal an earlier process left). */
  dirty: boolean;
}

function powerLost(path: string): NodeJS.ErrnoException {
  const err = new Error(`EIO: the machine lost power (${path})`) as NodeJS.ErrnoException;
  err.code = 'EIO';
  return err;
}

export class PowerLossStorage implements Storage {
  private readonly store: JournalStore;
  private readonly journalBytesMax: number;
  private readonly tracked = new Map<string, Tracked>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly inflight = new Set<Promise<unknown>>();
  private loaded: Promise<void> | null = null;
  private recordBytes = 0;
  private dead = false;
  private boot: Promise<string> | null = null;

  /**
   * @param inner the storage the data is on.
   * @param lastPowerLoss what the power loss before this boot did (set by `crash`).
   */
  constructor(
    readonly inner: Storage,
    private readonly options: PowerLossStorageOptions = {},
    store?: JournalStore,
    readonly lastPowerLoss: PowerLossReport | null = null,
  ) {
    this.store = store ?? (options.root !== undefined ? new DiskJournalStore(inner, options.root) : new MemoryJournalStore());
    this.journalBytesMax = options.journalBytesMax ?? JOURNAL_BYTES_MAX_DEFAULT;
    if (!Number.isSafeInteger(this.journalBytesMax) || this.journalBytesMax < 0) {
      throw new EdgeqError('INVALID_ARGUMENT', `journalBytesMax must be a non-negative integer, got ${this.journalBytesMax}`);
    }
  }

  /**
   * Cuts the power: waits for the operations under way, puts every file back to its last synced
   * state (tearing first writes with `tear`), and returns the storage of the next boot. This one
   * and its handles fail with EIO from now on.
   */
  async crash(options: PowerLossOptions = {}): Promise<PowerLossStorage> {
    if (this.dead) throw powerLost('crash');
    this.dead = true;
    await Promise.allSettled([...this.inflight]);
    await this.ready();
    const report = await rewindToSynced(this.inner, await this.store.loadAll(), options);
    await this.store.removeAll();
    await this.store.newBoot();
    await this.store.reset();
    return new PowerLossStorage(this.inner, this.options, this.store, report);
  }

  // ---------------------------------------------------------------------------------------------
  // Storage

  open(path: string, options: { create?: boolean } = {}): Promise<StorageFile> {
    return this.op(path, () =>
      this.locked([path], async () => {
        if (!options.create || this.tracked.has(path) || (await this.inner.exists(path))) {
          return new PowerLossFile(this, path, await this.inner.open(path, options));
        }
        // A new file: its journal first, so that whenever a kill comes, either there is no file
        // or its journal says the file is not durable yet.
        await this.startJournal(path, { generation: 0, syncedLength: 0, entryDurable: false });
        try {
          return new PowerLossFile(this, path, await this.inner.open(path, options));
        } catch (err) {
          await this.untrack(path);
          throw err;
        }
      }),
    );
  }

  readFile(path: string): Promise<Buffer> {
    return this.op(path, () => this.inner.readFile(path));
  }

  writeFileAtomic(path: string, data: Buffer): Promise<void> {
    return this.op(path, () =>
      this.locked([path], async () => {
        // The journal goes first: the file is durable whole once this returns, and a journal left
        // over a kill in between would rewind the new contents with the old file's records.
        await this.untrack(path);
        await this.inner.writeFileAtomic(path, data);
      }),
    );
  }

  async readdir(dir: string): Promise<string[]> {
    const names = await this.op(dir, () => this.inner.readdir(dir));
    return this.options.root !== undefined && dir === this.options.root ? names.filter((n) => n !== POWER_LOSS_DIR) : names;
  }

  mkdir(dir: string): Promise<void> {
    return this.op(dir, () => this.inner.mkdir(dir));
  }

  unlink(path: string): Promise<void> {
    return this.op(path, () =>
      this.locked([path], async () => {
        await this.inner.unlink(path);
        await this.untrack(path);
      }),
    );
  }

  rename(from: string, to: string): Promise<void> {
    return this.op(from, () =>
      this.locked([from, to], async () => {
        const moving = this.tracked.get(from);
        const journal = moving ? await this.store.load(from) : null;
        await this.untrack(to);
        await this.inner.rename(from, to);
        if (moving && journal) {
          // The journal follows the file: the same state, under the new name.
          await this.store.writeHeader(to, moving.header);
          for (const r of journal.records) await this.store.appendRecord(to, moving.header.generation, r);
          this.tracked.set(to, moving);
          this.tracked.delete(from);
          await this.store.remove(from);
        } else if (moving) {
          // Its journal was never written (a kill before the header): nothing to carry over.
          await this.untrack(from);
        }
      }),
    );
  }

  exists(path: string): Promise<boolean> {
    return this.op(path, () => this.inner.exists(path));
  }

  rmdir(dir: string): Promise<void> {
    return this.op(dir, async () => {
      await this.inner.rmdir(dir);
      const root = this.options.root;
      if (root !== undefined && (root === dir || root.startsWith(`${dir}/`))) {
        // The journals went with the folder.
        this.tracked.clear();
        this.recordBytes = 0;
        await this.store.reset();
        return;
      }
      for (const path of [...this.tracked.keys()]) if (path.startsWith(`${dir}/`)) await this.untrack(path);
    });
  }

  syncDir(dir: string): Promise<void> {
    return this.op(dir, async () => {
      await this.inner.syncDir(dir);
      for (const [path, t] of [...this.tracked]) {
        if (t.header.entryDurable || dirname(path) !== dir) continue;
        await this.locked([path], async () => {
          const now = this.tracked.get(path);
          if (!now || now.header.entryDurable) return;
          // Synced bytes and now a durable entry: durable as it stands, nothing left to undo.
          if (!now.dirty) return this.untrack(path);
          now.header = { ...now.header, entryDurable: true };
          await this.store.writeHeader(path, now.header);
        });
      }
    });
  }

  /** The wrapped storage's boot and the simulated one: either changing means a new boot. */
  bootId(): Promise<string> {
    this.boot ??= this.op('bootId', async () => `${(await this.inner.bootId()) ?? 'unknown'}/${await this.store.bootId()}`);
    return this.boot;
  }

  // ---------------------------------------------------------------------------------------------
  // File operations (called by PowerLossFile, under the file's lock)

  /** @internal */
  fileWritev(path: string, file: StorageFile, buffers: readonly Buffer[], position: number): Promise<number> {
    return this.op(path, () =>
      this.locked([path], async () => {
        const t = await this.track(path, file);
        const total = buffers.reduce((n, b) => n + b.length, 0);
        if (position < t.header.syncedLength && total > 0) {
          await this.saveSynced(path, t, file, position, Math.min(position + total, t.header.syncedLength));
        }
        t.dirty = true;
        const written = await file.writev(buffers, position);
        if (!t.firstWritten && written > 0) await this.keepFirstWrite(path, t, buffers, position, written);
        return written;
      }),
    );
  }

  /** @internal */
  fileTruncate(path: string, file: StorageFile, length: number): Promise<void> {
    return this.op(path, () =>
      this.locked([path], async () => {
        const t = await this.track(path, file);
        if (length < t.header.syncedLength) {
          const end = Math.min(await file.size(), t.header.syncedLength);
          if (end > length) await this.saveSynced(path, t, file, length, end);
        }
        t.dirty = true;
        await file.truncate(length);
      }),
    );
  }

  /** @internal */
  fileDatasync(path: string, file: StorageFile): Promise<void> {
    return this.op(path, () =>
      this.locked([path], async () => {
        await file.datasync();
        const t = this.tracked.get(path);
        if (!t) return;
        // Durable entry and durable bytes: the file is durable as it stands, nothing to undo.
        if (t.header.entryDurable) {
          await this.untrack(path);
          return;
        }
        t.header = { generation: t.header.generation + 1, syncedLength: await file.size(), entryDurable: false };
        await this.store.writeHeader(path, t.header);
        this.recordBytes -= t.recordBytes;
        t.recordBytes = 0;
        t.firstWritten = false;
        t.dirty = false;
      }),
    );
  }

  /** @internal a handle's read or size: refused once the power is gone. */
  fileRead<T>(path: string, fn: () => Promise<T>): Promise<T> {
    return this.op(path, fn);
  }

  // ---------------------------------------------------------------------------------------------

  /** Runs `fn` unless the power is gone, counting it as under way (a crash waits for it). */
  private op<T>(path: string, fn: () => Promise<T>): Promise<T> {
    if (this.dead) return Promise.reject(powerLost(path));
    const p = this.ready().then(fn);
    this.inflight.add(p);
    const done = (): void => void this.inflight.delete(p);
    p.then(done, done);
    return p;
  }

  /** Loads the journals an earlier process left (a SIGKILL without a power loss), once. */
  private ready(): Promise<void> {
    this.loaded ??= this.store.loadAll().then((all) => {
      for (const [path, j] of all) {
        const recordBytes = j.records.reduce((n, r) => n + r.bytes.length, 0);
        this.tracked.set(path, { header: j, firstWritten: j.records.some((r) => r.kind === 'first'), recordBytes, dirty: true });
        this.recordBytes += recordBytes;
      }
    });
    return this.loaded;
  }

  /** Runs `fn` holding the locks of `paths` (taken in path order, so two callers never deadlock). */
  private async locked<T>(paths: string[], fn: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    for (const path of [...new Set(paths)].sort()) {
      const prev = this.locks.get(path) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((r) => (release = r));
      const tail = prev.then(() => mine);
      this.locks.set(path, tail);
      await prev;
      releases.push(() => {
        release();
        if (this.locks.get(path) === tail) this.locks.delete(path);
      });
    }
    try {
      return await fn();
    } finally {
      for (const r of releases.reverse()) r();
    }
  }

  /** The journal of a file about to change; a file without one is durable as it stands. */
  private async track(path: string, file: StorageFile): Promise<Tracked> {
    const t = this.tracked.get(path);
    if (t) return t;
    return this.startJournal(path, { generation: 0, syncedLength: await file.size(), entryDurable: true });
  }

  private async startJournal(path: string, header: JournalHeader): Promise<Tracked> {
    await this.store.writeHeader(path, header);
    const t: Tracked = { header, firstWritten: false, recordBytes: 0, dirty: false };
    this.tracked.set(path, t);
    return t;
  }

  private async untrack(path: string): Promise<void> {
    const t = this.tracked.get(path);
    if (!t) return;
    this.tracked.delete(path);
    this.recordBytes -= t.recordBytes;
    await this.store.remove(path);
  }

  /** Journals the synced bytes [start, end) before they are overwritten or cut. */
  private async saveSynced(path: string, t: Tracked, file: StorageFile, start: number, end: number): Promise<void> {
    const old = Buffer.alloc(end - start);
    const n = await file.read(old, 0, old.length, start);
    if (n === 0) return;
    if (this.recordBytes + n > this.journalBytesMax) {
      throw new EdgeqError('STORAGE_ERROR', `power-loss journals would pass journalBytesMax (${this.journalBytesMax} bytes) overwriting ${path}`, {
        retriable: false,
        details: { path, journalBytesMax: this.journalBytesMax },
      });
    }
    await this.addRecord(path, t, { kind: 'undo', position: start, bytes: old.subarray(0, n) });
  }

  /** Journals the first write since the sync, which a torn power loss keeps a prefix of. */
  private async keepFirstWrite(path: string, t: Tracked, buffers: readonly Buffer[], position: number, written: number): Promise<void> {
    t.firstWritten = true;
    if (this.recordBytes + written > this.journalBytesMax) return;
    const bytes = Buffer.concat(buffers as Buffer[]).subarray(0, written);
    await this.addRecord(path, t, { kind: 'first', position, bytes });
  }

  private async addRecord(path: string, t: Tracked, record: JournalRecord): Promise<void> {
    await this.store.appendRecord(path, t.header.generation, record);
    t.recordBytes += record.bytes.length;
    this.recordBytes += record.bytes.length;
  }
}

/** A handle that journals before it changes the file, and dies with the power. */
class PowerLossFile implements StorageFile {
  constructor(
    private readonly storage: PowerLossStorage,
    readonly path: string,
    private readonly file: StorageFile,
  ) {}

  read(buf: Buffer, offset: number, length: number, position: number): Promise<number> {
    return this.storage.fileRead(this.path, () => this.file.read(buf, offset, length, position));
  }

  writev(buffers: readonly Buffer[], position: number): Promise<number> {
    return this.storage.fileWritev(this.path, this.file, buffers, position);
  }

  datasync(): Promise<void> {
    return this.storage.fileDatasync(this.path, this.file);
  }

  truncate(length: number): Promise<void> {
    return this.storage.fileTruncate(this.path, this.file, length);
  }

  size(): Promise<number> {
    return this.storage.fileRead(this.path, () => this.file.size());
  }

  /** Always closes the underlying handle, even after a power loss (no descriptor leaks). */
  close(): Promise<void> {
    return this.file.close();
  }
}
