// Proves the zigzag varint and int64 helpers round-trip every size class and reject truncated or
// over-long input.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../core/errors.ts';
import { readInt64, readVarint, unzigzag, varintSize, writeInt64, writeVarint, zigzag } from './varint.ts';

const VALUES = [0, -1, 1, -64, 63, 64, -65, 127, 128, 300, -300, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 2 ** 40 + 5, -(2 ** 40), 2 ** 52, -(2 ** 52)];

describe('varint', () => {
  it('zigzags small magnitudes to small numbers', () => {
    expect([0, -1, 1, -2, 2].map(zigzag)).toEqual([0, 1, 2, 3, 4]);
    for (const v of VALUES) expect(unzigzag(zigzag(v))).toBe(v);
  });

  it('encodes known byte sequences', () => {
    const buf = Buffer.alloc(10);
    expect(buf.subarray(0, writeVarint(buf, 0, 0))).toEqual(Buffer.from([0x00]));
    expect(buf.subarray(0, writeVarint(buf, 0, -1))).toEqual(Buffer.from([0x01]));
    expect(buf.subarray(0, writeVarint(buf, 0, 64))).toEqual(Buffer.from([0x80, 0x01]));
    expect(buf.subarray(0, writeVarint(buf, 0, 150))).toEqual(Buffer.from([0xac, 0x02]));
  });

  it('round-trips every size class and agrees with varintSize', () => {
    const buf = Buffer.alloc(10);
    const out = { value: 0, next: 0 };
    for (const v of VALUES) {
      const end = writeVarint(buf, 0, v);
      expect(end).toBe(varintSize(v));
      readVarint(buf, 0, end, out);
      expect(out).toEqual({ value: v, next: end });
    }
  });

  it('rejects a varint cut short, fed one byte at a time', () => {
    const buf = Buffer.alloc(10);
    const end = writeVarint(buf, 0, 2 ** 40);
    for (let cut = 0; cut < end; cut++) {
      try {
        readVarint(buf, 0, cut, { value: 0, next: 0 });
        expect.unreachable();
      } catch (err) {
        expect(isEdgeqError(err, 'CORRUPT_BATCH')).toBe(true);
      }
    }
  });

  it('rejects a varint longer than ten bytes', () => {
    const buf = Buffer.alloc(12, 0xff);
    expect(() => readVarint(buf, 0, 12, { value: 0, next: 0 })).toThrow(/longer than 10/);
  });

  it('round-trips int64 including negatives', () => {
    const buf = Buffer.alloc(8);
    for (const v of [0, 1, -1, 2 ** 32, -(2 ** 32) - 7, 2 ** 53 - 1, -(2 ** 53 - 1)]) {
      writeInt64(buf, 0, v);
      expect(readInt64(buf, 0)).toBe(v);
      expect(buf.readBigInt64BE(0)).toBe(BigInt(v));
    }
  });
});
