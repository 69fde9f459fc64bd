// Proves the frame decoder and the body decoders never crash or misbehave on hostile bytes: at
// least 100k random and mutated inputs (seeded, seed printed) either decode to well-formed frames
// or fail with a typed EdgeqError, and the decoder never buffers more than its limit.
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../core/index.ts';
import { seededRandom } from '../core/index.ts';
import { randInt, testSeed } from '../testing/index.ts';
import { API_SPECS } from './api.ts';
import { decodeBody, encodeMessage } from './codec.ts';
import { encodeFrame, FRAME_HEADER_BYTES, FrameDecoder } from './frame.ts';

const FRAME_LIMIT = 64 * 1024;
const ROUNDS = 100_000;

function validFrames(rand: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (const spec of API_SPECS) {
    const body = Buffer.alloc(randInt(rand, 0, 200));
    for (let i = 0; i < body.length; i++) body[i] = randInt(rand, 0, 255);
    out.push(encodeFrame({ flags: 0, apiKey: spec.key, apiVersion: 1, correlationId: randInt(rand, -1000, 1000) }, body));
  }
  return out;
}

function mutate(rand: () => number, src: Buffer): Buffer {
  const b = Buffer.from(src);
  const kind = randInt(rand, 0, 4);
  if (kind === 0) {
    for (let i = 0; i < randInt(rand, 1, 4); i++) {
      const at = randInt(rand, 0, b.length - 1);
      b[at] = b[at]! ^ (1 << randInt(rand, 0, 7));
    }
    return b;
  }
  if (kind === 1) return b.subarray(0, randInt(rand, 0, b.length));
  if (kind === 2) {
    b.writeUInt32BE(randInt(rand, 0, 0xffffffff), 0);
    return b;
  }
  if (kind === 3) return Buffer.concat([b, b.subarray(0, randInt(rand, 0, b.length))]);
  const junk = Buffer.alloc(randInt(rand, 1, 64));
  for (let i = 0; i < junk.length; i++) junk[i] = randInt(rand, 0, 255);
  return Buffer.concat([b.subarray(0, randInt(rand, 0, b.length)), junk]);
}

describe('fuzz', () => {
  it(`survives ${ROUNDS} random and mutated streams, split at random points`, () => {
    const seed = testSeed('protocol-fuzz');
    const rand = seededRandom(seed);
    const seeds = validFrames(rand);
    let frames = 0;
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let input: Buffer;
      if (round % 3 === 0) {
        input = Buffer.alloc(randInt(rand, 0, 96));
        for (let i = 0; i < input.length; i++) input[i] = randInt(rand, 0, 255);
      } else {
        input = mutate(rand, seeds[randInt(rand, 0, seeds.length - 1)]!);
      }
      const d = new FrameDecoder({ frameBytesMax: FRAME_LIMIT });
      try {
        let pos = 0;
        while (pos < input.length) {
          const step = randInt(rand, 1, 40);
          for (const f of d.push(input.subarray(pos, pos + step))) {
            frames++;
            expect(f.sizeBytes).toBeGreaterThanOrEqual(FRAME_HEADER_BYTES);
            expect(f.sizeBytes).toBeLessThanOrEqual(FRAME_LIMIT);
            expect(f.body.length).toBe(f.sizeBytes - FRAME_HEADER_BYTES);
          }
          pos += step;
        }
        expect(d.bufferedBytes).toBeLessThanOrEqual(FRAME_LIMIT);
      } catch (err) {
        if (!isEdgeqError(err)) throw err;
        expect(['CORRUPT_FRAME', 'FRAME_TOO_LARGE', 'UNSUPPORTED_VERSION']).toContain(err.code);
        refused++;
      }
    }
    // Both paths were exercised: some inputs still held whole frames, most were refused.
    expect(frames).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(10_000);
  });

  it('decodes random and mutated protobuf bodies of every message without an untyped failure', () => {
    const seed = testSeed('protobuf-fuzz');
    const rand = seededRandom(seed);
    const types = API_SPECS.flatMap((s) => [s.requestType, s.responseType]);
    const samples = [
      encodeMessage('ProduceRequest', { acks: 3, timeoutMs: 100, topics: [{ name: 't', partitions: [{ partition: 1, records: Buffer.from('abc') }] }] }),
      encodeMessage('FetchRequest', { maxWaitMs: 10, topics: [{ name: 'x', partitions: [{ partition: 0, fetchOffset: 5, maxBytes: 9 }] }] }),
      encodeMessage('JoinGroupRequest', { groupId: 'g', protocols: [{ name: 'range', metadata: Buffer.from([1, 2]) }] }),
    ];
    let ok = 0;
    let refused = 0;
    for (let round = 0; round < 20_000; round++) {
      const type = types[randInt(rand, 0, types.length - 1)]!;
      const body = round % 2 === 0 ? mutate(rand, Buffer.from(samples[randInt(rand, 0, samples.length - 1)]!)) : Buffer.from(Array.from({ length: randInt(rand, 0, 64) }, () => randInt(rand, 0, 255)));
      try {
        decodeBody(type, body);
        ok++;
      } catch (err) {
        if (!isEdgeqError(err)) throw err;
        expect(err.code).toBe('INVALID_REQUEST');
        refused++;
      }
    }
    expect(ok).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});
