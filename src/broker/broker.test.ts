// Proves the broker over real TCP: topic admin with validated names and configs, produce and
// fetch of stored bytes, long polls woken by appends, list offsets, in-order pipelined responses
// under a bounded in-flight window, idempotent produce across a restart, and that every kind of
// bad input gets a typed error or closes only its own connection, with nothing written.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Broker, type BrokerOptions } from './index.ts';
import { buildBatch, decodeBatches, CompressionCodec } from '../log/index.ts';
import { Acks, ApiKey, decodeResponse, encodeFrame, encodeRequest, errorOf, FLAG_ERROR, type WireError } from '../protocol/index.ts';

const codeFromWireError = (w: WireError | null | undefined) => errorOf(w)?.code ?? null;
import { RawClient, waitFor, cleanupTempDirs, tempDir } from '../testing/index.ts';

afterAll(cleanupTempDirs);

const brokers: Broker[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function start(options: Partial<BrokerOptions> = {}): Promise<Broker> {
  const b = await Broker.start({ dataDir: options.dataDir ?? (await tempDir()), port: 0, ...options });
  brokers.push(b);
  return b;
}

async function client(b: Broker): Promise<RawClient> {
  const c = await RawClient.connect(b.port);
  clients.push(c);
  return c;
}

async function createTopic(c: RawClient, name: string, partitions = 1, config: Record<string, string> = {}) {
  const r = await c.call('CreateTopics', { topics: [{ name, partitions, replicationFactor: 1, config }] });
  return r.topics[0]!;
}

async function produce(c: RawClient, topic: string, partition: number, records: Buffer, acks: number = Acks.ALL) {
  const r = await c.call('Produce', { acks: acks as 3, timeoutMs: 5000, topics: [{ name: topic, partitions: [{ partition, records }] }] });
  return r.topics[0]!.partitions[0]!;
}

const values = (...v: string[]) => buildBatch(v.map((value) => ({ value })));

describe('topic identity (KIP-516)', () => {
  it('gives a re-created topic a new id, and refuses a produce or fetch aimed at the old one, writing nothing', async () => {
    const b = await start();
    const c = await client(b);
    await createTopic(c, 'again');
    const idOf = async () => (await c.call('Metadata', { topics: ['again'] })).topics[0]!.topicId ?? '';
    const first = await idOf();
    expect(first).toMatch(/^[0-9a-f]{8}$/);
    expect((await produce(c, 'again', 0, await values('old'))).error ?? null).toBeNull();
    await c.call('DeleteTopics', { names: ['again'] });
    await createTopic(c, 'again');
    const second = await idOf();
    expect(second).not.toBe(first);
    const stale = await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'again', topicId: first, partitions: [{ partition: 0, records: await values('meant for the old one') }] }] });
    const err = errorOf(stale.topics[0]!.partitions[0]!.error);
    expect(err?.code).toBe('UNKNOWN_TOPIC_ID');
    expect(err?.retriable).toBe(true);
    const fetchAt = (topicId: string) =>
      c.call('Fetch', { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, topics: [{ name: 'again', topicId, partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    expect(codeFromWireError((await fetchAt(first)).topics[0]!.partitions[0]!.error)).toBe('UNKNOWN_TOPIC_ID');
    const current = (await fetchAt(second)).topics[0]!.partitions[0]!;
    expect(current.error ?? null).toBeNull();
    expect(Number(current.logEndOffset)).toBe(0);
    const ok = await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'again', topicId: second, partitions: [{ partition: 0, records: await values('new') }] }] });
    expect(ok.topics[0]!.partitions[0]!.error ?? null).toBeNull();
    expect(Number(ok.topics[0]!.partitions[0]!.baseOffset)).toBe(0);
  });
});

describe('broker topics', () => {
  it('creates, lists, describes and deletes topics, refusing bad names, configs and internal names', async () => {
    const b = await start();
    const c = await client(b);
    expect((await createTopic(c, 'orders', 3, { 'retention.ms': '60000', 'flush.policy': 'sync', 'tail.cache.bytes': '0' })).error ?? null).toBeNull();
    expect(codeFromWireError((await createTopic(c, 'orders')).error)).toBe('TOPIC_ALREADY_EXISTS');
    expect(codeFromWireError((await createTopic(c, 'bad/name')).error)).toBe('INVALID_TOPIC');
    expect(codeFromWireError((await createTopic(c, 'x'.repeat(250))).error)).toBe('INVALID_TOPIC');
    expect(codeFromWireError((await createTopic(c, '..')).error)).toBe('INVALID_TOPIC');
    expect(codeFromWireError((await createTopic(c, '__consumer_offsets')).error)).toBe('INVALID_TOPIC');
    expect(codeFromWireError((await createTopic(c, '__mine')).error)).toBe('INVALID_TOPIC');
    expect(codeFromWireError((await createTopic(c, 'zero', 0)).error)).toBe('INVALID_ARGUMENT');
    expect(codeFromWireError((await createTopic(c, 'cfg', 1, { 'retention.ms': 'soon' })).error)).toBe('INVALID_ARGUMENT');
    expect(codeFromWireError((await createTopic(c, 'cfg', 1, { 'no.such.key': '1' })).error)).toBe('INVALID_ARGUMENT');
    expect(codeFromWireError((await createTopic(c, 'cfg', 1, { 'tail.cache.bytes': '-1' })).error)).toBe('INVALID_ARGUMENT');
    // Values that conflict with each other (a segment smaller than the largest batch in force) are
    // the request's fault, named by their topic keys; nothing is created.
    const conflict = (await createTopic(c, 'cfg', 1, { 'segment.bytes': String(1024 * 1024) })).error;
    expect(codeFromWireError(conflict)).toBe('INVALID_ARGUMENT');
    expect(conflict?.message).toMatch(/max\.message\.bytes.*segment\.bytes/);
    const rf = await c.call('CreateTopics', { topics: [{ name: 'rf', partitions: 1, replicationFactor: 3 }] });
    expect(codeFromWireError(rf.topics[0]!.error)).toBe('INVALID_ARGUMENT');

    const md = await c.call('Metadata', { allTopics: true });
    expect(md.topics.map((t) => t.name)).toEqual(['orders']);
    expect(md.topics[0]!.partitions.map((p) => [p.partition, p.leaderId])).toEqual([[0, 1], [1, 1], [2, 1]]);
    const withInternal = await c.call('Metadata', { allTopics: true, includeInternal: true });
    expect(withInternal.topics.map((t) => t.name).sort()).toEqual(['__consumer_offsets', 'orders']);
    const unknown = await c.call('Metadata', { topics: ['nope'] });
    expect(codeFromWireError(unknown.topics[0]!.error)).toBe('UNKNOWN_TOPIC_OR_PARTITION');

    const desc = await c.call('DescribeConfigs', { names: ['orders'] });
    expect(desc.topics[0]!.config['retention.ms']).toBe('60000');
    expect(desc.topics[0]!.config['flush.policy']).toBe('sync');
    expect(desc.topics[0]!.config['tail.cache.bytes']).toBe('0');
    expect(desc.topics[0]!.partitions).toBe(3);

    const del = await c.call('DeleteTopics', { names: ['orders', 'orders', '__consumer_offsets'] });
    expect(del.topics.map((t) => codeFromWireError(t.error))).toEqual([null, 'UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_TOPIC']);
    expect((await c.call('Metadata', { allTopics: true })).topics).toEqual([]);
  });

  it('keeps topics and records across a restart, and a re-created topic starts empty', async () => {
    const dir = await tempDir();
    let b = await start({ dataDir: dir });
    let c = await client(b);
    await createTopic(c, 'keep', 2);
    expect((await produce(c, 'keep', 1, await values('a', 'b'))).baseOffset).toBe(0);
    await b.close();
    b = await start({ dataDir: dir });
    c = await client(b);
    const f = await c.call('Fetch', { maxWaitMs: 0, topics: [{ name: 'keep', partitions: [{ partition: 1, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    const recs = await decodeBatches(Buffer.from(f.topics[0]!.partitions[0]!.records));
    expect(recs.map((r) => r.value!.toString())).toEqual(['a', 'b']);
    // Each start is a new leader term: the previous term's epoch is fenced, a future one unknown.
    expect(f.topics[0]!.partitions[0]!.leaderEpoch).toBe(1);
    const epochProduce = async (leaderEpoch: number) => {
      const r = await c.call('Produce', { acks: 3, topics: [{ name: 'keep', partitions: [{ partition: 1, records: await values('e'), leaderEpoch }] }] });
      return codeFromWireError(r.topics[0]!.partitions[0]!.error);
    };
    expect(await epochProduce(0)).toBe('FENCED_LEADER_EPOCH');
    expect(await epochProduce(2)).toBe('LEADER_NOT_AVAILABLE');
    expect(b.topics.partition('keep', 1).logEndOffset).toBe(2);
    expect(await epochProduce(1)).toBeNull();
    await c.call('DeleteTopics', { names: ['keep'] });
    await createTopic(c, 'keep', 2);
    const after = await c.call('ListOffsets', { topics: [{ name: 'keep', partitions: [{ partition: 1, timestamp: -1 }] }] });
    expect(after.topics[0]!.partitions[0]!.offset).toBe(0);
  });
});

describe('produce and fetch', () => {
  it('stores batches as sent and serves the same bytes, with every codec', async () => {
    const b = await start();
    const c = await client(b);
    await createTopic(c, 't', 1);
    const sent: Buffer[] = [];
    for (const codec of [CompressionCodec.none, CompressionCodec.snappy, CompressionCodec.lz4, CompressionCodec.zstd]) {
      const batch = await buildBatch([{ key: 'k', value: `codec-${codec}`.repeat(20) }], { codec });
      sent.push(Buffer.from(batch));
      const r = await produce(c, 't', 0, batch);
      expect(r.error ?? null).toBeNull();
    }
    const f = await c.call('Fetch', { maxWaitMs: 0, topics: [{ name: 't', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    const p = f.topics[0]!.partitions[0]!;
    expect(p.highWatermark).toBe(4);
    const recs = await decodeBatches(Buffer.from(p.records));
    expect(recs.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
    // Byte for byte what the producer built, apart from the offset and epoch the broker assigns
    // (outside the CRC).
    const stored = Buffer.from(p.records);
    let pos = 0;
    for (const s of sent) {
      expect(stored.subarray(pos + 17, pos + s.length).equals(s.subarray(17))).toBe(true);
      pos += s.length;
    }
  });

  it('answers per partition: unknown topic or partition, too large, disallowed codec, corrupt batch, all writing nothing', async () => {
    const b = await start();
    const c = await client(b);
    await createTopic(c, 'small', 2, { 'max.message.bytes': '1024', 'compression.allowed': 'none,lz4' });
    expect(codeFromWireError((await produce(c, 'nope', 0, await values('x'))).error)).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(codeFromWireError((await produce(c, 'small', 7, await values('x'))).error)).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(codeFromWireError((await produce(c, 'small', 0, await values('y'.repeat(2000)))).error)).toBe('MESSAGE_TOO_LARGE');
    const zstd = await buildBatch([{ value: 'z' }], { codec: CompressionCodec.zstd });
    expect(codeFromWireError((await produce(c, 'small', 0, zstd)).error)).toBe('UNSUPPORTED_COMPRESSION');
    const corrupt = await values('c');
    corrupt[corrupt.length - 1] = corrupt[corrupt.length - 1]! ^ 0xff;
    expect(codeFromWireError((await produce(c, 'small', 0, corrupt)).error)).toBe('CORRUPT_BATCH');
    expect(codeFromWireError((await produce(c, 'small', 0, randomBytes(50))).error)).toBe('CORRUPT_BATCH');
    const two = Buffer.concat([await values('a'), await values('b')]);
    expect(codeFromWireError((await produce(c, 'small', 0, two)).error)).toBe('INVALID_REQUEST');
    const internal = await c.call('Produce', { acks: 3, topics: [{ name: '__consumer_offsets', partitions: [{ partition: 0, records: await values('x') }] }] }).catch((e: { code: string }) => e.code);
    expect(internal).toBe('INVALID_TOPIC');
    expect(b.topics.partition('small', 0).logEndOffset).toBe(0);
    expect(b.topics.partition('__consumer_offsets', 0).logEndOffset).toBe(0);
  });

  it('sends no response for acks=0 but still writes', async () => {
    const b = await start();
    const c = await client(b);
    await createTopic(c, 'fire', 1);
    c.send('Produce', { acks: Acks.NONE, topics: [{ name: 'fire', partitions: [{ partition: 0, records: await values('x') }] }] });
    // The next response on the connection belongs to the next request.
    const md = await c.call('Metadata', { allTopics: true });
    expect(md.topics.length).toBe(1);
    const lo = await c.call('ListOffsets', { topics: [{ name: 'fire', partitions: [{ partition: 0, timestamp: -1 }] }] });
    expect(lo.topics[0]!.partitions[0]!.offset).toBe(1);
  });

  it('wakes a long poll when data arrives, and times out empty otherwise', async () => {
    const b = await start();
    const c = await client(b);
    const p = await client(b);
    await createTopic(c, 'lp', 1);
    const t0 = Date.now();
    const idle = await c.call('Fetch', { maxWaitMs: 300, minBytes: 1, topics: [{ name: 'lp', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(idle.topics[0]!.partitions[0]!.records.length).toBe(0);

    const id = c.send('Fetch', { maxWaitMs: 20_000, minBytes: 1, topics: [{ name: 'lp', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] });
    const t1 = Date.now();
    await produce(p, 'lp', 0, await values('wake'));
    const f = await c.next();
    expect(f.correlationId).toBe(id);
    expect(Date.now() - t1).toBeLessThan(10_000);
    const res = decodeResponse('Fetch', f);
    expect((await decodeBatches(Buffer.from(res.topics[0]!.partitions[0]!.records))).map((r) => r.value!.toString())).toEqual(['wake']);
  });

  it('keeps nothing of a finished long poll on its connection (a replica connection serves thousands a second)', async () => {
    const b = await start();
    const c = await client(b);
    const p = await client(b);
    await createTopic(c, 'lp-many', 1);
    // How many waiters listen for the close of any connection, as the broker holds them.
    const listeners = () => [...(b as unknown as { connections: Set<{ closeListeners: Set<unknown> }> }).connections].reduce((n, conn) => n + conn.closeListeners.size, 0);
    for (let i = 0; i < 30; i++) {
      const id = c.send('Fetch', { maxWaitMs: 20_000, minBytes: 1, topics: [{ name: 'lp-many', partitions: [{ partition: 0, fetchOffset: i, maxBytes: 1 << 20 }] }] });
      // Parked: one listener while it waits.
      await waitFor('the long poll to park', 5_000, () => (listeners() === 1 ? true : undefined), 5);
      await produce(p, 'lp-many', 0, await values(`w${i}`));
      expect((await c.next()).correlationId).toBe(id);
    }
    const timedOut = await c.call('Fetch', { maxWaitMs: 50, minBytes: 1, topics: [{ name: 'lp-many', partitions: [{ partition: 0, fetchOffset: 30, maxBytes: 1 << 20 }] }] });
    expect(timedOut.topics[0]!.partitions[0]!.records.length).toBe(0);
    expect(listeners()).toBe(0);
  });

  it('lists earliest, latest and by-timestamp offsets, and refuses reads out of range', async () => {
    const b = await start();
    const c = await client(b);
    await createTopic(c, 'ts', 1);
    for (let i = 0; i < 3; i++) await produce(c, 'ts', 0, await buildBatch([{ value: `v${i}`, timestamp: 1000 * (i + 1) }]));
    const lo = await c.call('ListOffsets', {
      topics: [{ name: 'ts', partitions: [-2, -1, 1500, 3000, 9999].map((timestamp) => ({ partition: 0, timestamp })) }],
    });
    expect(lo.topics[0]!.partitions.map((p) => p.offset)).toEqual([0, 3, 1, 2, -1]);
    const f = await c.call('Fetch', { maxWaitMs: 0, topics: [{ name: 'ts', partitions: [{ partition: 0, fetchOffset: 99, maxBytes: 100 }] }] });
    expect(codeFromWireError(f.topics[0]!.partitions[0]!.error)).toBe('OFFSET_OUT_OF_RANGE');
  });
});

describe('idempotent producer', () => {
  it('answers a retry after a restart with the original offsets and fences an old epoch', async () => {
    const dir = await tempDir();
    let b = await start({ dataDir: dir });
    let c = await client(b);
    await createTopic(c, 'idem', 1);
    const init = await c.call('InitProducerId', { producerId: -1 });
    const pid = init.producerId;
    const batch = (seq: number, epoch = 0) => buildBatch([{ value: `s${seq}` }], { producerId: pid, producerEpoch: epoch, baseSequence: seq });
    expect((await produce(c, 'idem', 0, await batch(0))).baseOffset).toBe(0);
    expect((await produce(c, 'idem', 0, await batch(1))).baseOffset).toBe(1);
    await b.close();

    b = await start({ dataDir: dir });
    c = await client(b);
    const retry = await produce(c, 'idem', 0, await batch(1));
    expect(retry).toMatchObject({ baseOffset: 1, duplicate: true });
    expect(codeFromWireError((await produce(c, 'idem', 0, await batch(3))).error)).toBe('OUT_OF_ORDER_SEQUENCE');
    // A new instance bumps the epoch; the old one is fenced at once, even on its next sequence.
    const bumped = await c.call('InitProducerId', { producerId: pid, producerEpoch: 0 });
    expect(bumped).toMatchObject({ producerId: pid, producerEpoch: 1 });
    expect(codeFromWireError((await produce(c, 'idem', 0, await batch(2, 0))).error)).toBe('INVALID_PRODUCER_EPOCH');
    const stale = await c.call('InitProducerId', { producerId: pid, producerEpoch: 0 });
    expect(codeFromWireError(stale.error)).toBe('INVALID_PRODUCER_EPOCH');
    expect((await produce(c, 'idem', 0, await batch(0, 1))).baseOffset).toBe(2);
    const fresh = await c.call('InitProducerId', { producerId: -1 });
    expect(fresh.producerId).not.toBe(pid);
    const unknown = await c.call('InitProducerId', { producerId: 10 ** 9, producerEpoch: 0 });
    expect(codeFromWireError(unknown.error)).toBe('UNKNOWN_PRODUCER_ID');
    expect(b.topics.partition('idem', 0).logEndOffset).toBe(3);
  });
});

describe('connections', () => {
  it('answers pipelined requests in order and stops reading past the in-flight bound', async () => {
    const b = await start({ connection: { inflightRequestsMax: 8 } });
    const c = await client(b);
    const p = await client(b);
    await createTopic(c, 'pipe', 1);
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) {
      ids.push(c.send('Fetch', { maxWaitMs: 20_000, minBytes: 1, topics: [{ name: 'pipe', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 4096 }] }] }));
    }
    ids.push(c.send('Metadata', { allTopics: true }));
    // Wait until the broker holds its bound of parked long polls on that connection.
    const deadline = Date.now() + 10_000;
    while (Math.max(...b.connectionStats().map((s) => s.requests)) < 8 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    const peak = Math.max(...b.connectionStats().map((s) => s.requests));
    expect(peak).toBe(8);
    await produce(p, 'pipe', 0, await values('go'));
    const got: number[] = [];
    for (let i = 0; i < ids.length; i++) got.push((await c.next()).correlationId);
    expect(got).toEqual(ids);
    for (const s of b.connectionStats()) expect(s.requests).toBeLessThanOrEqual(8);
  });

  it('answers unknown APIs, unsupported versions and undecodable bodies with typed error frames and keeps the connection', async () => {
    const b = await start();
    const c = await client(b);
    c.write(encodeFrame({ flags: 0, apiKey: 999, apiVersion: 1, correlationId: 1 }, Buffer.alloc(0)));
    c.write(encodeFrame({ flags: 0, apiKey: ApiKey.Metadata, apiVersion: 99, correlationId: 2 }, Buffer.alloc(0)));
    c.write(encodeFrame({ flags: 0, apiKey: ApiKey.Produce, apiVersion: 1, correlationId: 3 }, Buffer.from([0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f])));
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const f = await c.next();
      expect(f.flags & FLAG_ERROR).toBe(FLAG_ERROR);
      try {
        decodeResponse('Metadata', f);
      } catch (err) {
        codes.push((err as { code: string }).code);
      }
    }
    expect(codes).toEqual(['UNSUPPORTED_API', 'UNSUPPORTED_VERSION', 'INVALID_REQUEST']);
    expect((await c.call('Metadata', { allTopics: true })).brokers.length).toBe(1);
  });

  it('closes only the connection that sends a bad frame, writing nothing, while others keep working', async () => {
    const b = await start({ connection: { frameBytesMax: 64 * 1024 } });
    const good = await client(b);
    await createTopic(good, 'safe', 1);
    const produceFrame = encodeRequest('Produce', 1, 7, { acks: 3, topics: [{ name: 'safe', partitions: [{ partition: 0, records: await values('never') }] }] });
    const cases: [string, Buffer][] = [
      ['random bytes', randomBytes(4096)],
      ['wrong CRC', (() => { const f = Buffer.from(produceFrame); f[f.length - 1] = f[f.length - 1]! ^ 1; return f; })()],
      ['length over the limit', (() => { const f = Buffer.from(produceFrame); f.writeUInt32BE(10 * 1024 * 1024, 0); return f; })()],
      ['a response frame', encodeFrame({ flags: 1, apiKey: 2, apiVersion: 1, correlationId: 1 }, Buffer.alloc(0))],
    ];
    for (const [name, bytes] of cases) {
      const bad = await client(b);
      bad.write(bytes);
      await bad.closedPromise;
      expect(bad.closed, name).toBe(true);
      expect((await good.call('Metadata', { allTopics: true })).topics.length, name).toBe(1);
    }
    // A truncated frame followed by a hang-up: nothing happens, nothing is written.
    const cut = await client(b);
    cut.write(produceFrame.subarray(0, produceFrame.length - 3));
    cut.close();
    await cut.closedPromise;
    expect((await produce(good, 'safe', 0, await values('ok'))).baseOffset).toBe(0);
    expect(b.topics.partition('safe', 0).logEndOffset).toBe(1);
  });
});
