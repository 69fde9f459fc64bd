/** Proves that LineDecoder splits a stream into lines however it is chunked, and refuses an over-long line before buffering it. */
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { LineDecoder } from './line-decoder.ts';

describe('LineDecoder', () => {
  it('yields the same lines fed whole or one byte at a time', () => {
    const text = Buffer.from('{"a":1}\n\n{"b":"é"}\n{"c":');
    expect(new LineDecoder(100).push(text)).toEqual(['{"a":1}', '', '{"b":"é"}']);
    const d = new LineDecoder(100);
    const lines: string[] = [];
    for (const byte of text) lines.push(...d.push(Buffer.from([byte])));
    expect(lines).toEqual(['{"a":1}', '', '{"b":"é"}']);
    expect(d.push(Buffer.from('3}\n'))).toEqual(['{"c":3}']);
  });

  it('refuses a line longer than the bound, complete or not', () => {
    expect(new LineDecoder(4).push(Buffer.from('1234\n'))).toEqual(['1234']);
    const err = (() => {
      try {
        new LineDecoder(4).push(Buffer.from('12345\n'));
      } catch (e) {
        return e;
      }
    })();
    expect(isEdgeqError(err, 'FRAME_TOO_LARGE')).toBe(true);
    const d = new LineDecoder(4);
    d.push(Buffer.from('123'));
    expect(() => d.push(Buffer.from('45'))).toThrow(/exceeds 4/);
  });
});
