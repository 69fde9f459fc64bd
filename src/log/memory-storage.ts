/**
 * An in-memory Storage for tests, with faults: a capacity that makes writes go short and fail with
 * ENOSPC as a full disk does, injected errors per operation, and `crash()`, which throws away every
 * byte that was never made durable (as a power cut would) and starts a new boot.
 */
import { basename, dirname } from 'node:path';
import type { Storage, StorageFile } from './storage.ts';

interface MemFile {
  data: Buffer;
  length: number;
  /** What survives a crash: the contents as of the last datasync. */
  durable: Buffer;
}

/** Operations a fault can be injected into. */
export type FaultOp = 'open' | 'read' | 'writev' | 'datasync' | 'truncate' | 'writeFileAtomic' | 'unlink' | 'rename';

function errno(code: string, message: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${message}`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

class MemHandle implements StorageFile {
  private closed = false;
  constructor(
    readonly path: string,
    private readonly fs: MemoryStorage,
  ) {}

  private file(): MemFile {
    if (this.closed) throw errno('EBADF', `${this.path} is closed`);
    const f = this.fs.files.get(this.path);
    if (!f) throw errno('ENOENT', this.path);
    return f;
  }

  async read(buf: Buffer, offset: number, length: number, position: number): Promise<number> {
    this.fs.maybeFail('read', this.path);
    const f = this.file();
    const n = Math.max(0, Math.min(length, f.length - position));
    f.data.copy(buf, offset, position, position + n);
    return n;
  }

  async writev(buffers: readonly Buffer[], position: number): Promise<number> {
    this.fs.maybeFail('writev', this.path);
    const f = this.file();
    let written = 0;
    for (const b of buffers) {
      const room = this.fs.capacityBytes - this.fs.usedBytes();
      const growth = Math.max(0, position + written + b.length - f.length);
      const fits = growth <= room ? b.length : Math.max(0, b.length - (growth - room));
      this.ensure(f, position + written + fits);
      b.copy(f.data, position + written, 0, fits);
      written += fits;
      f.length = Math.max(f.length, position + written);
      if (fits < b.length) throw errno('ENOSPC', `no space left writing ${this.path}`);
    }
    return written;
  }

  private ensure(f: MemFile, size: number): void {
    if (size <= f.data.length) return;
    const next = Buffer.alloc(Math.max(size, f.data.length * 2, 4096));
    f.data.copy(next, 0, 0, f.length);
    f.data = next;
  }

  async datasync(): Promise<void> {
    this.fs.maybeFail('datasync', this.path);
    const f = this.file();
    f.durable = Buffer.from(f.data.subarray(0, f.length));
  }

  async truncate(length: number): Promise<void> {
    this.fs.maybeFail('truncate', this.path);
    const f = this.file();
    if (length < f.length) f.data.fill(0, length, f.length);
    this.ensure(f, length);
    f.length = length;
  }

  async size(): Promise<number> {
    return this.file().length;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.fs.openHandles--;
  }
}

/** In-memory storage with fault injection. */
export class MemoryStorage implements Storage {
  readonly files = new Map<string, MemFile>();
  private readonly dirs = new Set<string>(['/', '.']);
  private readonly faults = new Map<FaultOp, { error: NodeJS.ErrnoException; remaining: number; pathIncludes?: string }>();
  /** Total bytes the "disk" holds; writes beyond it go short and fail with ENOSPC. */
  capacityBytes = Number.MAX_SAFE_INTEGER;
  /** Handles currently open, to check that the log bounds them. */
  openHandles = 0;
  openHandlesPeak = 0;
  /** Tells this storage's boots from another's; each crash starts the next boot. */
  private readonly machine = Math.random().toString(36).slice(2, 10);
  private boots = 0;

  /** Bytes held by every file. */
  usedBytes(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.length;
    return n;
  }

  /** Makes the next `times` calls of `op` (on paths containing `pathIncludes`) fail with `code`. */
  failNext(op: FaultOp, code = 'EIO', times = 1, pathIncludes?: string): void {
    this.faults.set(op, { error: errno(code, `injected ${op} fault`), remaining: times, pathIncludes });
  }

  /** @internal */
  maybeFail(op: FaultOp, path: string): void {
    const f = this.faults.get(op);
    if (!f || (f.pathIncludes !== undefined && !path.includes(f.pathIncludes))) return;
    if (--f.remaining <= 0) this.faults.delete(op);
    throw f.error;
  }

  /** Loses everything that was not made durable, as a power cut would; the machine boots again. */
  crash(): void {
    for (const f of this.files.values()) {
      f.data = Buffer.from(f.durable);
      f.length = f.durable.length;
    }
    this.boots++;
  }

  async open(path: string, options: { create?: boolean } = {}): Promise<StorageFile> {
    this.maybeFail('open', path);
    if (!this.files.has(path)) {
      if (!options.create) throw errno('ENOENT', path);
      if (!this.dirs.has(dirname(path))) throw errno('ENOENT', dirname(path));
      this.files.set(path, { data: Buffer.alloc(0), length: 0, durable: Buffer.alloc(0) });
    }
    this.openHandles++;
    this.openHandlesPeak = Math.max(this.openHandlesPeak, this.openHandles);
    return new MemHandle(path, this);
  }

  async readFile(path: string): Promise<Buffer> {
    const f = this.files.get(path);
    if (!f) throw errno('ENOENT', path);
    return Buffer.from(f.data.subarray(0, f.length));
  }

  async writeFileAtomic(path: string, data: Buffer): Promise<void> {
    this.maybeFail('writeFileAtomic', path);
    const existing = this.files.get(path)?.length ?? 0;
    if (this.usedBytes() - existing + data.length > this.capacityBytes) throw errno('ENOSPC', path);
    this.files.set(path, { data: Buffer.from(data), length: data.length, durable: Buffer.from(data) });
  }

  async readdir(dir: string): Promise<string[]> {
    if (!this.dirs.has(dir)) throw errno('ENOENT', dir);
    const out = new Set<string>();
    for (const p of [...this.files.keys(), ...this.dirs]) if (dirname(p) === dir && p !== dir) out.add(basename(p));
    return [...out].sort();
  }

  async mkdir(dir: string): Promise<void> {
    let d = dir;
    while (!this.dirs.has(d)) {
      this.dirs.add(d);
      d = dirname(d);
    }
  }

  async unlink(path: string): Promise<void> {
    this.maybeFail('unlink', path);
    if (!this.files.delete(path)) throw errno('ENOENT', path);
  }

  async rename(from: string, to: string): Promise<void> {
    this.maybeFail('rename', from);
    const f = this.files.get(from);
    if (!f) throw errno('ENOENT', from);
    this.files.delete(from);
    this.files.set(to, f);
  }

  async exists(path: string): Promise<boolean> {
    return this.files.has(path) || this.dirs.has(path);
  }

  async rmdir(dir: string): Promise<void> {
    for (const p of [...this.files.keys()]) if (p === dir || p.startsWith(`${dir}/`)) this.files.delete(p);
    for (const d of [...this.dirs]) if (d === dir || d.startsWith(`${dir}/`)) this.dirs.delete(d);
  }

  async syncDir(): Promise<void> {}

  async bootId(): Promise<string> {
    return `memory-${this.machine}-boot-${this.boots}`;
  }
}
