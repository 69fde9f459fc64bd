// Proves murmur2 matches Kafka's Utils.murmur2 test vectors bit for bit, and that keyless records stick to one partition until its batch is sent.
import { describe, expect, it } from 'vitest';
import { murmur2, toPositive } from './murmur2.ts';
import { DefaultPartitioner, partitionForKey } from './partitioner.ts';

describe('murmur2', () => {
  // org.apache.kafka.common.utils.UtilsTest#testMurmur2 (plus sarama's byte vector from the JVM client).
  const vectors: [Uint8Array, number][] = [
    [Buffer.from('21'), -973932308],
    [Buffer.from('foobar'), -790332482],
    [Buffer.from('a-little-bit-long-string'), -985981536],
    [Buffer.from('a-little-bit-longer-string'), -1486304829],
    [Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'), -58897971],
    [Buffer.from([97, 98, 99]), 479470107],
    [Buffer.from([12, 42, 56, 24, 109, 111]), 274204207],
  ];
  for (const [input, want] of vectors) {
    it(`hashes ${JSON.stringify(Buffer.from(input).toString('latin1'))} to ${want}`, () => {
      expect(murmur2(input)).toBe(want);
    });
  }

  it('partitions by toPositive(hash) % count', () => {
    expect(toPositive(-973932308)).toBe(1173551340);
    expect(partitionForKey(Buffer.from('21'), 7)).toBe(1173551340 % 7);
    expect(toPositive(-2147483648)).toBe(0);
  });
});

describe('DefaultPartitioner', () => {
  it('sends keyed records by hash, whatever the stickiness', () => {
    const p = new DefaultPartitioner({ random: () => 0 });
    expect(p.partition({ topic: 't', key: Buffer.from('foobar'), partitionCount: 10 })).toBe(toPositive(-790332482) % 10);
  });

  it('sticks to one partition for keyless records until that batch is sent, then moves to another', () => {
    const draws = [0.5, 0.0];
    const p = new DefaultPartitioner({ random: () => draws.shift() ?? 0.9 });
    const first = p.partition({ topic: 't', key: null, partitionCount: 4 });
    expect(first).toBe(2);
    for (let i = 0; i < 10; i++) expect(p.partition({ topic: 't', key: null, partitionCount: 4 })).toBe(2);
    p.onBatchSent('t', 3); // another partition's batch: no switch
    expect(p.partition({ topic: 't', key: null, partitionCount: 4 })).toBe(2);
    p.onBatchSent('t', 2);
    const next = p.partition({ topic: 't', key: null, partitionCount: 4 });
    expect(next).not.toBe(2);
    expect(next).toBe(0);
  });

  it('never picks the partition just left when others exist', () => {
    const p = new DefaultPartitioner({ random: () => 0.99 });
    let current = p.partition({ topic: 't', key: null, partitionCount: 3 });
    for (let i = 0; i < 20; i++) {
      p.onBatchSent('t', current);
      const next = p.partition({ topic: 't', key: null, partitionCount: 3 });
      expect(next).not.toBe(current);
      current = next;
    }
  });
});
