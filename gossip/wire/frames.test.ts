// Proves the push-pull frame decoder over split buffers: one byte at a time, several frames per
// chunk, a prefix split across chunks, empty and 1 MiB frames, and a length over the bound
// refused before its bytes are buffered (and for good).
import { describe, expect, it } from 'vitest';
import { isEdgeqError, seededRandom } from '../../src/core/index.ts';
import { encodeFrame, FrameDecoder } from './frames.ts';

describe('FrameDecoder', () => {
  const frames = [Buffer.from('a'), Buffer.alloc(0), Buffer.from('hello world'), Buffer.alloc(300, 7)];
  const stream = Buffer.concat(frames.map(encodeFrame));

  it('encodes a frame as a big-endian u32 length and the payload', () => {
    expect([...encodeFrame(Buffer.from([9, 8]))]).toEqual([0, 0, 0, 2, 9, 8]);
  });

  it('decodes a stream fed one byte at a time', () => {
    const d = new FrameDecoder(1024);
    const out: Buffer[] = [];
    for (const byte of stream) out.push(...d.push(Buffer.from([byte])));
    expect(out).toEqual(frames);
    expect(d.bufferedBytes).toBe(0);
  });

  it('decodes a stream in one chunk and in random splits', () => {
    expect(new FrameDecoder(1024).push(stream)).toEqual(frames);
    const random = seededRandom(42);
    for (let round = 0; round < 50; round++) {
      const d = new FrameDecoder(1024);
      const out: Buffer[] = [];
      for (let at = 0; at < stream.length; ) {
        const n = 1 + Math.floor(random() * 20);
        out.push(...d.push(stream.subarray(at, at + n)));
        at += n;
      }
      expect(out).toEqual(frames);
    }
  });

  it('decodes a 1 MiB frame split in 64 KiB chunks', () => {
    const big = Buffer.alloc(1 << 20, 3);
    const s = encodeFrame(big);
    const d = new FrameDecoder(1 << 20);
    const out: Buffer[] = [];
    for (let at = 0; at < s.length; at += 65536) out.push(...d.push(s.subarray(at, at + 65536)));
    expect(out).toHaveLength(1);
    expect(out[0]!.equals(big)).toBe(true);
  });

  it('refuses a length over the bound from its prefix alone, and keeps refusing', () => {
    const d = new FrameDecoder(100);
    expect(d.push(Buffer.from([0, 0]))).toEqual([]);
    let caught: unknown;
    try {
      d.push(Buffer.from([0, 101]));
    } catch (err) {
      caught = err;
    }
    expect(isEdgeqError(caught, 'FRAME_TOO_LARGE')).toBe(true);
    expect(d.bufferedBytes).toBe(0);
    expect(() => d.push(encodeFrame(Buffer.from('ok')))).toThrow(/over frameBytesMax/);
  });

  it('accepts a frame of exactly the bound', () => {
    expect(new FrameDecoder(100).push(encodeFrame(Buffer.alloc(100)))).toHaveLength(1);
  });
});
