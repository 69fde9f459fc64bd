// Proves against a real broker that produced records come back intact under every codec and acks level, that a retried idempotent batch is not written twice, and that a bad record fails only its own send.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatch, CompressionCodec, decodeBatch, splitBatches, validateBatchHeader } from '../log/index.ts';
import { createClient, type Consumer, type ConsumerRecord } from './index.ts';
import { FaultProxy, TestBroker } from './test-support.ts';
import { eventually } from '../testing/index.ts';
import { createLogger } from '../core/index.ts';

let tb: TestBroker;
beforeAll(async () => {
  tb = await TestBroker.start();
});
afterAll(async () => tb?.stop());

async function readAll(consumer: Consumer, count: number): Promise<ConsumerRecord[]> {
  const out: ConsumerRecord[] = [];
  for (let i = 0; i < 100 && out.length < count; i++) out.push(...(await consumer.poll({ timeoutMs: 500 })));
  return out;
}

/** A one-partition topic reached through a proxy that loses the answer to the `nth` Produce, after the broker wrote it. */
async function topicLosingAnswer(topic: string, nth: number): Promise<{ proxy: FaultProxy; client: ReturnType<typeof createClient> }> {
  const admin = createClient({ brokers: [tb.address] }).admin();
  await admin.createTopics([{ name: topic, partitions: 1 }]);
  await admin.close();
  const proxy = await FaultProxy.start({ host: tb.broker.host, port: tb.broker.port });
  let producesSeen = 0;
  proxy.dropRule = (api) => api === 'Produce' && ++producesSeen === nth;
  return { proxy, client: createClient({ brokers: [proxy.address], reconnectBackoffMs: 10 }) };
}

describe('producer → consumer round trip', () => {
  for (const compression of ['none', 'snappy', 'lz4', 'zstd'] as const) {
    it(`keeps keys, values, headers and order with ${compression}`, async () => {
      const client = createClient({ brokers: [tb.address] });
      const topic = `rt-${compression}`;
      await client.admin().createTopics([{ name: topic, partitions: 3 }]);
      const producer = client.producer({ compression, lingerMs: 2 });
      const records = Array.from({ length: 200 }, (_, i) => ({ key: `k${i % 7}`, value: `value-${i}-${'x'.repeat(i % 50)}`, headers: { n: String(i) } }));
      const sent = (await Promise.all(records.map((r) => producer.send(topic, r)))).flat();
      const consumer = client.consumer({ groupId: `g-${compression}`, fromBeginning: true });
      consumer.subscribe(topic);
      const got = await readAll(consumer, 200);
      expect(got).toHaveLength(200);
      for (const r of got) {
        const i = Number(r.headers[0]!.value!.toString());
        expect(r.value!.toString()).toBe(records[i]!.value);
        expect(r.key!.toString()).toBe(records[i]!.key);
        expect({ partition: r.partition, offset: r.offset }).toEqual({ partition: sent[i]!.partition, offset: sent[i]!.offset });
      }
      // Same key → same partition, in send order.
      for (let p = 0; p < 3; p++) {
        const offsets = got.filter((r) => r.partition === p).map((r) => r.offset);
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      }
      await client.close();
    });
  }

  it('acks 0 and acks 1 deliver too (acks 0 reports offset -1)', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'acks', partitions: 1 }]);
    const p0 = client.producer({ acks: 0 });
    const p1 = client.producer({ acks: 1 });
    expect((await p0.send('acks', { value: 'zero' }))[0]!.offset).toBe(-1);
    await p0.flush();
    expect((await p1.send('acks', { value: 'one' }))[0]!.offset).toBeGreaterThanOrEqual(0);
    const consumer = client.consumer();
    consumer.assign([{ topic: 'acks', partition: 0 }]);
    consumer.seek('acks', 0, 0);
    const got = await readAll(consumer, 2);
    expect(got.map((r) => r.value!.toString()).sort()).toEqual(['one', 'zero']);
    await client.close();
  });
});

describe('idempotence', () => {
  it('a batch retried after its answer was lost is written once, with its original offsets', async () => {
    // Lose the answer to the 2nd Produce after the broker wrote it: the client must retry.
    const { proxy, client } = await topicLosingAnswer('idem', 2);
    const producer = client.producer({ lingerMs: 0, retryBackoffMs: 10 });
    const first = await producer.send('idem', [{ value: 'a' }, { value: 'b' }]);
    const second = await producer.send('idem', [{ value: 'c' }, { value: 'd' }]);
    const third = await producer.send('idem', { value: 'e' });
    expect(proxy.dropped).toEqual(['Produce']);
    expect([...first, ...second, ...third].map((m) => m.offset)).toEqual([0, 1, 2, 3, 4]);
    const consumer = createClient({ brokers: [tb.address] }).consumer();
    consumer.assign([{ topic: 'idem', partition: 0 }]);
    consumer.seek('idem', 0, 0);
    const got = await readAll(consumer, 5);
    expect(got.map((r) => r.value!.toString())).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Nothing after them: the retry was not appended again.
    expect(await consumer.poll({ timeoutMs: 200 })).toEqual([]);
    await consumer.close();
    await client.close();
    await proxy.close();
  });

  it('without idempotence the same lost answer does write a duplicate (the test can tell)', async () => {
    const { proxy, client } = await topicLosingAnswer('not-idem', 1);
    const producer = client.producer({ idempotent: false, lingerMs: 0, retryBackoffMs: 10 });
    await producer.send('not-idem', { value: 'once' });
    const consumer = createClient({ brokers: [tb.address] }).consumer();
    consumer.assign([{ topic: 'not-idem', partition: 0 }]);
    consumer.seek('not-idem', 0, 0);
    const got = await readAll(consumer, 2);
    expect(got.map((r) => r.value!.toString())).toEqual(['once', 'once']);
    await consumer.close();
    await client.close();
    await proxy.close();
  });
  it('a retry that may have been written is not sent again under a bumped epoch: it fails indeterminate, and is written once', async () => {
    // Partition 0's answer is lost after the write, so its batch waits in the retries (2 s of
    // backoff); meanwhile partition 1 fails for good (too large), which bumps the epoch. Sent again
    // under the new epoch the broker would take the batch as new: the value would be there twice.
    const topic = 'idem-bump';
    const admin = createClient({ brokers: [tb.address] }).admin();
    await admin.createTopics([{ name: topic, partitions: 2, config: { 'max.message.bytes': '2000' } }]);
    await admin.close();
    const proxy = await FaultProxy.start({ host: tb.broker.host, port: tb.broker.port });
    let produces = 0;
    proxy.dropRule = (api) => api === 'Produce' && ++produces === 1;
    // The producer's debug log says when it has taken the lost answer and queued the retry.
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } });
    const client = createClient({ brokers: [proxy.address], reconnectBackoffMs: 10, logger });
    // Backoff is full jitter (random × 2 s): pinned near its top, so the retry waits ~2 s for sure
    // (CI drew a short one, and the retry went out under the old epoch before the bump).
    const producer = client.producer({ lingerMs: 0, retryBackoffMs: 2_000, retryBackoffMsMax: 2_000, random: () => 0.999 });
    const first = producer.send(topic, { value: 'once' }, { partition: 0 }).then(
      () => null,
      (e: unknown) => e,
    );
    await eventually(() => lines.some((l) => l.includes('retrying batch') && l.includes('"partition":0')), 10_000, 'the retry of the lost answer');
    expect(proxy.dropped).toEqual(['Produce']);
    await expect(producer.send(topic, { value: 'w'.repeat(3_000) }, { partition: 1 })).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    const err = await first;
    expect(err).toMatchObject({ code: 'REQUEST_TIMED_OUT' });
    expect((err as { details: Record<string, unknown> }).details['written']).toBeUndefined();
    // The producer goes on under its new epoch.
    const [next] = await producer.send(topic, { value: 'next' }, { partition: 0 });
    expect(next!.offset).toBe(1);
    const consumer = createClient({ brokers: [tb.address] }).consumer();
    consumer.assign([{ topic, partition: 0 }]);
    consumer.seek(topic, 0, 0);
    const got = await readAll(consumer, 2);
    expect(got.map((r) => r.value!.toString())).toEqual(['once', 'next']);
    expect(await consumer.poll({ timeoutMs: 200 })).toEqual([]);
    await consumer.close();
    await client.close();
    await proxy.close();
  });
});

describe('sendBatch (an encoded batch passed through)', () => {
  it('keeps order with send(), stamps its own producer id and sequence, and writes a retried batch once', async () => {
    // Lose the answer to the Produce carrying the pre-built batch: the retry must not duplicate it.
    const { proxy, client } = await topicLosingAnswer('sealed', 2);
    const producer = client.producer({ lingerMs: 0, retryBackoffMs: 10 });
    // A client-built batch claiming some other producer's identity: the producer must overwrite it.
    const foreign = await buildBatch([{ value: 'b1' }, { value: 'b2' }, { value: 'b3' }], { producerId: 999, producerEpoch: 7, baseSequence: 42 });
    const [a, b, c] = await Promise.all([
      producer.send('sealed', { value: 'a' }, { partition: 0 }),
      producer.sendBatch('sealed', 0, foreign),
      producer.send('sealed', { value: 'c' }, { partition: 0 }),
    ]);
    expect(proxy.dropped).toEqual(['Produce']);
    expect([a![0]!.offset, b!.offset, c![0]!.offset]).toEqual([0, 1, 4]);
    const consumer = createClient({ brokers: [tb.address] }).consumer();
    consumer.assign([{ topic: 'sealed', partition: 0 }]);
    consumer.seek('sealed', 0, 0);
    const got = await readAll(consumer, 5);
    expect(got.map((r) => r.value!.toString())).toEqual(['a', 'b1', 'b2', 'b3', 'c']);
    expect(await consumer.poll({ timeoutMs: 200 })).toEqual([]);
    // The stored batch carries the producer's own identity, with a valid CRC (decodeBatch read it).
    const stored = await tb.broker.topics.partition('sealed', 0).log.read(1, 1 << 20);
    const { header } = await decodeBatch(splitBatches(stored.bytes)[0]!);
    expect(header.producerId).toBe(producer.identity.producerId);
    expect(header.producerEpoch).toBe(producer.identity.producerEpoch);
    expect(header.baseSequence).toBe(1);
    expect(header.recordCount).toBe(3);
    await consumer.close();
    await client.close();
    await proxy.close();
  });

  /** Every stored batch of partition 0 of `topic`: [record count, bytes]. */
  async function storedBatches(topic: string): Promise<[number, number][]> {
    const out: [number, number][] = [];
    const log = tb.broker.topics.partition(topic, 0).log;
    for (let offset = 0; offset < log.logEndOffset; ) {
      const r = await log.read(offset, 1 << 20);
      for (const b of splitBatches(r.bytes)) out.push([(await decodeBatch(b)).header.recordCount, b.length]);
      offset = r.nextOffset;
    }
    return out;
  }

  for (const idempotent of [false, true]) {
    it(`merges queued batches of a partition into one, each call answered with its own offset; a lost answer writes nothing twice (idempotent: ${idempotent})`, async () => {
      const topic = `merge-${idempotent}`;
      // Lose the answer to the second Produce (a merged one): only idempotence makes its retry safe.
      const { proxy, client } = await topicLosingAnswer(topic, idempotent ? 2 : 0);
      const producer = client.producer({ acks: idempotent ? 'all' : 1, idempotent, inflightPerPartitionMax: 1, mergeSealedBatches: true, retryBackoffMs: 10 });
      const sizes = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
      const batches = await Promise.all(sizes.map((n, i) => buildBatch(Array.from({ length: n }, (_, j) => ({ key: `k${i}`, value: `b${i}-r${j}`, headers: { i: String(i) }, timestamp: 1_000 + i * 10 + j })))));
      // A compressed batch in the middle is sent as it is, between merged runs.
      batches.splice(5, 0, await buildBatch([{ value: 'z-0' }, { value: 'z-1' }], { codec: CompressionCodec.lz4 }));
      sizes.splice(5, 0, 2);
      const answers = await Promise.all(batches.map((b) => producer.sendBatch(topic, 0, b)));
      const starts = sizes.map((_, i) => sizes.slice(0, i).reduce((a, b) => a + b, 0));
      expect(answers.map((a) => a.offset)).toEqual(starts);
      const total = sizes.reduce((a, b) => a + b, 0);
      const stored = await storedBatches(topic);
      expect(stored.reduce((n, [count]) => n + count, 0)).toBe(total);
      expect(stored.length).toBeLessThan(batches.length);
      if (idempotent) expect(proxy.dropped).toEqual(['Produce']);
      const consumer = createClient({ brokers: [tb.address] }).consumer();
      consumer.assign([{ topic, partition: 0 }]);
      consumer.seek(topic, 0, 0);
      const got = await readAll(consumer, total);
      const expected = (await Promise.all(batches.map(async (b) => (await decodeBatch(b)).records))).flat();
      expect(got.map((r) => [r.offset, r.key?.toString() ?? null, r.value!.toString(), r.timestamp, r.headers])).toEqual(
        expected.map((r, i) => [i, r.key?.toString() ?? null, r.value!.toString(), r.timestamp, r.headers]),
      );
      expect(await consumer.poll({ timeoutMs: 200 })).toEqual([]);
      await consumer.close();
      await client.close();
      await proxy.close();
    });
  }

  it('sends the parts of a merged batch on their own when the topic refuses it as too large', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'merge-small', partitions: 1, config: { 'max.message.bytes': '1500' } }]);
    const producer = client.producer({ acks: 1, inflightPerPartitionMax: 1, mergeSealedBatches: true });
    const batches = await Promise.all(Array.from({ length: 12 }, (_, i) => buildBatch(Array.from({ length: 4 }, (_, j) => ({ value: `${i}-${j}-${'m'.repeat(60)}` })))));
    expect(batches.every((b) => b.length < 1500)).toBe(true);
    const answers = await Promise.all(batches.map((b) => producer.sendBatch('merge-small', 0, b)));
    expect(answers.map((a) => a.offset)).toEqual(batches.map((_, i) => i * 4));
    const stored = await storedBatches('merge-small');
    expect(stored.every(([, bytes]) => bytes <= 1500)).toBe(true);
    expect(stored.reduce((n, [count]) => n + count, 0)).toBe(48);
    await client.close();
  });

  it('refuses a corrupt batch with CORRUPT_BATCH before anything is sent', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'sealed-bad', partitions: 1 }]);
    const producer = client.producer({ acks: 1 });
    const bad = await buildBatch([{ value: 'x' }]);
    bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
    await expect(producer.sendBatch('sealed-bad', 0, bad)).rejects.toMatchObject({ code: 'CORRUPT_BATCH' });
    await expect(producer.sendBatch('sealed-bad', 5, await buildBatch([{ value: 'x' }]))).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    const [end] = await client.admin().listOffsets('sealed-bad', { partitions: [0] });
    expect(end!.offset).toBe(0);
    await client.close();
  });

  it('takes a header the caller already checked, and still refuses a batch over its size bound', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'sealed-checked', partitions: 1 }]);
    const producer = client.producer({ acks: 1, recordBytesMax: 4096 });
    const ok = await buildBatch([{ value: 'a' }, { value: 'b' }]);
    const sent = await producer.sendBatch('sealed-checked', 0, ok, { validatedHeader: validateBatchHeader(ok, { messageBytesMax: 1 << 20 }) });
    expect(sent.offset).toBe(0);
    const big = await buildBatch([{ value: 'x'.repeat(5000) }]);
    await expect(producer.sendBatch('sealed-checked', 0, big, { validatedHeader: validateBatchHeader(big, { messageBytesMax: 1 << 20 }) })).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    const [end] = await client.admin().listOffsets('sealed-checked', { partitions: [0] });
    expect(end!.offset).toBe(2);
    await client.close();
  });
});

describe('failures', () => {
  it('a record over recordBytesMax fails its own send only', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'big', partitions: 1 }]);
    const producer = client.producer({ recordBytesMax: 1000 });
    const good = producer.send('big', { value: 'small' });
    await expect(producer.send('big', [{ value: 'ok' }, { value: 'x'.repeat(5000) }])).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    const after = producer.send('big', { value: 'after' });
    expect((await good)[0]!.offset).toBe(0);
    expect((await after)[0]!.offset).toBe(1);
    await client.close();
  });

  it('a batch the broker refuses as too large fails its send; later sends still succeed in order', async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'small-max', partitions: 1, config: { 'max.message.bytes': '2000' } }]);
    const producer = client.producer({ lingerMs: 0 });
    await expect(producer.send('small-max', { value: 'y'.repeat(4000) })).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    const res = await producer.send('small-max', [{ value: 'fine-1' }, { value: 'fine-2' }]);
    expect(res.map((r) => r.offset)).toEqual([0, 1]);
    await client.close();
  });

  for (const idempotent of [false, true]) {
    it(`a batch over the topic's max.message.bytes is split until it fits, records in order (idempotent: ${idempotent})`, async () => {
      const client = createClient({ brokers: [tb.address] });
      const topic = `split-${idempotent}`;
      await client.admin().createTopics([{ name: topic, partitions: 1, config: { 'max.message.bytes': '2000' } }]);
      // Lingering with a large batch bound: the 60 records (~7 KB) go out as one batch first.
      const producer = client.producer({ acks: idempotent ? 'all' : 1, idempotent, lingerMs: 50, batchBytesMax: 64 * 1024 });
      const values = Array.from({ length: 60 }, (_, i) => `r${String(i).padStart(3, '0')}-${'z'.repeat(100)}`);
      const results = await Promise.allSettled(values.map((value) => producer.send(topic, { value })));
      // One record alone over the topic's bound still fails, alone.
      await expect(producer.send(topic, { value: 'w'.repeat(3000) })).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
      expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
      const offsets = results.map((r) => (r.status === 'fulfilled' ? r.value[0]!.offset : -1));
      expect(offsets).toEqual(values.map((_, i) => i));
      const consumer = client.consumer({ groupId: `g-${topic}`, fromBeginning: true });
      consumer.assign([{ topic, partition: 0 }]);
      const read = await readAll(consumer, values.length);
      expect(read.map((r) => r.value!.toString())).toEqual(values);
      // Every stored batch fits the topic's bound: the split really happened.
      const [end] = await client.admin().listOffsets(topic, { partitions: [0] });
      expect(end!.offset).toBe(values.length);
      await client.close();
    });
  }

  it('sending to a topic that does not exist fails with UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const client = createClient({ brokers: [tb.address] });
    await expect(client.producer().send('no-such-topic', { value: 'x' })).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    await client.close();
  });

  it("a full buffer fails at once with bufferFullPolicy 'fail'", async () => {
    const client = createClient({ brokers: [tb.address] });
    await client.admin().createTopics([{ name: 'full', partitions: 1 }]);
    const producer = client.producer({ bufferBytesMax: 2000, batchBytesMax: 1000, lingerMs: 1000, bufferFullPolicy: 'fail' });
    const first = producer.send('full', { value: 'z'.repeat(1500) });
    await expect(producer.send('full', { value: 'z'.repeat(1000) })).rejects.toMatchObject({ code: 'BUFFER_FULL' });
    await producer.flush();
    await first;
    await client.close();
  });
});
