// Proves the frame codec's byte layout, that frames decode the same however the stream is split,
// and that every malformed frame is refused with a typed error instead of being misread.
import { describe, expect, it } from 'vitest';
import { crc32c } from '../core/index.ts';
import {
  encodeFrame,
  FLAG_ERROR,
  FLAG_RESPONSE,
  FRAME_HEADER_BYTES,
  FRAME_MAGIC,
  FrameDecoder,
  parseFrame,
  PROTOCOL_VERSION,
  type Frame,
} from './frame.ts';

const header = { flags: FLAG_RESPONSE, apiKey: 0x0102, apiVersion: 0x0304, correlationId: -2 };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

describe('frame layout', () => {
  it('writes every header field at its documented position', () => {
    const body = Buffer.from([0xaa, 0xbb, 0xcc]);
    const f = encodeFrame(header, body);
    expect(f.length).toBe(FRAME_HEADER_BYTES + 3);
    const expected = Buffer.from([
      0x00, 0x00, 0x00, 0x13, // length = 19 bytes after the length field
      0, 0, 0, 0, // crc (checked below)
      0xe0, 0x51, // magic
      PROTOCOL_VERSION,
      FLAG_RESPONSE,
      0x01, 0x02, // api key
      0x03, 0x04, // api version
      0xff, 0xff, 0xff, 0xfe, // correlation id -2
      0xaa, 0xbb, 0xcc,
    ]);
    expected.writeUInt32BE(crc32c(expected.subarray(8)), 4);
    expect(f.equals(expected)).toBe(true);
    expect(FRAME_MAGIC).toBe(0xe051);
  });

  it('round-trips through parseFrame', () => {
    const f = parseFrame(encodeFrame(header, Buffer.from('hello')));
    expect(f).toMatchObject({ ...header, sizeBytes: FRAME_HEADER_BYTES + 5 });
    expect(f.body.toString()).toBe('hello');
  });
});

describe('FrameDecoder on split buffers', () => {
  const frames = [
    encodeFrame({ flags: 0, apiKey: 1, apiVersion: 1, correlationId: 1 }, Buffer.alloc(0)),
    encodeFrame({ flags: 0, apiKey: 2, apiVersion: 1, correlationId: 2 }, Buffer.from('x'.repeat(100))),
    encodeFrame({ flags: FLAG_ERROR | FLAG_RESPONSE, apiKey: 3, apiVersion: 1, correlationId: 3 }, Buffer.alloc(1024 * 1024, 7)),
  ];
  const stream = Buffer.concat(frames);

  const check = (got: Frame[]) => {
    expect(got.map((f) => f.correlationId)).toEqual([1, 2, 3]);
    expect(got[1]!.body.toString()).toBe('x'.repeat(100));
    expect(got[2]!.body.length).toBe(1024 * 1024);
    expect(got[2]!.body.every((b) => b === 7)).toBe(true);
  };

  it('decodes the stream fed in one piece', () => {
    check(new FrameDecoder().push(stream));
  });

  it('decodes the small frames fed one byte at a time', () => {
    const small = Buffer.concat(frames.slice(0, 2));
    const d = new FrameDecoder();
    const got: Frame[] = [];
    for (let i = 0; i < small.length; i++) got.push(...d.push(small.subarray(i, i + 1)));
    expect(got.map((f) => f.correlationId)).toEqual([1, 2]);
    expect(d.bufferedBytes).toBe(0);
  });

  it('decodes the stream split at every boundary around the headers and in chunks of odd sizes', () => {
    for (const cut of [1, 2, 3, 4, 5, 19, 20, 21, 24, 119, 120, 121, 140, 141]) {
      const d = new FrameDecoder();
      check([...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))]);
    }
    for (const size of [7, 4096, 65_537]) {
      const d = new FrameDecoder();
      const got: Frame[] = [];
      for (let i = 0; i < stream.length; i += size) got.push(...d.push(stream.subarray(i, i + size)));
      check(got);
    }
  });
});

describe('bad frames', () => {
  const good = encodeFrame({ flags: 0, apiKey: 1, apiVersion: 1, correlationId: 9 }, Buffer.from('body'));

  it('refuses a length over the limit from the length field alone', () => {
    const d = new FrameDecoder({ frameBytesMax: 1024 });
    const len = Buffer.alloc(4);
    len.writeUInt32BE(2000);
    expect(codeOf(() => d.push(len))).toBe('FRAME_TOO_LARGE');
    // The decoder stays broken: the stream cannot be resynchronised.
    expect(codeOf(() => d.push(good))).toBe('FRAME_TOO_LARGE');
  });

  it('refuses a length shorter than the header', () => {
    const b = Buffer.from(good);
    b.writeUInt32BE(3, 0);
    expect(codeOf(() => new FrameDecoder().push(b))).toBe('CORRUPT_FRAME');
  });

  it('refuses a flipped bit anywhere after the CRC field', () => {
    for (let i = 4; i < good.length; i++) {
      const b = Buffer.from(good);
      b[i] = b[i]! ^ 0x10;
      expect(codeOf(() => new FrameDecoder().push(b)), `byte ${i}`).toBe('CORRUPT_FRAME');
    }
  });

  it('refuses a bad magic, an unknown protocol version and unknown flags even with a valid CRC', () => {
    const withCrc = (mutate: (b: Buffer) => void) => {
      const b = Buffer.from(good);
      mutate(b);
      b.writeUInt32BE(crc32c(b.subarray(8)), 4);
      return b;
    };
    expect(codeOf(() => parseFrame(withCrc((b) => b.writeUInt16BE(0x1234, 8))))).toBe('CORRUPT_FRAME');
    expect(codeOf(() => parseFrame(withCrc((b) => b.writeUInt8(9, 10))))).toBe('UNSUPPORTED_VERSION');
    expect(codeOf(() => parseFrame(withCrc((b) => b.writeUInt8(0x80, 11))))).toBe('CORRUPT_FRAME');
  });

  it('keeps a truncated frame buffered without emitting anything', () => {
    const d = new FrameDecoder();
    expect(d.push(good.subarray(0, good.length - 1))).toEqual([]);
    expect(d.bufferedBytes).toBe(good.length - 1);
    expect(d.push(good.subarray(good.length - 1)).length).toBe(1);
  });
});
