// Proves the step record's bytes are exactly the documented layout and that bad input is refused with INVALID_DATA.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../core/index.ts';
import { decodeIngressStep, encodeIngressStep, INGRESS_STEP_VALUE_BYTES, type IngressStepRecord } from './codec.ts';

const step: IngressStepRecord = { member: 'gw-1', t: 1_700_000_040_000, stepMs: 60_000, records: 1.5, recordsMax: 4, bytes: 256, bytesMax: 1024 };

describe('ingress step codec', () => {
  it('encodes byte by byte', () => {
    const r = encodeIngressStep(step);
    expect(r.key.toString('hex')).toBe(Buffer.from('gw-1').toString('hex'));
    expect(r.timestamp).toBe(step.t);
    const want = Buffer.concat([
      Buffer.from([1]),
      (() => { const b = Buffer.alloc(8); b.writeBigInt64BE(1_700_000_040_000n); return b; })(),
      Buffer.from([0x00, 0x00, 0xea, 0x60]),
      Buffer.from('3ff8000000000000', 'hex'),
      Buffer.from('4010000000000000', 'hex'),
      Buffer.from('4070000000000000', 'hex'),
      Buffer.from('4090000000000000', 'hex'),
    ]);
    expect(r.value.length).toBe(INGRESS_STEP_VALUE_BYTES);
    expect(r.value.toString('hex')).toBe(want.toString('hex'));
    expect(decodeIngressStep(r.key, r.value)).toEqual(step);
  });

  it('refuses truncated, padded, garbage and unknown versions', () => {
    const { key, value } = encodeIngressStep(step);
    const cases: [Uint8Array | null, Uint8Array | null][] = [
      [null, value],
      [Buffer.alloc(0), value],
      [Buffer.alloc(257, 0x61), value],
      [key, null],
      [key, Buffer.alloc(0)],
      ...Array.from({ length: INGRESS_STEP_VALUE_BYTES - 1 }, (_, n) => [key, value.subarray(0, n + 1)] as [Buffer, Buffer]),
      [key, Buffer.concat([value, Buffer.from([0])])],
      [key, Buffer.concat([Buffer.from([2]), value.subarray(1)])],
      [key, Buffer.alloc(INGRESS_STEP_VALUE_BYTES, 0xff)],
    ];
    for (const [k, v] of cases) {
      let err: unknown = null;
      try {
        decodeIngressStep(k, v);
      } catch (e) {
        err = e;
      }
      expect(isEdgeqError(err, 'INVALID_DATA'), `key ${k?.length} value ${v?.length}`).toBe(true);
    }
    // A t that is not a multiple of the step, a negative rate, NaN.
    const mut = (at: number, write: (b: Buffer) => void) => {
      const b = Buffer.from(value);
      write(b.subarray(at));
      return b;
    };
    for (const v of [mut(1, (b) => b.writeBigInt64BE(1_700_000_040_001n)), mut(13, (b) => b.writeDoubleBE(-1)), mut(21, (b) => b.writeDoubleBE(Number.NaN)), mut(9, (b) => b.writeUInt32BE(0))]) {
      expect(() => decodeIngressStep(key, v)).toThrow(/ingress history record/);
    }
  });

  it('refuses to encode a bad step', () => {
    for (const bad of [{ ...step, member: '' }, { ...step, t: step.t + 1 }, { ...step, records: -1 }, { ...step, bytesMax: Infinity }, { ...step, stepMs: 0 }]) {
      expect(() => encodeIngressStep(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});
