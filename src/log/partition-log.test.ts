// Proves the partition log: offsets, reads of stored bytes, index lookups, rolls, retention,
// timestamp lookup, bad input that changes nothing, a full disk, torn tails and damaged indexes
// recovered at open, group commit, bounded file handles and truncation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readdir, truncate as fsTruncate, writeFile, stat, readFile } from 'node:fs/promises';
import { FakeClock } from '../core/clock.ts';
import { isEdgeqError } from '../core/errors.ts';
import { buildBatch, decodeBatches, recomputeCrc, splitBatches } from './batch.ts';
import { readBatchHeader } from './batch-format.ts';
import { CompressionCodec } from './compression.ts';
import { FilePool } from './file-pool.ts';
import { FsStorage } from './fs-storage.ts';
import { MemoryStorage } from './memory-storage.ts';
import { PartitionLog } from './partition-log.ts';
import { LOG_DEFAULTS, type LogConfig } from './log-config.ts';
import type { Storage, StorageFile } from './storage.ts';
import { cleanupTempDirs, tempDir } from '../testing/index.ts';

afterAll(cleanupTempDirs);

const DIR = '/data/t-0';

function batch(values: string[], ts?: number): Promise<Buffer> {
  return buildBatch(
    values.map((v) => ({ value: v, timestamp: ts })),
    { nowMs: ts ?? 1_700_000_000_000 },
  );
}

async function readAll(log: PartitionLog, from = log.logStartOffset): Promise<string[]> {
  const out: string[] = [];
  let offset = from;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 4096);
    const recs = await decodeBatches(r.bytes, offset);
    out.push(...recs.map((x) => x.value!.toString()));
    offset = r.nextOffset;
  }
  return out;
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isEdgeqError(err) ? err.code : err).toBe(code);
}

async function openMem(config: Partial<LogConfig> = {}, storage = new MemoryStorage(), clock = new FakeClock()) {
  const log = await openLog(DIR, config, { storage, clock });
  return { log, storage, clock };
}

/**
 * Every test runs twice: with the tail cache off, so reads go to the files, and with its default
 * size, so reads at the tail come from memory (the rest of the suite reads through both).
 */
let tailCacheBytesMax = 0;
function openLog(dir: string, config: Partial<LogConfig>, deps: Parameters<typeof PartitionLog.open>[2]): Promise<PartitionLog> {
  return PartitionLog.open(dir, { tailCacheBytesMax, ...config }, deps);
}

describe.each([
  { reads: 'from the files', bytes: 0 },
  { reads: 'through the tail cache', bytes: LOG_DEFAULTS.tailCacheBytesMax },
])('PartitionLog (reads $reads)', ({ bytes }) => {
  beforeAll(() => {
    tailCacheBytesMax = bytes;
  });

  it('assigns contiguous offsets and reads back what was written', async () => {
    const { log } = await openMem();
    expect(log.logStartOffset).toBe(0);
    expect(log.logEndOffset).toBe(0);
    const a = await log.append(await batch(['a', 'b', 'c']));
    const b = await log.append(await batch(['d']));
    expect(a).toMatchObject({ baseOffset: 0, lastOffset: 2 });
    expect(b).toMatchObject({ baseOffset: 3, lastOffset: 3 });
    expect(log.logEndOffset).toBe(4);
    expect(await readAll(log)).toEqual(['a', 'b', 'c', 'd']);
    // A read from the middle of a batch returns that whole batch, as stored.
    const r = await log.read(1, 1 << 20);
    expect(readBatchHeader(r.bytes).baseOffset).toBe(0);
    expect(r.nextOffset).toBe(4);
    await log.close();
  });

  it('keeps append order when compressed and plain batches are mixed', async () => {
    const { log } = await openMem();
    const values: string[] = [];
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      const vs = [`m${i}-a`, `m${i}-b`];
      values.push(...vs);
      const codec = [CompressionCodec.none, CompressionCodec.zstd, CompressionCodec.snappy, CompressionCodec.lz4][i % 4]!;
      appends.push(log.append(await buildBatch(vs.map((v) => ({ value: v })), { codec })));
    }
    await Promise.all(appends);
    expect(await readAll(log)).toEqual(values);
  });

  it('returns the stored bytes untouched (no re-encoding on the read path)', async () => {
    const { log } = await openMem();
    const b = await buildBatch([{ value: 'x'.repeat(500) }], { codec: CompressionCodec.lz4 });
    const copy = Buffer.from(b);
    await log.append(b);
    const r = await log.read(0, 1 << 20);
    // Only the base offset (outside the CRC) may differ; it is 0 here.
    expect(r.bytes.equals(copy)).toBe(true);
  });

  it('finds any offset through the sparse index across many batches and segments', async () => {
    const { log } = await openMem({ indexIntervalBytes: 256, segmentBytesMax: 8192, messageBytesMax: 4096 });
    const all: string[] = [];
    for (let i = 0; i < 300; i++) {
      const vs = Array.from({ length: 1 + (i % 5) }, (_, j) => `v${i}.${j}`);
      all.push(...vs);
      await log.append(await batch(vs));
    }
    expect(log.segmentCount).toBeGreaterThan(3);
    for (const offset of [0, 1, 17, 299, 450, all.length - 1]) {
      const r = await log.read(offset, 100);
      const recs = await decodeBatches(r.bytes, offset);
      expect(recs[0]!.offset).toBe(offset);
      expect(recs[0]!.value!.toString()).toBe(all[offset]);
    }
    expect(await readAll(log)).toEqual(all);
  });

  it('returns at least one whole batch even when it is larger than maxBytes, and only whole batches', async () => {
    const { log } = await openMem();
    await log.append(await batch(['x'.repeat(3000)]));
    await log.append(await batch(['y']));
    const r = await log.read(0, 10);
    expect(splitBatches(r.bytes)).toHaveLength(1);
    expect(r.nextOffset).toBe(1);
    const r2 = await log.read(0, 1 << 20);
    expect(splitBatches(r2.bytes)).toHaveLength(2);
  });

  it('stops reads at maxOffset (a high watermark)', async () => {
    const { log } = await openMem();
    await log.append(await batch(['a', 'b']));
    await log.append(await batch(['c']));
    const r = await log.read(0, 1 << 20, { maxOffset: 2 });
    expect(splitBatches(r.bytes)).toHaveLength(1);
    expect(r.nextOffset).toBe(2);
    expect((await log.read(2, 100, { maxOffset: 2 })).bytes.length).toBe(0);
  });

  it('refuses offsets outside the log with OFFSET_OUT_OF_RANGE', async () => {
    const { log } = await openMem();
    await log.append(await batch(['a']));
    await expectCode(log.read(2, 100), 'OFFSET_OUT_OF_RANGE');
    await expectCode(log.read(-1, 100), 'OFFSET_OUT_OF_RANGE');
    expect((await log.read(1, 100)).bytes.length).toBe(0);
  });

  it('rolls on size and on age', async () => {
    const { log, clock } = await openMem({ segmentBytesMax: 1000, messageBytesMax: 1000, segmentMsMax: 60_000 });
    for (let i = 0; i < 10; i++) await log.append(await batch(['x'.repeat(200)]));
    const bySize = log.segmentCount;
    expect(bySize).toBeGreaterThanOrEqual(3);
    clock.advance(61_000);
    await log.append(await batch(['late']));
    expect(log.segmentCount).toBe(bySize + 1);
    expect(log.segmentBaseOffsets()[bySize]).toBe(10);
  });

  it('deletes whole segments by time and by size, advancing the log start offset', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { log } = await openMem({ segmentBytesMax: 1000, messageBytesMax: 1000, retentionMs: 3_600_000 }, new MemoryStorage(), clock);
    for (let i = 0; i < 6; i++) await log.append(await batch(['old'.repeat(100)], clock.nowMs()));
    clock.advance(2 * 3_600_000);
    for (let i = 0; i < 3; i++) await log.append(await batch(['new'.repeat(100)], clock.nowMs()));
    const before = log.segmentCount;
    const deleted = await log.applyRetention();
    expect(deleted).toBeGreaterThan(0);
    expect(log.segmentCount).toBe(before - deleted);
    expect(log.logStartOffset).toBe(log.segmentBaseOffsets()[0]);
    await expectCode(log.read(0, 100), 'OFFSET_OUT_OF_RANGE');
    const remaining = await readAll(log);
    expect(remaining.filter((v) => v.startsWith('old')).length).toBeLessThanOrEqual(2);
    expect(remaining.filter((v) => v.startsWith('new'))).toHaveLength(3);

    const { log: sized } = await openMem({ segmentBytesMax: 1000, messageBytesMax: 1000, retentionBytes: 1500 });
    for (let i = 0; i < 12; i++) await sized.append(await batch(['s'.repeat(200)]));
    await sized.applyRetention();
    expect(sized.sizeBytes).toBeLessThanOrEqual(1500 + 1000);
    expect(sized.logStartOffset).toBeGreaterThan(0);
    expect(await readAll(sized)).toHaveLength(sized.logEndOffset - sized.logStartOffset);
  });

  it('looks up offsets by timestamp, including out-of-order timestamps', async () => {
    const { log } = await openMem({ indexIntervalBytes: 100, segmentBytesMax: 2000, messageBytesMax: 2000 });
    const base = 1_700_000_000_000;
    for (let i = 0; i < 40; i++) {
      await log.append(await buildBatch([{ value: `r${i}`, timestamp: base + i * 1000 }, { value: `s${i}`, timestamp: base + i * 1000 + 500 }]));
    }
    expect(await log.offsetForTimestamp(base - 1)).toBe(0);
    expect(await log.offsetForTimestamp(base + 500)).toBe(1);
    expect(await log.offsetForTimestamp(base + 20_000)).toBe(40);
    expect(await log.offsetForTimestamp(base + 20_001)).toBe(41);
    expect(await log.offsetForTimestamp(base + 39_500)).toBe(79);
    expect(await log.offsetForTimestamp(base + 40_000)).toBeNull();
  });

  describe('bad input changes nothing', () => {
    it('CORRUPT_BATCH for a wrong CRC, a length past the buffer, a bad magic, a wrong record count', async () => {
      const { log, storage } = await openMem();
      await log.append(await batch(['keep']));
      const used = storage.usedBytes();
      const crc = await batch(['a']);
      crc[crc.length - 1] = crc[crc.length - 1]! ^ 1;
      const short = (await batch(['a'])).subarray(0, 60);
      const magic = await batch(['a']);
      magic[16] = 9;
      const count = await batch(['a', 'b']);
      count.writeInt32BE(5, 57);
      for (const bad of [crc, short, magic, count]) await expectCode(log.append(bad), 'CORRUPT_BATCH');
      expect(log.logEndOffset).toBe(1);
      expect(storage.usedBytes()).toBe(used);
      expect(await readAll(log)).toEqual(['keep']);
    });

    it('walks the records unless the append says the leader did; the CRC is checked either way', async () => {
      const { log } = await openMem();
      // Record framing broken (the first record's length varint), CRC recomputed to match.
      const framing = await batch(['a', 'b']);
      const recordsAt = framing.length - 2 * 8; // both records are 8 bytes here
      framing[recordsAt] = 0x7f;
      recomputeCrc(framing);
      await expectCode(log.append(Buffer.from(framing)), 'CORRUPT_BATCH');
      expect(log.logEndOffset).toBe(0);
      const crc = await batch(['a']);
      crc[crc.length - 1] = crc[crc.length - 1]! ^ 1;
      await expectCode(log.append(crc, { validateRecords: false }), 'CORRUPT_BATCH');
      expect(log.logEndOffset).toBe(0);
      await log.append(Buffer.from(framing), { validateRecords: false });
      expect(log.logEndOffset).toBe(2);
    });

    it('MESSAGE_TOO_LARGE for a batch over messageBytesMax', async () => {
      const { log, storage } = await openMem({ messageBytesMax: 1024 });
      const used = storage.usedBytes();
      await expectCode(log.append(await batch(['x'.repeat(2000)])), 'MESSAGE_TOO_LARGE');
      expect(log.logEndOffset).toBe(0);
      expect(storage.usedBytes()).toBe(used);
    });

    it('QUEUE_FULL when appends outrun the writer beyond the queue bound', async () => {
      const { log } = await openMem({ appendQueueBytesMax: 1000, messageBytesMax: 1000, flushPolicy: 'sync' });
      const batches = await Promise.all(Array.from({ length: 8 }, () => batch(['q'.repeat(300)])));
      const results = await Promise.allSettled(batches.map((b) => log.append(b)));
      const codes = results.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'ok'));
      expect(codes).toContain('QUEUE_FULL');
      expect(codes).toContain('ok');
      expect(await readAll(log)).toHaveLength(codes.filter((c) => c === 'ok').length);
    });
  });

  it('disk full: the append fails typed, nothing partial is visible, and the log reopens readable', async () => {
    const storage = new MemoryStorage();
    const { log } = await openMem({ flushPolicy: 'sync' }, storage);
    await log.append(await batch(['before']));
    storage.capacityBytes = storage.usedBytes() + 30; // room for part of a batch only
    const err = await log.append(await batch(['x'.repeat(100)])).catch((e: unknown) => e);
    expect(isEdgeqError(err, 'STORAGE_FULL')).toBe(true);
    expect((err as { retriable: boolean }).retriable).toBe(true);
    expect(log.logEndOffset).toBe(1);
    expect(await readAll(log)).toEqual(['before']);
    // Restart while the disk is still full: it opens, and reads what was acknowledged.
    storage.crash();
    const again = await openLog(DIR, {}, { storage, clock: new FakeClock() });
    expect(again.logEndOffset).toBe(1);
    expect(await readAll(again)).toEqual(['before']);
    storage.capacityBytes = Number.MAX_SAFE_INTEGER;
    await again.append(await batch(['after']));
    expect(await readAll(again)).toEqual(['before', 'after']);
  });

  it('disk full on a real file system (a short write is cut off) leaves the file at the last batch', async () => {
    const dir = await tempDir();
    const fs = new FsStorage();
    let failWrites = false;
    // Wrap the real storage so one write goes short, as pwrite does on a full disk.
    const storage: Storage = Object.create(fs) as Storage;
    storage.open = async (path, opts) => {
      const f = await fs.open(path, opts);
      const wrapped: StorageFile = Object.create(f) as StorageFile;
      wrapped.writev = async (bufs, pos) => {
        if (!failWrites) return f.writev(bufs, pos);
        await f.writev([bufs[0]!.subarray(0, 10)], pos);
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      };
      return wrapped;
    };
    const log = await openLog(join(dir, 'p'), { flushPolicy: 'sync' }, { storage });
    await log.append(await batch(['one']));
    const size = (await stat(join(dir, 'p', '00000000000000000000.log'))).size;
    failWrites = true;
    await expectCode(log.append(await batch(['two'])), 'STORAGE_FULL');
    expect((await stat(join(dir, 'p', '00000000000000000000.log'))).size).toBe(size);
    failWrites = false;
    await log.append(await batch(['three']));
    await log.close();
    const reopened = await openLog(join(dir, 'p'), {}, { storage: fs });
    expect(await readAll(reopened)).toEqual(['one', 'three']);
    await reopened.close();
  });

  it('sync policy: answers only after an fdatasync that covers the batch, sharing it across concurrent appends', async () => {
    const storage = new MemoryStorage();
    const { log } = await openMem({ flushPolicy: 'sync' }, storage);
    const batches = await Promise.all(Array.from({ length: 64 }, (_, i) => batch([`c${i}`])));
    await Promise.all(batches.map((b) => log.append(b)));
    // Every acknowledged batch survives a power cut...
    storage.crash();
    const again = await openLog(DIR, {}, { storage, clock: new FakeClock() });
    expect(await readAll(again)).toHaveLength(64);
    // ...and 64 concurrent appends needed far fewer than 64 fdatasyncs (group commit).
    let syncs = 0;
    const counting = await openLog(DIR, { flushPolicy: 'sync' }, {
      storage,
      clock: new FakeClock(),
      observer: { onFsync: () => syncs++ },
    });
    await Promise.all(batches.map(async (_, i) => counting.append(await batch([`d${i}`]))));
    expect(syncs).toBeLessThanOrEqual(3);
  });

  it('os policy: acknowledged but unsynced batches are lost on a power cut, and the log still opens', async () => {
    const storage = new MemoryStorage();
    const { log } = await openMem({ flushPolicy: 'os' }, storage);
    await log.append(await batch(['a']));
    await log.append(await batch(['b']));
    storage.crash();
    const again = await openLog(DIR, {}, { storage, clock: new FakeClock() });
    expect(again.logEndOffset).toBe(0);
  });

  it('interval policy: the timer makes appends durable', async () => {
    const storage = new MemoryStorage();
    const clock = new FakeClock();
    const { log } = await openMem({ flushPolicy: 'interval', flushIntervalMs: 100 }, storage, clock);
    let syncs = 0;
    const done = new Promise<void>((resolve) => {
      (log as unknown as { observer: { onFsync: () => void } }).observer.onFsync = () => {
        syncs++;
        resolve();
      };
    });
    await log.append(await batch(['a']));
    clock.advance(100);
    await done;
    expect(syncs).toBe(1);
    storage.crash();
    const again = await openLog(DIR, {}, { storage, clock: new FakeClock() });
    expect(await readAll(again)).toEqual(['a']);
  });

  describe('recovery at open', () => {
    it('truncates a torn tail to the last valid batch', async () => {
      const dir = await tempDir();
      const log = await openLog(dir, { flushPolicy: 'sync' }, { storage: new FsStorage() });
      for (let i = 0; i < 5; i++) await log.append(await batch([`r${i}`]));
      const path = join(dir, '00000000000000000000.log');
      const size = (await stat(path)).size;
      // Simulate a crash: no clean close, then a half-written last batch.
      await log.abort();
      await fsTruncate(path, size - 7);
      const again = await openLog(dir, {}, { storage: new FsStorage() });
      expect(again.logEndOffset).toBe(4);
      expect(await readAll(again)).toEqual(['r0', 'r1', 'r2', 'r3']);
      expect((await stat(path)).size).toBeLessThan(size - 7);
      await again.append(await batch(['r4-again']));
      expect(await readAll(again)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4-again']);
      await again.close();
    });

    it('truncates at a batch whose bytes were flipped, and at garbage after the last batch', async () => {
      const dir = await tempDir();
      const log = await openLog(dir, {}, { storage: new FsStorage() });
      for (let i = 0; i < 5; i++) await log.append(await batch([`r${i}`]));
      await log.flush();
      await log.abort();
      const path = join(dir, '00000000000000000000.log');
      const bytes = await readFile(path);
      const third = splitBatches(bytes).slice(0, 2).reduce((n, b) => n + b.length, 0);
      bytes[third + 40] = bytes[third + 40]! ^ 0x55;
      await writeFile(path, Buffer.concat([bytes, Buffer.alloc(100, 0)]));
      const again = await openLog(dir, {}, { storage: new FsStorage() });
      expect(await readAll(again)).toEqual(['r0', 'r1']);
      await again.close();
    });

    it('after a clean close, nothing is scanned and everything is back', async () => {
      const storage = new MemoryStorage();
      const { log } = await openMem({ segmentBytesMax: 600, messageBytesMax: 600, indexIntervalBytes: 100 }, storage);
      for (let i = 0; i < 20; i++) await log.append(await batch([`v${i}`.padEnd(100, '.')]));
      await log.close();
      const again = await openLog(DIR, { segmentBytesMax: 600, messageBytesMax: 600 }, { storage, clock: new FakeClock() });
      expect(again.segmentCount).toBe(log.segmentCount);
      expect((await readAll(again)).map((v) => v.replace(/\.+$/, ''))).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`));
      expect(await again.offsetForTimestamp(0)).toBe(0);
    });

    it('rebuilds missing and damaged index files', async () => {
      const dir = await tempDir();
      const config = { segmentBytesMax: 2000, messageBytesMax: 2000, indexIntervalBytes: 100 };
      const log = await openLog(dir, config, { storage: new FsStorage() });
      for (let i = 0; i < 30; i++) await log.append(await batch([`i${i}`.padEnd(150, '-')]));
      await log.close();
      const names = (await readdir(dir)).filter((n) => n.endsWith('.index'));
      expect(names.length).toBeGreaterThan(2);
      await writeFile(join(dir, names[0]!), Buffer.from('garbage!!')); // not a whole number of entries
      await writeFile(join(dir, names[1]!), Buffer.alloc(16, 0xff)); // positions past the segment
      const times = (await readdir(dir)).filter((n) => n.endsWith('.timeindex'));
      await fsTruncate(join(dir, times[0]!), 0);
      const again = await openLog(dir, config, { storage: new FsStorage() });
      for (const offset of [0, 5, 13, 29]) {
        const recs = await decodeBatches((await again.read(offset, 100)).bytes, offset);
        expect(recs[0]!.value!.toString().startsWith(`i${offset}-`)).toBe(true);
      }
      expect((await readFile(join(dir, names[0]!))).length % 8).toBe(0);
      await again.close();
    });

    it('stops the log at a corrupt segment, since offsets must stay contiguous (later ones are moved aside)', async () => {
      const dir = await tempDir();
      const config = { segmentBytesMax: 1000, messageBytesMax: 1000 };
      const log = await openLog(dir, config, { storage: new FsStorage() });
      for (let i = 0; i < 12; i++) await log.append(await batch([`s${i}`.padEnd(200, '#')]));
      // Crash without a clean close, after damaging the first segment's tail.
      await log.abort();
      const logs = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
      expect(logs.length).toBeGreaterThan(2);
      await rm(join(dir, 'recovery-checkpoint.json'));
      const first = join(dir, logs[0]!);
      await fsTruncate(first, (await stat(first)).size - 5);
      const again = await openLog(dir, config, { storage: new FsStorage() });
      expect(again.segmentCount).toBe(1);
      const kept = await readAll(again);
      expect(kept.length).toBe(again.logEndOffset);
      expect(kept.length).toBeLessThan(12);
      expect((await readdir(dir)).filter((n) => n.endsWith('.log'))).toHaveLength(1);
      await again.close();
    });
  });

  it('keeps open file handles within the pool bound across many segments', async () => {
    const storage = new MemoryStorage();
    const pool = new FilePool(storage, 4);
    const log = await openLog(DIR, { segmentBytesMax: 300, messageBytesMax: 300 }, { storage, filePool: pool, clock: new FakeClock() });
    for (let i = 0; i < 40; i++) await log.append(await batch([`h${i}`.padEnd(150, '+')]));
    expect(log.segmentCount).toBeGreaterThan(10);
    expect(await readAll(log)).toHaveLength(40);
    expect(pool.stats().peak).toBeLessThanOrEqual(4 + 1);
    expect(storage.openHandles).toBeLessThanOrEqual(4);
    expect(pool.stats().evicted).toBeGreaterThan(0);
  });

  it('truncates to an offset, across segments, and continues from there', async () => {
    const { log } = await openMem({ segmentBytesMax: 500, messageBytesMax: 500 });
    for (let i = 0; i < 10; i++) await log.append(await batch([`t${i}`.padEnd(120, '~')]));
    await log.truncateTo(4);
    expect(log.logEndOffset).toBe(4);
    expect((await readAll(log)).map((v) => v.slice(0, 2))).toEqual(['t0', 't1', 't2', 't3']);
    const r = await log.append(await batch(['new']));
    expect(r.baseOffset).toBe(4);
    await expectCode(log.truncateTo(-1), 'OFFSET_OUT_OF_RANGE');
  });

  it('truncates to the batch boundary below an offset inside a batch', async () => {
    const { log } = await openMem();
    await log.append(await batch(['a', 'b', 'c']));
    await log.append(await batch(['d', 'e']));
    await log.truncateTo(4); // inside the second batch [3, 4]
    expect(log.logEndOffset).toBe(3);
    expect(await readAll(log)).toEqual(['a', 'b', 'c']);
  });

  it('resets to start empty at a new offset (a replica behind its leader\'s log start), across reopen', async () => {
    const storage = new MemoryStorage();
    const { log } = await openMem({ segmentBytesMax: 500, messageBytesMax: 500 }, storage);
    for (let i = 0; i < 6; i++) await log.append(await batch([`r${i}`.padEnd(120, '~')]));
    await log.resetTo(100);
    expect([log.logStartOffset, log.logEndOffset]).toEqual([100, 100]);
    await expectCode(log.read(0, 100), 'OFFSET_OUT_OF_RANGE');
    const f = await batch(['x']);
    f.writeBigInt64BE(100n, 0);
    expect((await log.append(f, { assignOffsets: false })).baseOffset).toBe(100);
    await log.close();
    const again = await openLog(DIR, {}, { storage, clock: new FakeClock() });
    expect([again.logStartOffset, again.logEndOffset]).toEqual([100, 101]);
    expect(await readAll(again)).toEqual(['x']);
  });

  it('a follower append keeps its offsets and must continue the log', async () => {
    const { log } = await openMem();
    const b = await batch(['f']);
    b.writeInt32BE(0, 0);
    b.writeInt32BE(0, 4);
    await log.append(b, { assignOffsets: false, leaderEpoch: 3 });
    const gap = await batch(['g']);
    gap.writeInt32BE(0, 0);
    gap.writeInt32BE(5, 4);
    await expectCode(log.append(gap, { assignOffsets: false }), 'INVALID_ARGUMENT');
    expect(readBatchHeader((await log.read(0, 100)).bytes).partitionLeaderEpoch).toBe(3);
  });
});

async function rm(path: string): Promise<void> {
  const { rm: remove } = await import('node:fs/promises');
  await remove(path, { force: true });
}
