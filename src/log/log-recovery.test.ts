// Proves what recovery at open reports and keeps: a corrupt middle segment keeps its valid prefix,
// its cut bytes and every later segment are moved aside to `*.corrupt` files byte for byte
// (reported by the observer, an error log line and the report) and the next open is stable; and
// the report tells a kill on the same boot (no loss) from a power loss, a torn tail or a short
// segment (may have lost writes), on the real file system and on the fakes.
import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { FakeClock } from '../core/clock.ts';
import { createLogger } from '../core/logger.ts';
import { buildBatch, decodeBatches, splitBatches } from './batch.ts';
import { FsStorage } from './fs-storage.ts';
import { MemoryStorage } from './memory-storage.ts';
import { PartitionLog } from './partition-log.ts';
import { PowerLossStorage } from './power-loss-storage.ts';
import type { Storage } from './storage.ts';
import { cleanupTempDirs, tempDir } from '../testing/index.ts';

afterAll(cleanupTempDirs);

/** Three batches of ~320 bytes fill a 1000-byte segment, so 9 batches make 3 segments. */
const CONFIG = { segmentBytesMax: 1000, messageBytesMax: 1000, indexIntervalBytes: 100, tailCacheBytesMax: 0 };
const BATCHES = 9;

function value(i: number): string {
  return `m${i}:`.padEnd(250, '#');
}

async function readValues(log: PartitionLog): Promise<string[]> {
  const out: string[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 16);
    out.push(...(await decodeBatches(r.bytes, offset)).map((x) => x.value!.toString()));
    offset = r.nextOffset;
  }
  return out;
}

/** Every file of `dir` with its bytes. */
async function snapshot(storage: Storage, dir: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const name of await storage.readdir(dir)) out.set(name, await storage.readFile(join(dir, name)));
  return out;
}

/** A pino destination that keeps each line, to check what the log said. */
function captureLines(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

type Damage = 'no checkpoint (a crash, scanned from the start)' | 'damaged index of the sealed segment';

describe.each([
  { name: 'real file system', make: async () => ({ storage: new FsStorage() as Storage, dir: await tempDir('edgeq-corrupt-') }) },
  { name: 'in-memory storage', make: async () => ({ storage: new MemoryStorage() as Storage, dir: '/data/corrupt-0' }) },
])('a corrupt middle segment ($name)', ({ make }) => {
  it.each<Damage>(['no checkpoint (a crash, scanned from the start)', 'damaged index of the sealed segment'])(
    'keeps the valid prefix, moves the rest aside byte for byte, reports it, and reopens stable: %s',
    async (damage) => {
      const { storage, dir } = await make();
      const clock = new FakeClock();
      const log = await PartitionLog.open(dir, CONFIG, { storage, clock });
      for (let i = 0; i < BATCHES; i++) await log.append(await buildBatch([{ value: value(i) }], { nowMs: clock.nowMs() }));
      expect(log.segmentCount).toBe(3);
      const [, middleBase, lastBase] = log.segmentBaseOffsets() as [number, number, number];
      if (damage === 'no checkpoint (a crash, scanned from the start)') {
        await log.abort();
        await storage.unlink(join(dir, PartitionLog.checkpointFile));
      } else {
        await log.close();
      }
      const stem = (base: number): string => String(base).padStart(20, '0');
      const middlePath = join(dir, `${stem(middleBase)}.log`);
      const original = await snapshot(storage, dir);
      const middle = Buffer.from(original.get(`${stem(middleBase)}.log`)!);
      const lastSegment = original.get(`${stem(lastBase)}.log`)!;
      const middleBatches = splitBatches(middle);
      expect(middleBatches.length).toBeGreaterThanOrEqual(2);
      // Flip a byte inside the second batch of the middle segment (past the CRC field, so only
      // the CRC32C can notice).
      const cut = middleBatches[0]!.length;
      middle[cut + 40] = middle[cut + 40]! ^ 0x5a;
      await storage.writeFileAtomic(middlePath, middle);
      if (damage === 'damaged index of the sealed segment') {
        await storage.writeFileAtomic(join(dir, `${stem(middleBase)}.index`), Buffer.from('not an index'));
      }

      const { lines, stream } = captureLines();
      const moved: { file: string; bytes: number }[] = [];
      const again = await PartitionLog.open(dir, CONFIG, {
        storage,
        clock,
        logger: createLogger({ level: 'info', destination: stream }),
        observer: { onCorruptSegment: (file: string, bytes: number) => moved.push({ file, bytes }) },
      } as Parameters<typeof PartitionLog.open>[2]);

      // The valid prefix: the first segment and the first batch of the middle one.
      expect(again.logEndOffset).toBe(middleBase + 1);
      expect(again.segmentBaseOffsets()).toEqual([0, middleBase]);
      expect(await readValues(again)).toEqual(Array.from({ length: middleBase + 1 }, (_, i) => value(i)));
      const after = await snapshot(storage, dir);
      expect(after.get(`${stem(middleBase)}.log`)).toEqual(middle.subarray(0, cut));
      expect(after.has(`${stem(lastBase)}.log`)).toBe(false);

      // What was cut or dropped is kept aside, byte for byte, under names no later open takes for
      // a segment.
      const corrupt = [...after.keys()].filter((n) => n.endsWith('.corrupt'));
      const contents = corrupt.map((n) => after.get(n)!);
      expect(contents).toContainEqual(middle.subarray(cut));
      expect(contents).toContainEqual(lastSegment);

      const report = again.recovery;
      expect(report.mayHaveLostWrites).toBe(true);
      expect(report.truncatedBytes).toBe(middle.length - cut);
      const logAside = corrupt.filter((n) => after.get(n)!.equals(middle.subarray(cut)) || after.get(n)!.equals(lastSegment));
      expect([...report.corruptSegments].sort()).toEqual(expect.arrayContaining(logAside.sort()));
      expect(moved.map((m) => m.file)).toEqual(expect.arrayContaining(logAside));
      expect(moved.find((m) => m.file === logAside.find((n) => after.get(n)!.equals(lastSegment)))?.bytes).toBe(lastSegment.length);
      const errors = lines.filter((l) => l.level === 50);
      expect(errors.length).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(errors)).toContain('.corrupt');

      // The log goes on from the prefix and a reopen changes nothing.
      const r = await again.append(await buildBatch([{ value: 'next' }], { nowMs: clock.nowMs() }));
      expect(r.baseOffset).toBe(middleBase + 1);
      await again.close();
      const settled = await snapshot(storage, dir);
      const third = await PartitionLog.open(dir, CONFIG, { storage, clock });
      expect(third.logEndOffset).toBe(middleBase + 2);
      expect(third.recovery).toMatchObject({ cleanShutdown: true, truncatedBytes: 0, corruptSegments: [], mayHaveLostWrites: false });
      const reopened = await snapshot(storage, dir);
      for (const name of corrupt) expect(reopened.get(name), name).toEqual(settled.get(name));
      expect([...reopened.keys()].filter((n) => n.endsWith('.log')).sort()).toEqual(
        [...settled.keys()].filter((n) => n.endsWith('.log')).sort(),
      );
      await third.abort();

      // Moved-aside files break neither retention nor destroy.
      const fourth = await PartitionLog.open(dir, { ...CONFIG, retentionBytes: 1 }, { storage, clock });
      for (let i = 0; i < BATCHES; i++) await fourth.append(await buildBatch([{ value: value(100 + i) }], { nowMs: clock.nowMs() }));
      expect(await fourth.applyRetention()).toBeGreaterThan(0);
      expect(fourth.segmentCount).toBe(1);
      await fourth.close();
      for (const name of corrupt) expect(await storage.exists(join(dir, name)), name).toBe(true);
      await PartitionLog.destroy(dir, storage);
      expect(await storage.exists(join(dir, corrupt[0]!))).toBe(false);
      expect(await storage.exists(dir)).toBe(false);
    },
  );
});

/** Appends `n` one-record batches and returns their values. */
async function appendValues(log: PartitionLog, n: number, prefix: string): Promise<string[]> {
  const values = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  for (const v of values) await log.append(await buildBatch([{ value: v }]));
  return values;
}

describe('the recovery report tells a SIGKILL from a power loss', () => {
  const fakes = [
    { name: 'in-memory storage', make: async () => ({ storage: new MemoryStorage(), dir: '/data/r-0' }) },
    { name: 'power-loss storage over the real file system', make: async () => {
      const dir = await tempDir('edgeq-report-');
      return { storage: new PowerLossStorage(new FsStorage(), { root: dir }), dir };
    } },
  ];
  /** A power cut on either fake: the storage of the next boot. */
  async function cutPower(storage: Storage, tear = false): Promise<Storage> {
    if (storage instanceof PowerLossStorage) return storage.crash({ tear, seed: 3 });
    (storage as MemoryStorage).crash();
    return storage;
  }

  it.each(fakes)('a new folder lost nothing ($name)', async ({ make }) => {
    const { storage, dir } = await make();
    const log = await PartitionLog.open(dir, {}, { storage });
    expect(log.recovery).toEqual({ cleanShutdown: true, sameBoot: true, truncatedBytes: 0, corruptSegments: [], shortOfCheckpoint: false, mayHaveLostWrites: false });
    await log.close();
  });

  it.each(fakes)('a kill on the same boot (page cache kept, nothing cut) may not have lost writes ($name)', async ({ make }) => {
    const { storage, dir } = await make();
    const log = await PartitionLog.open(dir, { flushPolicy: 'os' }, { storage });
    const values = await appendValues(log, 5, 'k');
    await log.abort();
    const again = await PartitionLog.open(dir, {}, { storage });
    expect(again.recovery).toEqual({ cleanShutdown: false, sameBoot: true, truncatedBytes: 0, corruptSegments: [], shortOfCheckpoint: false, mayHaveLostWrites: false });
    expect(await readValues(again)).toEqual(values);
    await again.close();
  });

  it.each(fakes)('a power loss after unsynced writes may have lost them ($name)', async ({ make }) => {
    const { storage, dir } = await make();
    const log = await PartitionLog.open(dir, { flushPolicy: 'os' }, { storage });
    await appendValues(log, 5, 'p');
    const after = await cutPower(storage);
    await log.abort();
    const again = await PartitionLog.open(dir, {}, { storage: after });
    expect(again.recovery).toMatchObject({ cleanShutdown: false, sameBoot: false, mayHaveLostWrites: true });
    expect(again.logEndOffset).toBe(0);
    await again.close();
  });

  it.each(fakes)('a power loss after a clean close lost nothing ($name)', async ({ make }) => {
    const { storage, dir } = await make();
    const log = await PartitionLog.open(dir, { flushPolicy: 'os' }, { storage });
    const values = await appendValues(log, 5, 'c');
    await log.close();
    const again = await PartitionLog.open(dir, {}, { storage: await cutPower(storage) });
    expect(again.recovery).toMatchObject({ cleanShutdown: true, sameBoot: false, truncatedBytes: 0, mayHaveLostWrites: false });
    expect(await readValues(again)).toEqual(values);
    await again.close();
  });

  it.each(fakes)('a torn tail cut on the same boot is reported ($name)', async ({ make }) => {
    const { storage, dir } = await make();
    const log = await PartitionLog.open(dir, { flushPolicy: 'sync' }, { storage });
    const values = await appendValues(log, 5, 't');
    await log.abort();
    // Half of a sixth batch, as a kill in the middle of its write leaves it.
    const path = join(dir, '00000000000000000000.log');
    const sixth = await buildBatch([{ value: 't5' }]);
    const file = await storage.open(path);
    const size = await file.size();
    await file.writev([sixth.subarray(0, 30)], size);
    await file.close();
    const again = await PartitionLog.open(dir, {}, { storage });
    expect(again.recovery).toEqual({ cleanShutdown: false, sameBoot: true, truncatedBytes: 30, corruptSegments: [], shortOfCheckpoint: false, mayHaveLostWrites: true });
    expect(await readValues(again)).toEqual(values);
    await again.close();
  });

  it('a power loss that tears the last write is cut back, and every batch acknowledged under sync is kept', async () => {
    const inner = new MemoryStorage();
    const storage = new PowerLossStorage(inner);
    const log = await PartitionLog.open('/data/torn-0', { flushPolicy: 'sync' }, { storage });
    const synced = await appendValues(log, 4, 's');
    await log.abort();
    // The same folder under `os`: a batch acknowledged after its write, before any sync, which
    // the power cut tears.
    const unsynced = await PartitionLog.open('/data/torn-0', { flushPolicy: 'os' }, { storage });
    await unsynced.append(await buildBatch([{ value: 'x'.repeat(400) }]));
    const after = await storage.crash({ tear: true, seed: 11 });
    await unsynced.abort();
    expect(after.lastPowerLoss!.torn.length).toBeGreaterThan(0);
    const again = await PartitionLog.open('/data/torn-0', {}, { storage: after });
    expect(again.recovery.truncatedBytes).toBeGreaterThan(0);
    expect(again.recovery).toMatchObject({ sameBoot: false, mayHaveLostWrites: true });
    expect(await readValues(again)).toEqual(synced);
    await again.close();
  });

  it('a real file system on the same boot: a kill reports no loss, a checkpoint from before boot ids does', async () => {
    const dir = await tempDir('edgeq-report-');
    const storage = new FsStorage();
    expect(await storage.bootId()).toMatch(/^[0-9a-f-]{36}$/);
    const log = await PartitionLog.open(dir, { flushPolicy: 'interval' }, { storage });
    await appendValues(log, 3, 'f');
    await log.abort();
    const again = await PartitionLog.open(dir, {}, { storage });
    expect(again.recovery).toMatchObject({ cleanShutdown: false, sameBoot: true, mayHaveLostWrites: false });
    await again.abort();
    // A checkpoint written before the field existed carries no boot: it cannot vouch for one.
    const cpPath = join(dir, PartitionLog.checkpointFile);
    const cp = JSON.parse((await storage.readFile(cpPath)).toString('utf8')) as Record<string, unknown>;
    delete cp.bootId;
    await storage.writeFileAtomic(cpPath, Buffer.from(JSON.stringify(cp)));
    const legacy = await PartitionLog.open(dir, {}, { storage });
    expect(legacy.recovery).toMatchObject({ cleanShutdown: false, sameBoot: false, mayHaveLostWrites: true });
    expect(legacy.logEndOffset).toBe(3);
    await legacy.close();
  });

  it('a segment shorter than its checkpoint (synced bytes gone) is reported', async () => {
    const storage = new MemoryStorage();
    const log = await PartitionLog.open('/data/short-0', { flushPolicy: 'sync' }, { storage });
    await appendValues(log, 4, 'q');
    // A clean close checkpoints all four batches; then three of them go.
    await log.close();
    const path = '/data/short-0/00000000000000000000.log';
    const bytes = await storage.readFile(path);
    await storage.writeFileAtomic(path, bytes.subarray(0, splitBatches(bytes)[0]!.length));
    const again = await PartitionLog.open('/data/short-0', {}, { storage });
    expect(again.recovery).toMatchObject({ cleanShutdown: true, sameBoot: true, truncatedBytes: 0, shortOfCheckpoint: true, mayHaveLostWrites: true });
    expect(again.logEndOffset).toBe(1);
    await again.close();
  });
});
