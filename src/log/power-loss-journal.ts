/**
 * The undo journals of the power-loss storage: for each file changed since its last fdatasync,
 * what a power cut would take back. A journal holds the file's length at that sync, whether its
 * folder entry is durable yet, the bytes each overwrite of the synced part replaced (appends
 * need nothing: cutting the file back to its synced length undoes them), and the first write
 * since the sync (a torn power cut keeps a prefix of it). A file with no journal is durable as it
 * stands. So a journal stays small: for an append-only segment it is a header and one write.
 *
 * Two stores: in memory (in-process crashes), and on a `Storage` under `<root>/.power-loss/`,
 * written before each change it undoes, so that after the process is SIGKILLed another process
 * can apply the power loss to the folder (`applyPowerLoss`). The page cache survives a SIGKILL,
 * so the journal itself needs no fdatasync.
 *
 * On disk, one file per journal (named by a hash of the data file's path):
 *
 *   header   u32 magic 'EQPL' | u16 version | u16 path bytes P | u32 generation
 *            | u64 synced length | u32 flags (bit 0: entry durable) | u32 CRC32C of all before and the path
 *            | P bytes: the data file's path relative to the root
 *   record*  u8 kind (1 undo, 2 first write) | u32 generation | u64 position | u32 length L
 *            | u32 CRC32C of all before and the bytes | L bytes
 *
 * The header is rewritten in place (one write within a page, which a SIGKILL cannot split); a
 * sync bumps the generation, which voids every earlier record at once, before the records are
 * cut off. An empty journal (killed between creating it and writing its header) and a record torn
 * by a SIGKILL (short, or failing its CRC) end the journal: the change they were written for had
 * not started.
 */
import { createHash, randomUUID } from 'node:crypto';
import { join, relative, sep } from 'node:path';
import { crc32c } from '../core/crc32c.ts';
import { EdgeqError } from '../core/errors.ts';
import { FilePool } from './file-pool.ts';
import type { Storage } from './storage.ts';

/** The folder, under the root of an on-disk power-loss storage, that holds its journals. */
export const POWER_LOSS_DIR = '.power-loss';
const JOURNALS_DIR = 'journals';
const BOOT_FILE = 'boot-id';
const MAGIC = 0x4551504c; // 'EQPL'
const VERSION = 1;
const HEADER_FIXED_BYTES = 28;
const RECORD_HEADER_BYTES = 21;
const FLAG_ENTRY_DURABLE = 1;
/** Open journal handles at once; journals are few (files with unsynced changes), handles fewer. */
const JOURNAL_FILES_MAX = 64;

/** The state of a file at its last sync. */
export interface JournalHeader {
  /** Bumped at each sync of a file whose entry is not durable yet; records of others are void. */
  generation: number;
  /** The file's length at its last fdatasync (0 when never synced). */
  syncedLength: number;
  /** The folder entry is durable: the folder was synced after the file was created. */
  entryDurable: boolean;
}

/** One change to take back, or the write a torn power cut keeps a prefix of. */
export interface JournalRecord {
  /** `undo`: the bytes the synced part held before an overwrite; `first`: the first write since the sync. */
  kind: 'undo' | 'first';
  position: number;
  bytes: Buffer;
}

/** A file's journal: its header and the records of its generation, oldest first. */
export interface FileJournal extends JournalHeader {
  records: JournalRecord[];
}

/** Where journals live. Paths are the data files' paths. */
export interface JournalStore {
  /** Every journal, by data file path. */
  loadAll(): Promise<Map<string, FileJournal>>;
  /** One journal, or null. */
  load(path: string): Promise<FileJournal | null>;
  /** Creates the journal of `path` or rewrites its header; records of another generation are void. */
  writeHeader(path: string, header: JournalHeader): Promise<void>;
  /** Adds a record of `generation` to the journal of `path` (which must exist). */
  appendRecord(path: string, generation: number, record: JournalRecord): Promise<void>;
  remove(path: string): Promise<void>;
  removeAll(): Promise<void>;
  /** The simulated boot: an id that changes at every power loss. */
  bootId(): Promise<string>;
  /** Starts the next simulated boot. */
  newBoot(): Promise<void>;
  /** Forgets cached handles and folders (the folder may have been removed under it). */
  reset(): Promise<void>;
}

/** Journals held in memory, for in-process crashes. */
export class MemoryJournalStore implements JournalStore {
  private readonly journals = new Map<string, FileJournal>();
  private readonly machine = randomUUID().slice(0, 8);
  private boots = 0;

  async loadAll(): Promise<Map<string, FileJournal>> {
    return new Map([...this.journals].map(([p, j]) => [p, copyJournal(j)]));
  }

  async load(path: string): Promise<FileJournal | null> {
    const j = this.journals.get(path);
    return j ? copyJournal(j) : null;
  }

  async writeHeader(path: string, header: JournalHeader): Promise<void> {
    const j = this.journals.get(path);
    const records = j && j.generation === header.generation ? j.records : [];
    this.journals.set(path, { ...header, records });
  }

  async appendRecord(path: string, generation: number, record: JournalRecord): Promise<void> {
    const j = this.journals.get(path);
    if (!j) throw new EdgeqError('STORAGE_ERROR', `no journal for ${path}`);
    if (j.generation === generation) j.records.push({ ...record, bytes: Buffer.from(record.bytes) });
  }

  async remove(path: string): Promise<void> {
    this.journals.delete(path);
  }

  async removeAll(): Promise<void> {
    this.journals.clear();
  }

  async bootId(): Promise<string> {
    return `power-loss-${this.machine}-boot-${this.boots}`;
  }

  async newBoot(): Promise<void> {
    this.boots++;
  }

  async reset(): Promise<void> {}
}

/** Journals in files under `<root>/.power-loss/`, through `storage` (not the power-loss one). */
export class DiskJournalStore implements JournalStore {
  private readonly dir: string;
  private readonly journalsDir: string;
  private pool: FilePool;
  private made = false;
  /** Where the next record of each open journal goes, and its generation. */
  private readonly ends = new Map<string, { end: number; generation: number }>();

  constructor(
    private readonly storage: Storage,
    private readonly root: string,
  ) {
    this.dir = join(root, POWER_LOSS_DIR);
    this.journalsDir = join(this.dir, JOURNALS_DIR);
    this.pool = new FilePool(storage, JOURNAL_FILES_MAX);
  }

  async loadAll(): Promise<Map<string, FileJournal>> {
    const out = new Map<string, FileJournal>();
    if (!(await this.storage.exists(this.journalsDir))) return out;
    for (const name of await this.storage.readdir(this.journalsDir)) {
      const buf = await this.storage.readFile(join(this.journalsDir, name));
      // Created, and killed before its header was written: the change it was for never began.
      if (buf.length === 0) continue;
      const parsed = decodeJournal(buf, name);
      out.set(join(this.root, parsed.relPath), parsed.journal);
    }
    return out;
  }

  async load(path: string): Promise<FileJournal | null> {
    const file = this.fileOf(path);
    if (!(await this.storage.exists(file))) return null;
    const buf = await this.storage.readFile(file);
    return buf.length === 0 ? null : decodeJournal(buf, file).journal;
  }

  async writeHeader(path: string, header: JournalHeader): Promise<void> {
    await this.ensureDirs();
    const file = this.fileOf(path);
    const head = encodeHeader(this.relPath(path), header);
    const known = this.ends.get(path);
    await this.pool.with(
      file,
      async (f) => {
        const existing = known ?? (await this.endOf(f, path));
        const written = await f.writev([head], 0);
        if (written !== head.length) throw new EdgeqError('STORAGE_FULL', `short write of the power-loss journal of ${path}`);
        if (existing === null || existing.generation !== header.generation) {
          // The new generation voided the records; cutting them off only saves space.
          await f.truncate(head.length);
          this.ends.set(path, { end: head.length, generation: header.generation });
        } else {
          this.ends.set(path, { ...existing, generation: header.generation });
        }
      },
      { create: true },
    );
  }

  async appendRecord(path: string, generation: number, record: JournalRecord): Promise<void> {
    const head = Buffer.alloc(RECORD_HEADER_BYTES);
    head.writeUInt8(record.kind === 'undo' ? 1 : 2, 0);
    head.writeUInt32BE(generation, 1);
    head.writeBigUInt64BE(BigInt(record.position), 5);
    head.writeUInt32BE(record.bytes.length, 13);
    head.writeUInt32BE(crc32c(record.bytes, crc32c(head.subarray(0, 17))), 17);
    await this.pool.with(this.fileOf(path), async (f) => {
      // A journal an earlier process left: find its end once.
      let at = this.ends.get(path) ?? (await this.endOf(f, path));
      if (at === null) throw new EdgeqError('STORAGE_ERROR', `no power-loss journal for ${path}`);
      this.ends.set(path, at);
      const written = await f.writev([head, record.bytes], at.end);
      if (written !== head.length + record.bytes.length) throw new EdgeqError('STORAGE_FULL', `short write of the power-loss journal of ${path}`);
      at.end += head.length + record.bytes.length;
    });
  }

  async remove(path: string): Promise<void> {
    const file = this.fileOf(path);
    this.ends.delete(path);
    await this.pool.retire(file);
    await this.storage.unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async removeAll(): Promise<void> {
    await this.pool.retirePrefix(join(this.journalsDir, '/'));
    this.ends.clear();
    await this.storage.rmdir(this.journalsDir);
    this.made = false;
  }

  async bootId(): Promise<string> {
    const path = join(this.dir, BOOT_FILE);
    if (await this.storage.exists(path)) return (await this.storage.readFile(path)).toString('utf8');
    await this.newBoot();
    return (await this.storage.readFile(path)).toString('utf8');
  }

  async newBoot(): Promise<void> {
    await this.ensureDirs();
    await this.storage.writeFileAtomic(join(this.dir, BOOT_FILE), Buffer.from(randomUUID(), 'utf8'));
  }

  async reset(): Promise<void> {
    await this.pool.retirePrefix(join(this.journalsDir, '/'));
    this.pool = new FilePool(this.storage, JOURNAL_FILES_MAX);
    this.ends.clear();
    this.made = false;
  }

  private async ensureDirs(): Promise<void> {
    if (this.made) return;
    await this.storage.mkdir(this.journalsDir);
    this.made = true;
  }

  /** Where an existing journal file (written by an earlier process) ends, or null when it is new. */
  private async endOf(f: { size(): Promise<number>; read(b: Buffer, o: number, l: number, p: number): Promise<number> }, path: string) {
    const size = await f.size();
    if (size === 0) return null;
    const buf = Buffer.alloc(size);
    await f.read(buf, 0, size, 0);
    const { journal, end } = decodeJournalWithEnd(buf, path);
    return { end, generation: journal.generation };
  }

  private relPath(path: string): string {
    const rel = relative(this.root, path);
    if (rel === '' || rel.startsWith('..') || rel.split(sep)[0] === POWER_LOSS_DIR) {
      throw new EdgeqError('INVALID_ARGUMENT', `the power-loss storage over ${this.root} cannot track ${path}`, { details: { path } });
    }
    return rel;
  }

  private fileOf(path: string): string {
    return join(this.journalsDir, createHash('sha1').update(this.relPath(path)).digest('hex'));
  }
}

function copyJournal(j: FileJournal): FileJournal {
  return { ...j, records: j.records.map((r) => ({ ...r, bytes: Buffer.from(r.bytes) })) };
}

function encodeHeader(relPath: string, h: JournalHeader): Buffer {
  const path = Buffer.from(relPath, 'utf8');
  const out = Buffer.alloc(HEADER_FIXED_BYTES + path.length);
  out.writeUInt32BE(MAGIC, 0);
  out.writeUInt16BE(VERSION, 4);
  out.writeUInt16BE(path.length, 6);
  out.writeUInt32BE(h.generation >>> 0, 8);
  out.writeBigUInt64BE(BigInt(h.syncedLength), 12);
  out.writeUInt32BE(h.entryDurable ? FLAG_ENTRY_DURABLE : 0, 20);
  path.copy(out, HEADER_FIXED_BYTES);
  out.writeUInt32BE(crc32c(path, crc32c(out.subarray(0, 24))), 24);
  return out;
}

function decodeJournal(buf: Buffer, name: string): { relPath: string; journal: FileJournal } {
  const { relPath, journal } = decodeJournalWithEnd(buf, name);
  return { relPath, journal };
}

/** Parses a journal file; a damaged header is a bug (it is written whole), so it throws. */
function decodeJournalWithEnd(buf: Buffer, name: string): { relPath: string; journal: FileJournal; end: number } {
  const bad = (why: string): never => {
    throw new EdgeqError('CORRUPT_LOG', `power-loss journal ${name}: ${why}`);
  };
  if (buf.length < HEADER_FIXED_BYTES || buf.readUInt32BE(0) !== MAGIC) bad('no header');
  if (buf.readUInt16BE(4) !== VERSION) bad(`version ${buf.readUInt16BE(4)}`);
  const pathBytes = buf.readUInt16BE(6);
  const headerBytes = HEADER_FIXED_BYTES + pathBytes;
  if (buf.length < headerBytes) bad('short header');
  const path = buf.subarray(HEADER_FIXED_BYTES, headerBytes);
  if (crc32c(path, crc32c(buf.subarray(0, 24))) !== buf.readUInt32BE(24)) bad('header CRC mismatch');
  const generation = buf.readUInt32BE(8);
  const journal: FileJournal = {
    generation,
    syncedLength: Number(buf.readBigUInt64BE(12)),
    entryDurable: (buf.readUInt32BE(20) & FLAG_ENTRY_DURABLE) !== 0,
    records: [],
  };
  let pos = headerBytes;
  while (pos + RECORD_HEADER_BYTES <= buf.length) {
    const kind = buf.readUInt8(pos);
    const length = buf.readUInt32BE(pos + 13);
    const end = pos + RECORD_HEADER_BYTES + length;
    if ((kind !== 1 && kind !== 2) || end > buf.length) break;
    const bytes = buf.subarray(pos + RECORD_HEADER_BYTES, end);
    if (crc32c(bytes, crc32c(buf.subarray(pos, pos + 17))) !== buf.readUInt32BE(pos + 17)) break;
    if (buf.readUInt32BE(pos + 1) === generation) {
      journal.records.push({ kind: kind === 1 ? 'undo' : 'first', position: Number(buf.readBigUInt64BE(pos + 5)), bytes: Buffer.from(bytes) });
    }
    pos = end;
  }
  return { relPath: path.toString('utf8'), journal, end: pos };
}
