/**
 * The real file system, through node:fs/promises with positioned reads and writes.
 */
import { writevSync } from 'node:fs';
import { open, readFile, rename, unlink, readdir, mkdir, access, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Storage, StorageFile } from './storage.ts';

/** Largest write done synchronously on the event loop (see `writev`). */
const SYNC_WRITE_BYTES_MAX = 256 * 1024;
/** Linux's id of the current boot, a random UUID the kernel draws at every start. */
const BOOT_ID_PATH = '/proc/sys/kernel/random/boot_id';

/** The boot id, read once per process: it cannot change while the process lives. */
let bootIdOnce: Promise<string | null> | null = null;

class FsFile implements StorageFile {
  constructor(
    readonly path: string,
    private readonly fh: FileHandle,
  ) {}

  async read(buf: Buffer, offset: number, length: number, position: number): Promise<number> {
    const { bytesRead } = await this.fh.read(buf, offset, length, position);
    return bytesRead;
  }

  async writev(buffers: readonly Buffer[], position: number): Promise<number> {
    let written = 0;
    let pending = buffers.slice();
    const total = buffers.reduce((n, b) => n + b.length, 0);
    // Small writes go straight from the event loop: copying a few KiB into the page cache takes
    // microseconds, while a trip through libuv's thread pool costs two thread hand-offs, which on
    // a busy 2-core machine add milliseconds of scheduling delay to every acknowledgement. Large
    // groups keep the pool, so one big write never holds the loop for long.
    const sync = total <= SYNC_WRITE_BYTES_MAX;
    // pwritev may write short (signals, huge writes); loop until done or it writes nothing.
    for (;;) {
      const bytesWritten = sync
        ? writevSync(this.fh.fd, pending, position + written)
        : (await this.fh.writev(pending, position + written)).bytesWritten;
      written += bytesWritten;
      let skip = bytesWritten;
      while (pending.length > 0 && skip >= pending[0]!.length) {
        skip -= pending[0]!.length;
        pending.shift();
      }
      if (pending.length === 0 || bytesWritten === 0) return written;
      if (skip > 0) pending[0] = pending[0]!.subarray(skip);
    }
  }

  datasync(): Promise<void> {
    return this.fh.datasync();
  }

  truncate(length: number): Promise<void> {
    return this.fh.truncate(length);
  }

  async size(): Promise<number> {
    return (await this.fh.stat()).size;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/** Storage on the local file system. */
export class FsStorage implements Storage {
  async open(path: string, options: { create?: boolean } = {}): Promise<StorageFile> {
    try {
      return new FsFile(path, await open(path, 'r+'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !options.create) throw err;
      return new FsFile(path, await open(path, 'wx+'));
    }
  }

  readFile(path: string): Promise<Buffer> {
    return readFile(path);
  }

  async writeFileAtomic(path: string, data: Buffer): Promise<void> {
    const tmp = `${path}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    await this.syncDir(dirname(path));
  }

  readdir(dir: string): Promise<string[]> {
    return readdir(dir);
  }

  async mkdir(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
  }

  unlink(path: string): Promise<void> {
    return unlink(path);
  }

  rename(from: string, to: string): Promise<void> {
    return rename(from, to);
  }

  async exists(path: string): Promise<boolean> {
    return access(path).then(
      () => true,
      () => false,
    );
  }

  rmdir(dir: string): Promise<void> {
    return rm(dir, { recursive: true, force: true });
  }

  async syncDir(dir: string): Promise<void> {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  /** The kernel's boot id; null where there is none (not Linux, or /proc not mounted). */
  bootId(): Promise<string | null> {
    bootIdOnce ??= readFile(BOOT_ID_PATH, 'utf8').then(
      (id) => id.trim() || null,
      () => null,
    );
    return bootIdOnce;
  }
}
