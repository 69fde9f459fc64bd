// Proves the record batch codec: the exact byte layout of docs/record-batch.md, round trips under
// every codec, decoding of split and partial buffers, and CORRUPT_BATCH / MESSAGE_TOO_LARGE for
// damaged input.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../core/errors.ts';
import { buildBatch, decodeBatch, decodeBatches, recomputeCrc, splitBatches, stampOrigin, validateBatch } from './batch.ts';
import { BATCH_MAGIC, OFFSET_CRC, OFFSET_RECORD_COUNT, OFFSET_LAST_OFFSET_DELTA, readBatchHeader, setBaseOffset } from './batch-format.ts';
import { CompressionCodec, COMPRESSION_NAMES } from './compression.ts';
import { crc32c } from '../core/crc32c.ts';

const LIMITS = { messageBytesMax: 1 << 20 };

async function expectCode(p: Promise<unknown> | (() => unknown), code: string): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(isEdgeqError(err) ? err.code : err).toBe(code);
    return;
  }
  expect.unreachable(`expected ${code}`);
}

describe('record batch', () => {
  it('CRC32C matches the standard check value', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('lays out a one-record batch byte by byte', async () => {
    const b = await buildBatch([{ key: 'k', value: 'v', timestamp: 1000 }], {
      producerId: 7,
      producerEpoch: 1,
      baseSequence: 5,
      baseOffset: 42,
      leaderEpoch: 3,
    });
    const expected = Buffer.from(
      [
        '000000000000002a', // baseOffset 42
        '00000043', // batchLength 67 = 79 - 12
        '00000003', // partitionLeaderEpoch 3
        '02', // magic
        'CCCCCCCC', // crc, checked below
        '0000', // attributes: no codec, create time, no origin
        '00000000', // lastOffsetDelta 0
        '00000000000003e8', // firstTimestamp 1000
        '00000000000003e8', // maxTimestamp 1000
        '0000000000000007', // producerId 7
        '0001', // producerEpoch 1
        '00000005', // baseSequence 5
        '00000001', // recordCount 1
        'ffffffffffffffff', // originOffset -1
        '00', // originRegionLength 0
        // record: length 8, attributes 0, tsDelta 0, offsetDelta 0, key len 1 'k', value len 1 'v', 0 headers
        '10', '00', '00', '00', '02', '6b', '02', '76', '00',
      ].join(''),
      'hex',
    );
    expect(b.length).toBe(79);
    const crc = b.readUInt32BE(OFFSET_CRC);
    expected.writeUInt32BE(crc, OFFSET_CRC);
    expect(b.toString('hex')).toBe(expected.toString('hex'));
    expect(crc).toBe(crc32c(b.subarray(21)));
  });

  it('stores the origin region and offset of applied records', async () => {
    const b = await buildBatch([{ value: 'x' }, { value: 'y' }], { origin: { region: 'eu-west', offset: 1234 } });
    const h = readBatchHeader(b);
    expect(h.originRegion).toBe('eu-west');
    expect(h.originOffset).toBe(1234);
    expect(h.recordsOffset).toBe(70 + 7);
    await validateBatch(b, LIMITS);
  });

  for (const name of COMPRESSION_NAMES) {
    it(`round-trips records with ${name}`, async () => {
      const records = Array.from({ length: 200 }, (_, i) => ({
        key: i % 3 === 0 ? null : `key-${i}`,
        value: i % 7 === 0 ? null : Buffer.from(`value-${i}-${'z'.repeat(i % 50)}`),
        headers: i % 2 === 0 ? { trace: `t${i}`, empty: Buffer.alloc(0) } : undefined,
        timestamp: 1_700_000_000_000 + (i % 10) * 1000,
      }));
      const b = await buildBatch(records, { codec: CompressionCodec[name] });
      setBaseOffset(b, 500);
      const h = await validateBatch(b, LIMITS);
      expect(h.codec).toBe(CompressionCodec[name]);
      const { records: out } = await decodeBatch(b);
      expect(out).toHaveLength(200);
      out.forEach((r, i) => {
        expect(r.offset).toBe(500 + i);
        expect(r.key?.toString() ?? null).toBe(records[i]!.key);
        expect(r.value).toEqual(records[i]!.value);
        expect(r.timestamp).toBe(records[i]!.timestamp);
        expect(r.headers.map((x) => x.key)).toEqual(i % 2 === 0 ? ['trace', 'empty'] : []);
      });
      expect(h.maxTimestamp).toBe(1_700_000_000_000 + 9000);
      if (name !== 'none') expect(b.length).toBeLessThan((await buildBatch(records)).length);
    });
  }

  it('stamps a batch written here with an origin: the same bytes as one built with it, on a copy', async () => {
    const records = [{ key: 'k', value: 'v1', timestamp: 1000 }, { value: 'v2', timestamp: 1001 }];
    const common = { producerId: 9, producerEpoch: 1, baseSequence: 4, nowMs: 1000, codec: CompressionCodec.none };
    const plain = await buildBatch(records, { ...common, baseOffset: 41, leaderEpoch: 3 });
    const copy = Buffer.from(plain);
    const stamped = stampOrigin(plain, { region: 'eu-west', offset: 41 });
    expect(plain.equals(copy)).toBe(true); // never in place
    // Byte for byte what a producer building it with that origin would have sent.
    const built = await buildBatch(records, { ...common, baseOffset: 41, leaderEpoch: 3, origin: { region: 'eu-west', offset: 41 } });
    expect(stamped.equals(built)).toBe(true);
    expect(stamped.length).toBe(plain.length + 'eu-west'.length);
    expect(stamped.readInt32BE(8)).toBe(stamped.length - 12);
    expect(stamped.readInt16BE(21) & 0x10).toBe(0x10);
    expect(stamped.readUInt8(69)).toBe(7);
    expect(stamped.toString('utf8', 70, 77)).toBe('eu-west');
    expect(stamped.readUInt32BE(OFFSET_CRC)).toBe(crc32c(stamped.subarray(21)));
    const h = await validateBatch(stamped, LIMITS);
    expect([h.baseOffset, h.partitionLeaderEpoch, h.originRegion, h.originOffset, h.producerId, h.baseSequence]).toEqual([41, 3, 'eu-west', 41, 9, 4]);
    expect((await decodeBatch(stamped)).records.map((r) => r.value!.toString())).toEqual(['v1', 'v2']);
    // A compressed batch keeps its compressed section as it is.
    const z = await buildBatch(records, { ...common, codec: CompressionCodec.zstd });
    expect((await decodeBatch(stampOrigin(z, { region: 'x', offset: 0 }))).records.map((r) => r.value!.toString())).toEqual(['v1', 'v2']);
    // A batch that has an origin already is not stamped again.
    await expectCode(() => stampOrigin(built, { region: 'us-east', offset: 1 }), 'INVALID_ARGUMENT');
  });

  it('carries a 1 MiB value', async () => {
    const big = Buffer.alloc(1 << 20, 7);
    const b = await buildBatch([{ value: big }]);
    const { records } = await decodeBatch(b);
    expect(records[0]!.value!.equals(big)).toBe(true);
  });

  it('splits concatenated batches fed in every split position and skips a partial tail', async () => {
    const a = await buildBatch([{ value: 'a1' }, { value: 'a2' }], { baseOffset: 0 });
    const b = await buildBatch([{ value: 'b1' }], { baseOffset: 2 });
    const all = Buffer.concat([a, b]);
    for (let cut = 0; cut <= all.length; cut++) {
      const parts = splitBatches(all.subarray(0, cut));
      const expectedCount = cut >= a.length + b.length ? 2 : cut >= a.length ? 1 : 0;
      expect(parts).toHaveLength(expectedCount);
    }
    const recs = await decodeBatches(all, 1);
    expect(recs.map((r) => r.value!.toString())).toEqual(['a2', 'b1']);
  });

  describe('rejects damaged batches with CORRUPT_BATCH', () => {
    it('wrong CRC', async () => {
      const b = await buildBatch([{ value: 'hello' }]);
      b[b.length - 2] = b[b.length - 2]! ^ 0xff;
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
    });
    it('length that runs past the buffer', async () => {
      const b = await buildBatch([{ value: 'hello' }]);
      await expectCode(validateBatch(b.subarray(0, b.length - 1), LIMITS), 'CORRUPT_BATCH');
      const longer = Buffer.from(b);
      longer.writeInt32BE(b.length, 8);
      await expectCode(validateBatch(longer, LIMITS), 'CORRUPT_BATCH');
    });
    it('trailing bytes after the batch', async () => {
      const b = await buildBatch([{ value: 'hello' }]);
      await expectCode(validateBatch(Buffer.concat([b, Buffer.from([0])]), LIMITS), 'CORRUPT_BATCH');
    });
    it('bad magic', async () => {
      const b = await buildBatch([{ value: 'hello' }]);
      b[16] = BATCH_MAGIC + 1;
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
    });
    it('record count that does not match the records (CRC recomputed, so only the count is wrong)', async () => {
      const b = await buildBatch([{ value: 'a' }, { value: 'b' }]);
      b.writeInt32BE(3, OFFSET_RECORD_COUNT);
      b.writeInt32BE(2, OFFSET_LAST_OFFSET_DELTA);
      recomputeCrc(b);
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
      b.writeInt32BE(1, OFFSET_RECORD_COUNT);
      b.writeInt32BE(0, OFFSET_LAST_OFFSET_DELTA);
      recomputeCrc(b);
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
    });
    it('compressed records that do not decompress', async () => {
      const b = await buildBatch([{ value: 'x'.repeat(100) }], { codec: CompressionCodec.zstd });
      b.fill(0x41, b.length - 8);
      recomputeCrc(b);
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
    });
    it('a record whose length runs past the section', async () => {
      const b = await buildBatch([{ value: 'abc' }]);
      b[70] = 0x7e; // record length 63, far beyond the 9 bytes present
      recomputeCrc(b);
      await expectCode(validateBatch(b, LIMITS), 'CORRUPT_BATCH');
    });
    it('shorter than a header', async () => {
      await expectCode(validateBatch(Buffer.alloc(20), LIMITS), 'CORRUPT_BATCH');
    });
  });

  it('rejects a batch over messageBytesMax with MESSAGE_TOO_LARGE', async () => {
    const b = await buildBatch([{ value: Buffer.alloc(2000) }]);
    await expectCode(validateBatch(b, { messageBytesMax: 1000 }), 'MESSAGE_TOO_LARGE');
  });
});
