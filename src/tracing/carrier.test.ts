// The traced-batch walk (tracedRecords) reads record headers in place; the reference here decodes
// every record with the log's own decoder and reads them the way consumers do (recordContext).
// Both must find the same creation contexts, counts, positions, offsets and origins, on random
// batches: several per buffer, traced or not, compressed or not, stamped with an origin or not,
// with other headers around the traceparent, null keys and values, unsampled and malformed
// contexts, and more distinct contexts than one operation follows.
import { describe, expect, it } from 'vitest';
import { ATTR_HAS_TRACE, CompressionCodec, OFFSET_ATTRIBUTES, OFFSET_ORIGIN_REGION, buildBatch, decodeBatch, setBaseOffset, splitBatches, stampOrigin, type RecordHeader, type RecordInput } from '../log/index.ts';
import { seededRandom } from '../core/random.ts';
import { randInt, testSeed } from '../testing/index.ts';
import { TRACE_CONTEXTS_PER_BATCH_MAX, anyBatchTraced, recordContext, tracedRecords, type TracedRecords } from './carrier.ts';

/** The walk as it was written before: decode every traced batch into records, read each one's context. */
async function reference(bytes: Buffer): Promise<{ traced: TracedRecords[]; dropped: number }> {
  const byParent = new Map<string, TracedRecords>();
  let dropped = 0;
  let index = 0;
  for (const b of splitBatches(bytes)) {
    const { header, records } = await decodeBatch(b);
    for (const r of records) {
      const sc = (header.attributes & ATTR_HAS_TRACE) !== 0 ? recordContext(r.headers) : null;
      if (sc !== null) {
        const key = `${sc.traceId}-${sc.spanId}`;
        const seen = byParent.get(key);
        if (seen) seen.count++;
        else if (byParent.size >= TRACE_CONTEXTS_PER_BATCH_MAX) dropped++;
        else {
          const delta = r.offset - header.baseOffset;
          byParent.set(key, { context: sc, count: 1, index, offset: r.offset, originRegion: header.originRegion, originOffset: header.originRegion !== null ? header.originOffset + delta : null });
        }
      }
      index++;
    }
  }
  return { traced: [...byParent.values()], dropped };
}

function hex(rand: () => number, chars: number): string {
  let s = '';
  for (let i = 0; i < chars; i++) s += '0123456789abcdef'[randInt(rand, 0, 15)];
  return /^0+$/.test(s) ? `1${s.slice(1)}` : s;
}

describe('tracedRecords (the in-place walk of traced batches)', () => {
  it('finds what decoding every record finds, on random batches', async () => {
    const seed = testSeed('carrier-walk');
    const rand = seededRandom(seed);
    // A small pool of contexts, so that records share them (count > 1) and some cases pass the cap.
    const contexts = Array.from({ length: 48 }, () => `00-${hex(rand, 32)}-${hex(rand, 16)}-0${randInt(rand, 0, 1)}`);
    // Every tenth round, each record has a context of its own: more than one operation follows.
    const headerOf = (wide: boolean): RecordHeader[] => {
      const hs: RecordHeader[] = [];
      if (wide) return [{ key: 'traceparent', value: Buffer.from(`00-${hex(rand, 32)}-${hex(rand, 16)}-01`, 'latin1') }];
      for (let h = randInt(rand, 0, 3); h > 0; h--) hs.push({ key: ['k', 'trace', 'traceparenz', 'tracestate', ''][randInt(rand, 0, 4)]!, value: Buffer.from(hex(rand, randInt(rand, 0, 20))) });
      const roll = rand();
      if (roll < 0.5) {
        const value = roll < 0.05 ? Buffer.from('00-not-a-context') : Buffer.from(contexts[randInt(rand, 0, roll < 0.25 ? 3 : contexts.length - 1)]!, 'latin1');
        hs.splice(randInt(rand, 0, hs.length), 0, { key: 'traceparent', value });
        if (rand() < 0.1) hs.push({ key: 'traceparent', value: Buffer.from(contexts[0]!, 'latin1') }); // a second one: the first counts
      }
      return hs;
    };
    const seen = { dropped: 0, shared: 0, origin: 0, compressedTraced: 0 };
    for (let round = 0; round < 150; round++) {
      const batches: Buffer[] = [];
      let next = randInt(rand, 0, 1_000);
      for (let n = randInt(rand, 1, 4); n > 0; n--) {
        const records: RecordInput[] = Array.from({ length: randInt(rand, 1, 40) }, () => ({
          key: rand() < 0.3 ? null : `k${randInt(rand, 0, 9)}`,
          value: rand() < 0.1 ? null : Buffer.alloc(randInt(rand, 0, 300), 0x61),
          headers: headerOf(round % 10 === 0),
        }));
        const codec = [CompressionCodec.none, CompressionCodec.none, CompressionCodec.lz4, CompressionCodec.zstd][randInt(rand, 0, 3)]!;
        let b = await buildBatch(records, { codec });
        setBaseOffset(b, next);
        next += records.length;
        if (rand() < 0.3) b = stampOrigin(b, { region: 'eu-west', offset: randInt(rand, 0, 10_000) });
        batches.push(b);
      }
      const bytes = Buffer.concat(batches);
      const want = await reference(bytes);
      expect(await tracedRecords(bytes), `seed ${seed} round ${round}`).toEqual(want);
      if (want.dropped > 0) seen.dropped++;
      if (want.traced.some((t) => t.count > 1)) seen.shared++;
      if (want.traced.some((t) => t.originRegion !== null)) seen.origin++;
      if (batches.some((b) => (b.readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE) !== 0 && (b.readInt16BE(OFFSET_ATTRIBUTES) & 0x07) !== 0)) seen.compressedTraced++;
      expect(anyBatchTraced(bytes)).toBe(batches.some((b) => (b.readInt16BE(OFFSET_ATTRIBUTES) & ATTR_HAS_TRACE) !== 0));
    }
    // The cases that matter came up (a seed that missed one would prove less than it says).
    expect(Object.values(seen).every((n) => n > 0), JSON.stringify(seen)).toBe(true);
  });

  it('a batch that does not walk is skipped, and the records after it keep their positions', async () => {
    const ctx = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const traced = await buildBatch([{ value: 'a', headers: { traceparent: ctx } }, { value: 'b' }]);
    const broken = Buffer.from(traced);
    // The first record's length varint now claims more bytes than the batch holds.
    broken[OFFSET_ORIGIN_REGION] = 0x7e;
    const after = await buildBatch([{ value: 'c' }, { value: 'd', headers: { traceparent: ctx.replace('b7ad', 'c7ad') } }]);
    const { traced: got } = await tracedRecords(Buffer.concat([broken, after]));
    expect(got.map((t) => [t.context.spanId, t.index])).toEqual([['c7ad6b7169203331', 3]]);
  });

  it('reads nothing from batches without the trace bit, whatever their records hold', async () => {
    const plain = await buildBatch([{ value: 'a', headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } }]);
    // Clear the bit: a producer that wrote the header without marking the batch is not followed.
    plain.writeInt16BE(plain.readInt16BE(OFFSET_ATTRIBUTES) & ~ATTR_HAS_TRACE, OFFSET_ATTRIBUTES);
    expect(await tracedRecords(plain)).toEqual({ traced: [], dropped: 0 });
    expect(await tracedRecords(new Uint8Array(0))).toEqual({ traced: [], dropped: 0 });
  });
});
