// Proves batch merging byte by byte: merging batches built from parts of a record list gives
// exactly the bytes of one batch built from the whole list (seeded random records: null and binary
// keys and values, headers, timestamps before and after the first); the result passes the full
// validation and decodes to the same records; batches that cannot merge are refused.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../core/random.ts';
import { isEdgeqError } from '../core/errors.ts';
import { buildBatch, decodeBatch, validateBatch } from './batch.ts';
import { mergeable, mergeBatches } from './batch-merge.ts';
import { ATTR_HAS_TRACE, OFFSET_ATTRIBUTES } from './batch-format.ts';
import { CompressionCodec } from './compression.ts';
import type { RecordInput } from './record.ts';

function randomRecords(next: () => number, n: number): RecordInput[] {
  const base = 1_700_000_000_000;
  return Array.from({ length: n }, (_, i) => {
    const bytes = (len: number) => Buffer.from(Array.from({ length: len }, () => Math.floor(next() * 256)));
    const headers: Record<string, Buffer> = {};
    const hn = Math.floor(next() * 3);
    for (let h = 0; h < hn; h++) headers[`h${h}`] = bytes(Math.floor(next() * 20));
    return {
      key: next() < 0.3 ? null : next() < 0.5 ? `key-${i}` : bytes(Math.floor(next() * 300)),
      value: next() < 0.1 ? null : bytes(Math.floor(next() * (next() < 0.05 ? 20_000 : 200))),
      headers,
      // Up to a minute either side of the base: deltas are signed.
      timestamp: base + Math.floor((next() - 0.5) * 120_000),
    };
  });
}

describe('mergeBatches', () => {
  it('merges a batch holding a traceparent with untraced ones: the bytes of one batch of all, trace bit set', async () => {
    const tp = Buffer.from('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    const records: RecordInput[] = [{ value: 'a', timestamp: 1 }, { value: 'b', headers: { traceparent: tp }, timestamp: 2 }, { value: 'c', timestamp: 3 }];
    const parts = await Promise.all(records.map((r) => buildBatch([r])));
    expect(parts.map((b) => (b.readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE) !== 0)).toEqual([false, true, false]);
    const merged = mergeBatches(parts);
    expect(merged.equals(await buildBatch(records))).toBe(true);
    expect(merged.readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE).toBe(ATTR_HAS_TRACE);
    expect(mergeBatches([parts[0]!, parts[2]!]).readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE).toBe(0);
  });

  it.each([1, 2, 3, 4, 5])('gives the bytes of one batch built from all the records (seed %i)', async (seed) => {
    const next = seededRandom(seed);
    const records = randomRecords(next, 1 + Math.floor(next() * 400));
    // Cut into 1..8 consecutive parts.
    const cuts = [...new Set(Array.from({ length: Math.floor(next() * 8) }, () => Math.floor(next() * records.length)))].filter((c) => c > 0).sort((a, b) => a - b);
    const bounds = [0, ...cuts, records.length];
    const parts = await Promise.all(bounds.slice(1).map((end, i) => buildBatch(records.slice(bounds[i], end))));
    const whole = await buildBatch(records);
    const merged = mergeBatches(parts);
    expect(merged.equals(whole), `seed ${seed}, ${parts.length} parts`).toBe(true);
    await validateBatch(merged, { messageBytesMax: 64 * 1024 * 1024 });
    const { records: back } = await decodeBatch(merged);
    expect(back.map((r) => r.offset)).toEqual(records.map((_, i) => i));
    expect(back.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
  });

  it('keeps a single batch as it is', async () => {
    const b = await buildBatch([{ value: 'only', key: 'k', timestamp: 5 }]);
    expect(mergeBatches([b]).equals(b)).toBe(true);
  });

  it('refuses compressed batches, batches with an origin, differing attributes, a torn batch and nothing', async () => {
    const plain = await buildBatch([{ value: 'a' }], { nowMs: 1 });
    const compressed = await buildBatch([{ value: 'a' }], { codec: CompressionCodec.lz4, nowMs: 1 });
    const origin = await buildBatch([{ value: 'a' }], { origin: { region: 'eu', offset: 3 }, nowMs: 1 });
    const appendTime = await buildBatch([{ value: 'a' }], { logAppendTime: true, nowMs: 1 });
    expect([mergeable(plain), mergeable(compressed), mergeable(origin), mergeable(appendTime)]).toEqual([true, false, false, true]);
    const code = (f: () => unknown) => {
      try {
        f();
        return 'none';
      } catch (e) {
        return isEdgeqError(e) ? e.code : String(e);
      }
    };
    expect(code(() => mergeBatches([plain, compressed]))).toBe('INVALID_ARGUMENT');
    expect(code(() => mergeBatches([origin]))).toBe('INVALID_ARGUMENT');
    expect(code(() => mergeBatches([plain, appendTime]))).toBe('INVALID_ARGUMENT');
    expect(code(() => mergeBatches([]))).toBe('INVALID_ARGUMENT');
    const torn = Buffer.from(plain);
    torn.writeInt32BE(2, 57); // claims two records, holds one
    expect(code(() => mergeBatches([plain, torn]))).toBe('CORRUPT_BATCH');
  });
});
