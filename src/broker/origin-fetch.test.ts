// Proves the broker side of global topics over real TCP: origin-tagged batches are taken only by
// global topics, never with this region as origin, kept byte for byte with local offsets, and
// deduplicated on their origin offsets; a consumer fetch with an origin filter returns only that
// origin's batches (this region's own ones stamped with their origin and a valid CRC, the stored
// bytes untouched), skips what is at or below after_origin_offset, finds its start from -1,
// reports scanned_to so a run of other origins' batches never stalls it, wakes on a matching
// append, refuses an offset below the log start, and carries origin_cursors; and a Connection
// sends the new fields as a replicator will.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerOptions } from './index.ts';
import { buildBatch, decodeBatch, readBatchHeader, splitBatches, validateBatch } from '../log/index.ts';
import { Acks, Connection, errorOf, type FetchPartition, type FetchPartitionResult } from '../protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../testing/index.ts';

afterAll(cleanupTempDirs);

const REGION = 'eu-west';
const brokers: Broker[] = [];
const clients: { close(): void }[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function start(options: Partial<BrokerOptions> = {}): Promise<{ b: Broker; c: RawClient }> {
  const b = await Broker.start({ port: 0, region: REGION, ...options, dataDir: options.dataDir ?? (await tempDir()) });
  brokers.push(b);
  const c = await RawClient.connect(b.port);
  clients.push(c);
  return { b, c };
}

async function createTopic(c: RawClient, name: string, config: Record<string, string> = { scope: 'global' }) {
  const r = await c.call('CreateTopics', { topics: [{ name, partitions: 1, replicationFactor: 1, config }] });
  expect(r.topics[0]!.error ?? null).toBeNull();
}

async function produce(c: RawClient, topic: string, records: Buffer, acks: number = Acks.ALL) {
  const r = await c.call('Produce', { acks: acks as 3, timeoutMs: 5000, topics: [{ name: topic, partitions: [{ partition: 0, records }] }] });
  return r.topics[0]!.partitions[0]!;
}

const own = (...v: string[]) => buildBatch(v.map((value) => ({ value })));
const applied = (region: string, offset: number, ...v: string[]) => buildBatch(v.map((value) => ({ value })), { origin: { region, offset } });

async function fetch(c: RawClient, topic: string, fp: Omit<FetchPartition, 'partition'>, wait: { maxWaitMs?: number; minBytes?: number } = {}): Promise<FetchPartitionResult> {
  const r = await c.call('Fetch', { maxWaitMs: wait.maxWaitMs ?? 0, minBytes: wait.minBytes ?? 0, maxBytes: 1 << 20, topics: [{ name: topic, partitions: [{ partition: 0, ...fp }] }] });
  return r.topics[0]!.partitions[0]!;
}

/** Each batch of a fetch result: its header and record values. */
async function batchesOf(records: Uint8Array) {
  return Promise.all(
    splitBatches(Buffer.from(records)).map(async (b) => {
      const { header, records: rs } = await decodeBatch(b);
      return { header, values: rs.map((r) => r.value!.toString()), bytes: b };
    }),
  );
}

describe('produce of origin-tagged batches', () => {
  it('refuses them on a local topic and with this region as origin, writing nothing', async () => {
    const { c } = await start();
    await createTopic(c, 'plain', {});
    await createTopic(c, 'geo');
    const local = await produce(c, 'plain', await applied('us-east', 0, 'a'));
    expect(errorOf(local.error)?.code).toBe('INVALID_REQUEST');
    expect(errorOf(local.error)?.message).toMatch(/only global topics take batches with an origin/);
    const self = await produce(c, 'geo', await applied(REGION, 0, 'a'));
    expect(errorOf(self.error)?.code).toBe('ORIGIN_IS_SELF');
    expect(Number((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).logEndOffset)).toBe(0);
    expect(Number((await fetch(c, 'plain', { fetchOffset: 0, maxBytes: 1 << 20 })).logEndOffset)).toBe(0);
  });

  it('keeps the origin fields with local offsets, answers a re-send as a duplicate and refuses an overlap', async () => {
    const { c } = await start();
    await createTopic(c, 'geo');
    expect(Number((await produce(c, 'geo', await own('mine'))).baseOffset)).toBe(0);
    const sent = await applied('us-east', 500, 'x', 'y');
    const first = await produce(c, 'geo', sent);
    expect(first.error ?? null).toBeNull();
    expect(Number(first.baseOffset)).toBe(1);
    expect(first.duplicate).toBe(false);
    const again = await produce(c, 'geo', await applied('us-east', 500, 'x', 'y'));
    expect(again.error ?? null).toBeNull();
    expect(again.duplicate).toBe(true);
    expect(Number(again.baseOffset)).toBe(1);
    // acks=1 takes the same path.
    expect((await produce(c, 'geo', await applied('us-east', 501, 'y'), Acks.LEADER)).duplicate).toBe(true);
    const overlap = await produce(c, 'geo', await applied('us-east', 501, 'y', 'z'));
    expect(errorOf(overlap.error)?.code).toBe('ORIGIN_OVERLAP');
    const all = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 });
    expect(Number(all.logEndOffset)).toBe(3);
    const stored = splitBatches(Buffer.from(all.records));
    expect(stored).toHaveLength(2);
    const h = await validateBatch(stored[1]!, { messageBytesMax: 1 << 20 }); // CRC and framing still valid
    expect([h.baseOffset, h.originRegion, h.originOffset]).toEqual([1, 'us-east', 500]);
    // Only the base offset and the leader epoch (outside the CRC) differ from what was sent.
    expect(stored[1]!.subarray(21).equals(sent.subarray(21))).toBe(true);
  });
});

describe('origin cursors across a broker restart', () => {
  it('are rebuilt from the log at open: a re-send after the restart is still a duplicate', async () => {
    const dataDir = await tempDir();
    const first = await start({ dataDir });
    await createTopic(first.c, 'geo');
    await produce(first.c, 'geo', await applied('us-east', 7, 'a', 'b'));
    await produce(first.c, 'geo', await own('mine'));
    first.c.close();
    await brokers.splice(0)[0]!.close();
    const { c } = await start({ dataDir });
    const again = await produce(c, 'geo', await applied('us-east', 7, 'a', 'b'));
    expect(again.duplicate).toBe(true);
    expect(Number(again.baseOffset)).toBe(0);
    expect((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 })).originCursors).toEqual({ 'us-east': 8, [REGION]: 2 });
  });
});

describe('fetch with an origin filter', () => {
  /** Own 0..1, us-east 2..3 (origin 10..11), own 4, ap-south 5 (origin 7), us-east 6 (origin 20), own 7..8. */
  async function mixed() {
    const s = await start();
    await createTopic(s.c, 'geo');
    await produce(s.c, 'geo', await own('o0', 'o1'));
    await produce(s.c, 'geo', await applied('us-east', 10, 'e10', 'e11'));
    await produce(s.c, 'geo', await own('o4'));
    await produce(s.c, 'geo', await applied('ap-south', 7, 'a7'));
    await produce(s.c, 'geo', await applied('us-east', 20, 'e20'));
    await produce(s.c, 'geo', await own('o7', 'o8'));
    return s;
  }

  it("returns this region's own writes stamped with their origin and a valid CRC, the stored bytes untouched", async () => {
    const { c } = await mixed();
    const before = Buffer.from((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).records);
    const r = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: REGION });
    expect(r.error ?? null).toBeNull();
    const got = await batchesOf(r.records);
    expect(got.map((g) => g.values)).toEqual([['o0', 'o1'], ['o4'], ['o7', 'o8']]);
    for (const g of got) {
      const h = await validateBatch(g.bytes, { messageBytesMax: 1 << 20 });
      expect(h.originRegion).toBe(REGION);
      expect(h.originOffset).toBe(h.baseOffset);
      expect(h.attributes & 0x10).toBe(0x10);
    }
    expect(got.map((g) => g.header.originOffset)).toEqual([0, 4, 7]);
    expect(Number(r.scannedTo)).toBe(9);
    // The stored (and cached) batches were copied, not stamped in place.
    expect(Buffer.from((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).records).equals(before)).toBe(true);
    for (const b of splitBatches(before)) if (readBatchHeader(b).originRegion === null) expect(readBatchHeader(b).originOffset).toBe(-1);
  });

  it("returns another origin's batches as stored, skipping those at or below after_origin_offset", async () => {
    const { c } = await mixed();
    const stored = splitBatches(Buffer.from((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).records));
    const r = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: 'us-east' });
    const got = await batchesOf(r.records);
    expect(got.map((g) => g.values)).toEqual([['e10', 'e11'], ['e20']]);
    expect(got[0]!.bytes.equals(stored[1]!)).toBe(true);
    expect(got[1]!.bytes.equals(stored[4]!)).toBe(true);
    const after = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: 'us-east', afterOriginOffset: 11 });
    expect((await batchesOf(after.records)).map((g) => g.values)).toEqual([['e20']]);
    const ownAfter = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: 4 });
    expect((await batchesOf(ownAfter.records)).map((g) => g.header.originOffset)).toEqual([7]);
    const none = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: 'nowhere' });
    expect(none.records.length).toBe(0);
    expect(Number(none.scannedTo)).toBe(9);
  });

  it('finds the start from fetch_offset -1: the origin index for another origin, after + 1 for its own', async () => {
    const { c } = await mixed();
    const foreign = await fetch(c, 'geo', { fetchOffset: -1, maxBytes: 1 << 20, origin: 'us-east', afterOriginOffset: 11 });
    expect(foreign.error ?? null).toBeNull();
    expect((await batchesOf(foreign.records)).map((g) => g.values)).toEqual([['e20']]);
    // A one-batch scan shows where it started: at the indexed batch (local 5, origin 7) once all
    // of it is at or below after_origin_offset, else at the log start.
    const scannedTo = async (after: number) => Number((await fetch(c, 'geo', { fetchOffset: -1, maxBytes: 1, origin: 'ap-south', afterOriginOffset: after })).scannedTo);
    expect(await scannedTo(7)).toBe(6);
    expect(await scannedTo(6)).toBe(2);
    const mine = await fetch(c, 'geo', { fetchOffset: -1, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: 4 });
    expect((await batchesOf(mine.records)).map((g) => g.header.originOffset)).toEqual([7]);
    // Past the HW: an empty answer at the HW, not an error.
    const past = await fetch(c, 'geo', { fetchOffset: -1, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: 100 });
    expect(past.error ?? null).toBeNull();
    expect([past.records.length, Number(past.scannedTo)]).toEqual([0, 9]);
  });

  it('bounds the scan by max_bytes and reports scanned_to, so a run of other origins never stalls a long poll', async () => {
    const { c } = await start();
    await createTopic(c, 'geo');
    for (let i = 0; i < 30; i++) await produce(c, 'geo', await applied('us-east', i, `e${i}`.padEnd(100, '.')), Acks.LEADER);
    await produce(c, 'geo', await own('mine'));
    const batchBytes = splitBatches(Buffer.from((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 })).records))[0]!.length;
    let offset = 0;
    let rounds = 0;
    let found: string[] = [];
    const t0 = performance.now();
    while (found.length === 0 && rounds < 40) {
      rounds++;
      // A long poll that would wait 10 s if it did not answer as soon as its scan was cut short.
      const r = await fetch(c, 'geo', { fetchOffset: offset, maxBytes: batchBytes * 3, origin: REGION }, { maxWaitMs: 10_000, minBytes: 1 });
      expect(r.error ?? null).toBeNull();
      expect(Number(r.scannedTo)).toBeGreaterThan(offset);
      offset = Number(r.scannedTo);
      found = (await batchesOf(r.records)).flatMap((g) => g.values);
    }
    expect(found).toEqual(['mine']);
    expect(rounds).toBe(11); // 31 batches, 3 per scan
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('wakes a long poll on a matching append, continuing past a non-matching one', async () => {
    const { c, b } = await start();
    await createTopic(c, 'geo');
    await produce(c, 'geo', await own('o0'));
    const other = await RawClient.connect(b.port);
    clients.push(other);
    const polling = fetch(c, 'geo', { fetchOffset: 1, maxBytes: 1 << 20, origin: 'us-east' }, { maxWaitMs: 15_000, minBytes: 1 });
    await produce(other, 'geo', await own('o1'));
    await produce(other, 'geo', await applied('us-east', 3, 'e3'));
    const r = await polling;
    expect((await batchesOf(r.records)).map((g) => g.values)).toEqual([['e3']]);
    expect(Number(r.scannedTo)).toBe(3);
    // This region's own head is its last own record (offset 1), not the applied one at 2.
    expect(r.originCursors).toEqual({ 'us-east': 3, [REGION]: 1 });
  });

  it('carries origin_cursors on global topics only, and refuses an origin filter on a local one or an offset below the log start', async () => {
    const { c, b } = await start();
    await createTopic(c, 'plain', {});
    await createTopic(c, 'geo', { scope: 'global', 'segment.bytes': '1024', 'max.message.bytes': '1024', 'retention.bytes': '1024' });
    for (let i = 0; i < 8; i++) await produce(c, 'geo', await applied('us-east', i * 2, `e${i}`.padEnd(300, '.')), Acks.LEADER);
    await produce(c, 'geo', await own('mine'));
    const g = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 });
    expect(g.originCursors).toEqual({ 'us-east': 14, [REGION]: 8 });
    const plain = await fetch(c, 'plain', { fetchOffset: 0, maxBytes: 1 });
    expect(plain.originCursors ?? {}).toEqual({});
    const filtered = await fetch(c, 'plain', { fetchOffset: 0, maxBytes: 1, origin: REGION });
    expect(errorOf(filtered.error)?.code).toBe('INVALID_REQUEST');

    await b.topics.partition('geo', 0).log.applyRetention();
    const start0 = b.topics.partition('geo', 0).logStartOffset;
    expect(start0).toBeGreaterThan(0);
    const gone = await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: 'us-east' });
    expect(errorOf(gone.error)?.code).toBe('OFFSET_OUT_OF_RANGE');
    expect(Number(gone.logStartOffset)).toBe(start0);
    // The cursor outlives the deleted batches; -1 locates from the log start.
    expect(gone.originCursors?.['us-east']).toBe(14);
    const located = await fetch(c, 'geo', { fetchOffset: -1, maxBytes: 1 << 20, origin: 'us-east' });
    expect(readBatchHeader(Buffer.from(located.records)).baseOffset).toBe(start0);
  });

  it('goes through a Connection as a replicator sends it, with raw record bytes back', async () => {
    const { b, c } = await start();
    await createTopic(c, 'geo');
    await produce(c, 'geo', await applied('us-east', 0, 'e0'));
    await produce(c, 'geo', await own('o1'));
    const conn = await Connection.connect({ host: '127.0.0.1', port: b.port });
    clients.push(conn);
    expect(conn.versionOf('Fetch')).toBe(2);
    const res = await conn.request('Fetch', {
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [{ name: 'geo', partitions: [{ partition: 0, fetchOffset: -1, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1 }] }],
    });
    const p = res.topics[0]!.partitions[0]!;
    expect(p.error ?? null).toBeNull();
    expect(Number(p.scannedTo)).toBe(2);
    expect(p.originCursors).toEqual({ 'us-east': 0, [REGION]: 1 });
    const [batch] = splitBatches(Buffer.from(p.records));
    const h = await validateBatch(batch!, { messageBytesMax: 1 << 20 });
    expect([h.originRegion, h.originOffset, h.baseOffset]).toEqual([REGION, 1, 1]);
  });
});

describe('origin-fetch sessions (two long polls in flight on one connection)', () => {
  it('the second fetch continues where the first ended, already parked when a record arrives', async () => {
    const { b, c } = await start();
    await createTopic(c, 'geo');
    await produce(c, 'geo', await own('o0'));
    const other = await RawClient.connect(b.port);
    clients.push(other);
    const poll = { maxWaitMs: 10_000, minBytes: 1 };
    // The first returns o0 at once; the second (-2) starts after it and waits.
    const first = fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session: 's1' }, poll);
    const second = fetch(c, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session: 's1' }, poll);
    expect((await batchesOf((await first).records)).map((g) => g.values)).toEqual([['o0']]);
    const t0 = performance.now();
    await produce(other, 'geo', await own('o1'));
    const r2 = await second;
    expect((await batchesOf(r2.records)).map((g) => g.values)).toEqual([['o1']]);
    expect(performance.now() - t0).toBeLessThan(5_000);
    // A third continues after o1.
    const third = fetch(c, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session: 's1' }, { maxWaitMs: 0 });
    expect((await third).records.length).toBe(0);
    expect(Number((await third).scannedTo)).toBe(2);
  });

  it('a session belongs to its connection: two replicators naming theirs alike each get every record', async () => {
    // The fault campaign's round 197380189: the replicators of two regions fetching one origin
    // partition named their sessions alike; continuing each other's chain, each region received
    // every other record and applied the rest past the holes.
    const { b, c } = await start();
    await createTopic(c, 'geo');
    const [x, y] = [await RawClient.connect(b.port), await RawClient.connect(b.port)];
    clients.push(x, y);
    const seen = { x: [] as string[], y: [] as string[] };
    const session = 'eu-west/geo/0#1796183269000-1';
    for (const [conn, into] of [[x, seen.x], [y, seen.y]] as const) {
      const r = await fetch(conn, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session });
      for (const g of await batchesOf(r.records)) into.push(...g.values);
    }
    for (let i = 0; i < 6; i++) {
      await produce(c, 'geo', await own(`r${i}`));
      // Turn about, as two replicators' polls interleave at the origin.
      for (const [conn, into] of (i % 2 === 0 ? [[x, seen.x], [y, seen.y]] : [[y, seen.y], [x, seen.x]]) as [RawClient, string[]][]) {
        const r = await fetch(conn, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session });
        expect(errorOf(r.error)).toBeNull();
        for (const g of await batchesOf(r.records)) into.push(...g.values);
      }
    }
    const all = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
    expect(seen.x).toEqual(all);
    expect(seen.y).toEqual(all);
    // Nor can a connection continue a session another one opened.
    const z = await RawClient.connect(b.port);
    clients.push(z);
    expect(errorOf((await fetch(z, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session })).error)?.code).toBe('INVALID_REQUEST');
  });

  it('refuses to continue a session that is unknown, or is for another partition or origin', async () => {
    const { c } = await start();
    await createTopic(c, 'geo');
    const unknown = await fetch(c, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session: 'nobody' });
    expect(errorOf(unknown.error)?.code).toBe('INVALID_REQUEST');
    await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20, origin: REGION, afterOriginOffset: -1, session: 's2' });
    const wrong = await fetch(c, 'geo', { fetchOffset: -2, maxBytes: 1 << 20, origin: 'us-east', afterOriginOffset: -1, session: 's2' });
    expect(errorOf(wrong.error)?.message).toMatch(/is for geo-0 \(origin eu-west\)/);
  });
});

describe('a run of applied batches in one produce', () => {
  async function produceRun(c: RawClient, topic: string, records: Buffer, originCursorExpected?: number) {
    const r = await c.call('Produce', { acks: Acks.ALL as 3, timeoutMs: 5000, topics: [{ name: topic, partitions: [{ partition: 0, records, ...(originCursorExpected !== undefined ? { originCursorExpected } : {}) }] }] });
    return r.topics[0]!.partitions[0]!;
  }

  it('appends the run in order, each conditional on the one before; a refused one stops the rest', async () => {
    const { c } = await start();
    await createTopic(c, 'geo');
    const run = Buffer.concat([await applied('us-east', 0, 'a', 'b'), await applied('us-east', 5, 'c'), await applied('us-east', 6, 'd')]);
    const ok = await produceRun(c, 'geo', run, -1);
    expect(ok.error ?? null).toBeNull();
    expect([Number(ok.baseOffset)]).toEqual([0]);
    // Sent again: every batch held, a duplicate.
    expect((await produceRun(c, 'geo', run, -1)).duplicate).toBe(true);
    // A run whose first batch expects a cursor the partition is not at: nothing of it is written.
    const gap = Buffer.concat([await applied('us-east', 9, 'x'), await applied('us-east', 10, 'y')]);
    const refused = await produceRun(c, 'geo', gap, 7);
    expect(errorOf(refused.error)?.code).toBe('ORIGIN_CURSOR_MISMATCH');
    expect(Number((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).logEndOffset)).toBe(4);
  });

  it('takes several batches only as a run of one origin with an expected cursor', async () => {
    const { c } = await start();
    await createTopic(c, 'geo');
    const two = Buffer.concat([await applied('us-east', 0, 'a'), await applied('us-east', 1, 'b')]);
    expect(errorOf((await produceRun(c, 'geo', two)).error)?.message).toMatch(/send one batch per partition per request/);
    const mixed = Buffer.concat([await applied('us-east', 0, 'a'), await applied('ap-south', 0, 'b')]);
    expect(errorOf((await produceRun(c, 'geo', mixed, -1)).error)?.code).toBe('INVALID_REQUEST');
    const ownPlusApplied = Buffer.concat([await own('mine'), await applied('us-east', 0, 'a')]);
    expect(errorOf((await produceRun(c, 'geo', ownPlusApplied, -1)).error)?.code).toBe('INVALID_REQUEST');
    expect(Number((await fetch(c, 'geo', { fetchOffset: 0, maxBytes: 1 << 20 })).logEndOffset)).toBe(0);
  });
});
