// Proves the tail cache: a log that answers tail reads from memory gives byte for byte what the
// same log reads from its files, through appends, rolls, truncations and resets (seeded random
// runs); tail reads do no file read; a bad size is refused.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../core/random.ts';
import { FakeClock } from '../core/clock.ts';
import { isEdgeqError } from '../core/errors.ts';
import { buildBatch } from './batch.ts';
import { resolveLogConfig } from './log-config.ts';
import { MemoryStorage } from './memory-storage.ts';
import { PartitionLog } from './partition-log.ts';
import type { Storage, StorageFile } from './storage.ts';
import { TailCache } from './tail-cache.ts';

const DIR = '/data/t-0';

/** A storage that counts file reads. */
function counting(inner: Storage): { storage: Storage; reads: () => number } {
  let reads = 0;
  const storage: Storage = Object.create(inner) as Storage;
  storage.open = async (path, options) => {
    const f = await inner.open(path, options);
    const wrapped: StorageFile = Object.create(f) as StorageFile;
    wrapped.read = (buf, offset, length, position) => {
      reads++;
      return f.read(buf, offset, length, position);
    };
    return wrapped;
  };
  return { storage, reads: () => reads };
}

async function randomBatch(next: () => number, n: number): Promise<Buffer> {
  return buildBatch(Array.from({ length: n }, (_, i) => ({ value: 'x'.repeat(1 + Math.floor(next() * 400)) + i })), { nowMs: 1_700_000_000_000 });
}

describe('TailCache', () => {
  it.each([1, 2, 3])('answers every read as the files do, through appends, rolls, truncations and resets (seed %i)', async (seed) => {
    const next = seededRandom(seed);
    const config = { segmentBytesMax: 16 * 1024, messageBytesMax: 8 * 1024, indexIntervalBytes: 512 };
    // A small cache, so reads fall on both sides of its start.
    const cached = await PartitionLog.open(DIR, { ...config, tailCacheBytesMax: 6 * 1024 }, { storage: new MemoryStorage(), clock: new FakeClock() });
    const plain = await PartitionLog.open(DIR, { ...config, tailCacheBytesMax: 0 }, { storage: new MemoryStorage(), clock: new FakeClock() });
    let compared = 0;
    for (let step = 0; step < 300; step++) {
      const op = next();
      if (op < 0.85) {
        const b = await randomBatch(next, 1 + Math.floor(next() * 8));
        await Promise.all([cached.append(Buffer.from(b)), plain.append(Buffer.from(b))]);
      } else if (op < 0.95) {
        const span = plain.logEndOffset - plain.logStartOffset;
        const to = plain.logStartOffset + Math.floor(next() * (span + 1));
        await Promise.all([cached.truncateTo(to), plain.truncateTo(to)]);
      } else {
        const to = plain.logEndOffset + Math.floor(next() * 20);
        await Promise.all([cached.resetTo(to), plain.resetTo(to)]);
      }
      expect(cached.logEndOffset).toBe(plain.logEndOffset);
      for (let r = 0; r < 4; r++) {
        const span = plain.logEndOffset - plain.logStartOffset;
        const offset = plain.logStartOffset + Math.floor(next() * (span + 1));
        const maxBytes = 1 + Math.floor(next() * 8000);
        const maxOffset = next() < 0.5 ? undefined : offset + Math.floor(next() * 30);
        const opts = maxOffset === undefined ? {} : { maxOffset };
        const [a, b] = await Promise.all([cached.read(offset, maxBytes, opts), plain.read(offset, maxBytes, opts)]);
        expect({ ...a, bytes: a.bytes.toString('hex') }, `seed ${seed} step ${step} read ${offset} ${maxBytes} ${maxOffset}`).toEqual({ ...b, bytes: b.bytes.toString('hex') });
        compared++;
      }
    }
    expect(compared).toBe(1200);
    await Promise.all([cached.close(), plain.close()]);
  });

  it('answers a read at the tail without a file read, and one below the cache from the file', async () => {
    const { storage, reads } = counting(new MemoryStorage());
    const log = await PartitionLog.open(DIR, { tailCacheBytesMax: 4096 }, { storage, clock: new FakeClock() });
    const next = seededRandom(7);
    for (let i = 0; i < 40; i++) await log.append(await randomBatch(next, 3));
    const before = reads();
    const tail = await log.read(log.logEndOffset - 1, 1_000_000);
    expect(tail.bytes.length).toBeGreaterThan(0);
    expect(tail.nextOffset).toBe(log.logEndOffset);
    expect(reads()).toBe(before);
    const head = await log.read(0, 100);
    expect(head.bytes.length).toBeGreaterThan(0);
    expect(reads()).toBeGreaterThan(before);
    await log.close();
  });

  it('holds at most its bound, dropping the oldest batches, and nothing of a batch larger than itself', async () => {
    const next = seededRandom(11);
    const cache = new TailCache(3000);
    let offset = 0;
    for (let i = 0; i < 50; i++) {
      const b = await buildBatch([{ value: 'v'.repeat(200 + Math.floor(next() * 300)) }], { nowMs: 1 });
      b.writeBigInt64BE(BigInt(offset), 0);
      offset++;
      cache.add([b]);
      expect(cache.bytes).toBeLessThanOrEqual(3000);
    }
    expect(cache.firstOffset).toBeGreaterThan(40);
    expect(cache.read(49, 10_000, 50)?.bytes.length).toBeGreaterThan(0);
    expect(cache.read(49, 10_000, 50)?.nextOffset).toBe(50);
    expect(cache.read(0, 10_000, 50)).toBeNull();
    const big = await buildBatch([{ value: 'v'.repeat(4000) }], { nowMs: 1 });
    big.writeBigInt64BE(BigInt(offset), 0);
    cache.add([big]);
    expect(cache.bytes).toBe(0);
    expect(cache.read(offset, 10_000, offset + 1)).toBeNull();
  });

  it('keeps small batches in buffers of their own, not slices of the shared pool (which would pin 8 KiB each)', async () => {
    const cache = new TailCache(1 << 20);
    const b = await buildBatch([{ value: 'small' }], { nowMs: 1 });
    cache.add([b]);
    const held = cache.read(0, 1 << 20, 1)!.bytes;
    expect(held.equals(b)).toBe(true);
    expect(held.buffer.byteLength).toBe(b.length);
  });

  it('refuses a negative or fractional size', () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      let err: unknown = null;
      try {
        resolveLogConfig({ tailCacheBytesMax: bad });
      } catch (e) {
        err = e;
      }
      expect(isEdgeqError(err) && err.code).toBe('INVALID_CONFIG');
    }
    expect(resolveLogConfig({ tailCacheBytesMax: 0 }).tailCacheBytesMax).toBe(0);
  });
});
