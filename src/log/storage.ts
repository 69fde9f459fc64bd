/**
 * The storage the log stands on, injected so tests can swap the real file system for a fake that
 * fills up, tears writes or loses what was never synced.
 */

/** An open file addressed by explicit positions (pread/pwrite); no implicit cursor. */
export interface StorageFile {
  readonly path: string;
  /** Reads up to `length` bytes at `position` into `buf` at `offset`; returns bytes read. */
  read(buf: Buffer, offset: number, length: number, position: number): Promise<number>;
  /** Writes all `buffers` contiguously at `position`; returns bytes written (short on a full disk). */
  writev(buffers: readonly Buffer[], position: number): Promise<number>;
  /** Makes written data durable (fdatasync). */
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  size(): Promise<number>;
  close(): Promise<void>;
}

/** File-system operations the log needs. Paths are absolute or relative to the process. */
export interface Storage {
  /** Opens a file for reading and writing, creating it when `create` is set. */
  open(path: string, options?: { create?: boolean }): Promise<StorageFile>;
  readFile(path: string): Promise<Buffer>;
  /** Writes a small file atomically: temp file, fsync, rename, fsync of the folder. */
  writeFileAtomic(path: string, data: Buffer): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  mkdir(dir: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  exists(path: string): Promise<boolean>;
  /** Removes a folder and everything in it. */
  rmdir(dir: string): Promise<void>;
  /** Makes a folder's entries durable (after create, rename, unlink). */
  syncDir(dir: string): Promise<void>;
  /**
   * Which boot of the machine the data is on: an id that changes whenever the machine restarts
   * (on Linux the kernel's `boot_id`; in the fakes, at every simulated crash), or null when the
   * platform cannot tell. A log that was not closed cleanly and finds another boot than its
   * checkpoint's may have lost writes that were never synced (the page cache went with the boot).
   */
  bootId(): Promise<string | null>;
}

/** True when `err` is the OS saying the disk is full (ENOSPC) or over quota (EDQUOT). */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}
