// Proves batches form by size (batchBytesMax) and become ready by size, by lingerMs on a fake clock, or by flush; that a sealed (pre-encoded) batch takes no records and is ready at once; and that expired batches are removed oldest first.
import { describe, expect, it } from 'vitest';
import { EdgeqError, FakeClock } from '../core/index.ts';
import { buildBatch, CompressionCodec, decodeBatch } from '../log/index.ts';
import { estimateRecordBytes, RecordAccumulator } from './accumulator.ts';

const rec = (n: number) => ({ value: 'x'.repeat(n) });

describe('RecordAccumulator', () => {
  it('is not ready before lingerMs and ready at it', () => {
    const clock = new FakeClock();
    const acc = new RecordAccumulator({ lingerMs: 20, batchBytesMax: 1000, clock });
    acc.append('t', 0, rec(10), 31);
    clock.advance(19);
    let r = acc.ready(false);
    expect(r.ready).toEqual([]);
    expect(r.nextReadyMs).toBe(1);
    clock.advance(1);
    r = acc.ready(false);
    expect(r.ready).toEqual([{ topic: 't', partition: 0 }]);
  });

  it('starts a new batch when the next record would pass batchBytesMax, and the full one is ready at once', () => {
    const clock = new FakeClock();
    const acc = new RecordAccumulator({ lingerMs: 10_000, batchBytesMax: 100, clock });
    acc.append('t', 0, rec(10), 40);
    acc.append('t', 0, rec(10), 40);
    expect(acc.size).toBe(1);
    expect(acc.ready(false).ready).toEqual([]);
    acc.append('t', 0, rec(10), 40); // 120 > 100: new batch
    expect(acc.size).toBe(2);
    expect(acc.ready(false).ready).toEqual([{ topic: 't', partition: 0 }]);
    const head = acc.drain('t', 0)!;
    expect(head.count).toBe(2);
    expect(acc.ready(false).ready).toEqual([]); // the second one lingers
  });

  it('gives an oversized record a batch of its own, ready at once', () => {
    const acc = new RecordAccumulator({ lingerMs: 10_000, batchBytesMax: 100, clock: new FakeClock() });
    acc.append('t', 1, rec(500), 521);
    expect(acc.ready(false).ready).toEqual([{ topic: 't', partition: 1 }]);
  });

  it('queues a sealed batch behind the open one, ready at once, and starts a new batch after it', () => {
    const acc = new RecordAccumulator({ lingerMs: 10_000, batchBytesMax: 1000, clock: new FakeClock() });
    acc.append('t', 0, rec(1), 22);
    acc.appendSealed('t', 0, Buffer.alloc(70), 3);
    acc.append('t', 0, rec(1), 22);
    expect(acc.size).toBe(3);
    expect(acc.ready(false).ready).toEqual([{ topic: 't', partition: 0 }]);
    expect(acc.drain('t', 0)!.count).toBe(1);
    const sealed = acc.drain('t', 0)!;
    expect([sealed.count, sealed.sizeBytes, sealed.sealed?.bytes.length]).toEqual([3, 70, 70]);
    expect(acc.ready(false).ready).toEqual([]); // the record after it lingers in its own batch
    expect(acc.drain('t', 0)!.count).toBe(1);
  });

  it('removes expired batches oldest first and keeps the rest queued', () => {
    const clock = new FakeClock();
    const acc = new RecordAccumulator({ lingerMs: 10_000, batchBytesMax: 30, clock });
    acc.append('t', 0, rec(10), 25);
    clock.advance(10);
    acc.append('t', 0, rec(10), 25);
    acc.append('u', 1, rec(10), 25);
    const now = clock.monotonicMs();
    const gone = acc.removeExpired(now - 1);
    expect(gone.map((b) => [b.topic, b.createdMs])).toEqual([['t', now - 10]]);
    expect(acc.size).toBe(2);
    expect(acc.removeExpired(now)).toHaveLength(2);
    expect(acc.size).toBe(0);
    expect(acc.ready(true).ready).toEqual([]);
  });

  it('makes every head ready when flushing', () => {
    const acc = new RecordAccumulator({ lingerMs: 10_000, batchBytesMax: 1000, clock: new FakeClock() });
    acc.append('a', 0, rec(1), 22);
    acc.append('b', 3, rec(1), 22);
    expect(acc.ready(false).ready).toEqual([]);
    expect(acc.ready(true).ready).toHaveLength(2);
  });

  it('resolves records with consecutive offsets, or rejects them all', async () => {
    const acc = new RecordAccumulator({ lingerMs: 0, batchBytesMax: 1000, clock: new FakeClock() });
    const a = acc.append('t', 0, rec(1), 22).result;
    const b = acc.append('t', 0, rec(1), 22).result;
    acc.drain('t', 0)!.complete(40);
    expect(await a).toEqual({ topic: 't', partition: 0, offset: 40 });
    expect(await b).toEqual({ topic: 't', partition: 0, offset: 41 });
  });

  it('splits a batch into halves that take over its records, answers, budget share and sequences', async () => {
    const acc = new RecordAccumulator({ lingerMs: 0, batchBytesMax: 10_000, clock: new FakeClock() });
    const results = [0, 1, 2, 3, 4].map((i) => acc.append('t', 0, rec(10 + i), 31 + i).result);
    const whole = acc.drain('t', 0)!;
    whole.baseSequence = 100;
    whole.producerId = 7;
    whole.producerEpoch = 2;
    whole.attempts = 1;
    const [a, b] = whole.splitInTwo();
    expect([a.count, b.count]).toEqual([3, 2]);
    expect(a.sizeBytes + b.sizeBytes).toBe(whole.sizeBytes);
    expect([a.baseSequence, b.baseSequence]).toEqual([100, 103]);
    expect([a.producerId, b.producerEpoch, a.seq, b.seq]).toEqual([7, 2, whole.seq, whole.seq]);
    expect(a.records.map((r) => (r.value as string).length)).toEqual([10, 11, 12]);
    // The original answers no one itself, and is done only once both halves are.
    whole.complete(0);
    let wholeDone = false;
    void whole.done.then(() => (wholeDone = true));
    a.complete(50);
    await a.done;
    await Promise.resolve();
    expect(wholeDone).toBe(false);
    b.fail(new EdgeqError('REQUEST_TIMED_OUT', 'late'));
    await whole.done;
    const settled = await Promise.allSettled(results);
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value.offset : (r.reason as EdgeqError).code))).toEqual([50, 51, 52, 'REQUEST_TIMED_OUT', 'REQUEST_TIMED_OUT']);
    expect(() => a.splitInTwo()).toThrow(/only an open batch/);
    const single = new RecordAccumulator({ lingerMs: 0, batchBytesMax: 10_000, clock: new FakeClock() });
    void single.append('t', 0, rec(1), 22).result;
    expect(() => single.drain('t', 0)!.splitInTwo()).toThrow(/two or more/);
  });

  it('drains alike sealed batches as one merged batch within the bound, and answers each from its offset', async () => {
    const acc = new RecordAccumulator({ lingerMs: 0, batchBytesMax: 1_000_000, clock: new FakeClock(), mergeSealed: true });
    const plain = await Promise.all([1, 2, 3].map((n) => buildBatch(Array.from({ length: n }, (_, i) => ({ value: `v${n}-${i}` })), { nowMs: 5 })));
    const lz4 = await buildBatch([{ value: 'c' }], { codec: CompressionCodec.lz4, nowMs: 5 });
    const results = [...plain, lz4, plain[0]!].map((b) => acc.appendSealed('t', 0, b, b.readInt32BE(57)).result);
    // A bound that fits the first two only.
    const first = acc.drain('t', 0, plain[0]!.length + plain[1]!.length)!;
    expect(first.count).toBe(3);
    expect(first.parts).toHaveLength(2);
    const second = acc.drain('t', 0)!;
    expect([second.count, second.parts]).toEqual([3, null]);
    // The compressed batch is not merged, nor is anything across it.
    expect(acc.drain('t', 0)!.sealed!.bytes).toBe(lz4);
    expect(acc.drain('t', 0)!.count).toBe(1);
    first.complete(100);
    expect((await results[0]!).offset).toBe(100);
    expect((await results[1]!).offset).toBe(101);
    const recordsBack = (await decodeBatch(first.sealed!.bytes)).records.map((r) => r.value!.toString());
    expect(recordsBack).toEqual(['v1-0', 'v2-0', 'v2-1']);
  });

  it('estimates record bytes from payload and headers', () => {
    expect(estimateRecordBytes({ value: 'abc' })).toBe(24);
    expect(estimateRecordBytes({ key: 'k', value: null, headers: { h: 'v' } })).toBe(21 + 1 + 12);
  });
});
