// Proves the per-origin guard on a real log: a batch of an origin at or below its cursor is a
// duplicate (nothing written, its local offsets answered), one straddling the cursor is refused
// with ORIGIN_OVERLAP, a jump ahead is written, follower copies are recorded and never refused,
// the state rebuilt from the log equals the incremental one, a truncation rolls it back, the index
// stays within its bound, retention drops index entries but keeps the cursor, and the producer
// state ignores origin-tagged batches (their producer ids belong to another region).
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../core/index.ts';
import { buildBatch, MemoryStorage, PartitionLog } from '../log/index.ts';
import { composeGuards, OriginState } from './origin-state.ts';
import { ProducerState } from './producer-state.ts';

const DIR = '/data/g-0';
const NOW = 1_700_000_000_000;

/** A batch of `n` records applied from `region`, its first record at origin offset `offset`. */
function fromOrigin(region: string, offset: number, n = 2, extra: { producerId?: number; baseSequence?: number; baseOffset?: number } = {}): Promise<Buffer> {
  return buildBatch(
    Array.from({ length: n }, (_, i) => ({ value: `${region}-${offset + i}` })),
    { origin: { region, offset }, nowMs: NOW, ...(extra.producerId !== undefined ? { producerId: extra.producerId, producerEpoch: 0, baseSequence: extra.baseSequence ?? 0 } : {}), ...(extra.baseOffset !== undefined ? { baseOffset: extra.baseOffset } : {}) },
  );
}

const own = (n = 1) => buildBatch(Array.from({ length: n }, (_, i) => ({ value: `own-${i}` })), { nowMs: NOW });

async function open(storage: MemoryStorage, config: Record<string, unknown> = {}, indexEntriesMax?: number) {
  const log = await PartitionLog.open(DIR, { flushPolicy: 'sync', ...config }, { storage });
  const origins = new OriginState(indexEntriesMax !== undefined ? { indexEntriesMax } : {});
  await origins.rebuild(log);
  const producers = new ProducerState();
  await producers.rebuild(log, storage);
  log.setAppendGuard(composeGuards(origins, producers));
  return { log, origins, producers };
}

async function errorOf(p: Promise<unknown>): Promise<{ code: string; retriable: boolean; details: Record<string, unknown> } | null> {
  return p.then(
    () => null,
    (e: unknown) => (isEdgeqError(e) ? { code: e.code, retriable: e.retriable, details: e.details } : { code: String(e), retriable: false, details: {} }),
  );
}

describe('OriginState as an append guard', () => {
  it('answers a batch at or below the cursor as a duplicate with its local offsets, writing nothing', async () => {
    const { log, origins } = await open(new MemoryStorage());
    await log.append(await own(3)); // local 0..2
    const a = await log.append(await fromOrigin('us-east', 0, 2)); // local 3..4
    const b = await log.append(await fromOrigin('us-east', 2, 3)); // local 5..7
    expect([a.baseOffset, b.baseOffset]).toEqual([3, 5]);
    expect(origins.cursors()).toEqual({ 'us-east': 4 });
    const again = await log.append(await fromOrigin('us-east', 2, 3));
    expect(again).toMatchObject({ baseOffset: 5, lastOffset: 7, duplicate: true });
    // A sub-range of one held batch maps to its exact local offsets (origin offsets run contiguously in a batch).
    expect(await log.append(await fromOrigin('us-east', 3, 1))).toMatchObject({ baseOffset: 6, lastOffset: 6, duplicate: true });
    expect(log.logEndOffset).toBe(8);
  });

  it('an expected cursor: appended when it matches, ORIGIN_CURSOR_MISMATCH (nothing written) when not, a held batch still a duplicate', async () => {
    const { log, origins } = await open(new MemoryStorage());
    expect((await log.append(await fromOrigin('us-east', 0, 2), { originCursorExpected: -1 })).baseOffset).toBe(0);
    // A pipeline whose batch 2..3 did not land: 4..5 expects the cursor at 3, it is at 1.
    const err = await errorOf(log.append(await fromOrigin('us-east', 4, 2), { originCursorExpected: 3 }));
    expect(err).toMatchObject({ code: 'ORIGIN_CURSOR_MISMATCH', retriable: false, details: { origin: 'us-east', cursor: 1, expected: 3 } });
    expect(log.logEndOffset).toBe(2);
    expect((await log.append(await fromOrigin('us-east', 2, 2), { originCursorExpected: 1 })).baseOffset).toBe(2);
    // In one write group, the second expects what the first leaves.
    const [a, b] = await Promise.all([log.append(await fromOrigin('us-east', 4, 1), { originCursorExpected: 3 }), log.append(await fromOrigin('us-east', 5, 1), { originCursorExpected: 4 })]);
    expect([a.baseOffset, b.baseOffset]).toEqual([4, 5]);
    expect(await log.append(await fromOrigin('us-east', 0, 2), { originCursorExpected: 99 })).toMatchObject({ duplicate: true, baseOffset: 0 });
    expect(origins.cursor('us-east')).toBe(5);
  });

  it('recognises a duplicate staged in the same write group', async () => {
    const { log } = await open(new MemoryStorage());
    const [x, y] = await Promise.all([log.append(await fromOrigin('eu-west', 10, 2)), log.append(await fromOrigin('eu-west', 10, 2))]);
    expect(x).toMatchObject({ baseOffset: 0 });
    expect(x.duplicate).toBeUndefined();
    expect(y).toMatchObject({ baseOffset: 0, lastOffset: 1, duplicate: true });
    expect(log.logEndOffset).toBe(2);
  });

  it('refuses a batch that straddles the cursor (ORIGIN_OVERLAP, not retriable) and writes nothing; a jump ahead is legal', async () => {
    const { log, origins } = await open(new MemoryStorage());
    await log.append(await fromOrigin('us-east', 0, 5)); // origin 0..4
    const err = await errorOf(log.append(await fromOrigin('us-east', 3, 4))); // origin 3..6
    expect(err).toEqual({ code: 'ORIGIN_OVERLAP', retriable: false, details: { origin: 'us-east', cursor: 4, base: 3, last: 6 } });
    expect(log.logEndOffset).toBe(5);
    expect(origins.cursor('us-east')).toBe(4);
    // The origin's log also holds records it applied from others: its own offsets skip ahead.
    expect(await log.append(await fromOrigin('us-east', 40, 2))).toMatchObject({ baseOffset: 5, lastOffset: 6 });
    expect(origins.cursor('us-east')).toBe(41);
    // Origins are independent.
    expect(await log.append(await fromOrigin('ap-south', 0, 1))).toMatchObject({ baseOffset: 7 });
    expect(origins.cursors()).toEqual({ 'us-east': 41, 'ap-south': 0 });
  });

  it('records follower copies and never refuses them', async () => {
    const { log, origins } = await open(new MemoryStorage());
    await log.append(await fromOrigin('us-east', 0, 4, { baseOffset: 0 }), { assignOffsets: false });
    expect(origins.cursor('us-east')).toBe(3);
    // What the leader wrote is copied even when this replica's cursor says it is held (an overlap here).
    const r = await log.append(await fromOrigin('us-east', 2, 4, { baseOffset: 4 }), { assignOffsets: false });
    expect(r).toMatchObject({ baseOffset: 4, lastOffset: 7 });
    expect(r.duplicate).toBeUndefined();
    expect(origins.cursor('us-east')).toBe(5);
  });

  it('own deleted: the last own offset retention took, not the applied records around it', async () => {
    const config = { segmentBytesMax: 500, messageBytesMax: 500, retentionBytes: 500, tailCacheBytesMax: 0 };
    const { log, origins } = await open(new MemoryStorage(), config);
    const pad = (v: string) => v.padEnd(150, '~');
    await log.append(await buildBatch([{ value: pad('own-0') }], { nowMs: NOW })); // 0
    for (let i = 0; i < 5; i++) await log.append(await buildBatch([{ value: pad(`e${i}`) }], { origin: { region: 'us-east', offset: i }, nowMs: NOW })); // 1..5
    expect(origins.ownDeletedUpTo()).toBe(-1);
    await log.applyRetention();
    expect(log.logStartOffset).toBeGreaterThan(1);
    // Offsets 1.. were us-east's: only offset 0 was this region's own.
    expect(origins.ownDeletedUpTo()).toBe(0);
    expect(origins.ownHead(log.logEndOffset)).toBe(-1);
  });

  it('reports nothing deleted while the log starts at 0', async () => {
    const { log, origins } = await open(new MemoryStorage());
    await log.append(await fromOrigin('us-east', 0, 2));
    expect(origins.deletedUpTo()).toEqual({});
  });

  it("own head: the last own record below the HW, not a record applied from another region", async () => {
    const { log, origins } = await open(new MemoryStorage());
    expect(origins.ownHead(0)).toBe(-1);
    await log.append(await own(2)); // 0..1
    await log.append(await fromOrigin('us-east', 0, 2)); // 2..3
    expect(origins.ownHead(4)).toBe(1);
    await log.append(await own(1)); // 4
    expect(origins.ownHead(4)).toBe(1); // 4 is not below the HW yet
    expect(origins.ownHead(5)).toBe(4);
    const again = new OriginState();
    await again.rebuild(log);
    expect(again.ownHead(5)).toBe(4);
  });

  it('rebuilds from the log to the state it reached incrementally, and a truncation rolls it back', async () => {
    const storage = new MemoryStorage();
    const { log, origins } = await open(storage);
    const plan: [string | null, number, number][] = [
      ['us-east', 0, 2], [null, 0, 1], ['eu-west', 5, 3], ['us-east', 2, 2], [null, 0, 2], ['us-east', 9, 1], ['eu-west', 8, 2],
    ];
    const bases: number[] = [];
    for (const [region, offset, n] of plan) bases.push((await log.append(region ? await fromOrigin(region, offset, n) : await own(n))).baseOffset);
    const locates = (s: OriginState) => [-1, 0, 1, 3, 4, 9, 20].flatMap((x) => [s.locate('us-east', x), s.locate('eu-west', x)]);
    const incremental = { cursors: origins.cursors(), locates: locates(origins) };
    expect(incremental.cursors).toEqual({ 'us-east': 9, 'eu-west': 9 });

    const rebuilt = new OriginState();
    expect(await rebuilt.rebuild(log)).toBe(plan.length);
    expect({ cursors: rebuilt.cursors(), locates: locates(rebuilt) }).toEqual(incremental);

    // Cut the log before the third us-east batch: its cursor goes back to 3, eu-west to 7.
    await log.truncateTo(bases[3]!);
    await origins.rebuild(log);
    expect(origins.cursors()).toEqual({ 'us-east': 1, 'eu-west': 7 });
    // …and the batch that was cut is no longer a duplicate.
    const r = await log.append(await fromOrigin('us-east', 2, 2));
    expect(r.duplicate).toBeUndefined();
    expect(r.baseOffset).toBe(bases[3]);
    await log.close();

    // Reopened, the state comes back from the log alone.
    const again = await open(storage);
    expect(again.origins.cursors()).toEqual({ 'us-east': 3, 'eu-west': 7 });
    expect((await again.log.append(await fromOrigin('us-east', 0, 2))).duplicate).toBe(true);
  });

  it('locates the local offset to scan from: the last entry at or below, else the log start', async () => {
    const { log, origins } = await open(new MemoryStorage());
    await log.append(await own(2)); // 0..1
    await log.append(await fromOrigin('us-east', 100, 2)); // local 2..3, origin 100..101
    await log.append(await own(1)); // 4
    await log.append(await fromOrigin('us-east', 102, 2)); // local 5..6, origin 102..103
    expect(origins.locate('us-east', 50)).toBe(0);
    expect(origins.locate('us-east', 100)).toBe(0); // the entry 100..101 is not all at or below 100
    expect(origins.locate('us-east', 101)).toBe(2);
    expect(origins.locate('us-east', 102)).toBe(2);
    expect(origins.locate('us-east', 103)).toBe(5);
    expect(origins.locate('nowhere', 5)).toBe(0);
  });

  it('keeps the index within its bound by thinning, and lookups stay safe', async () => {
    const { log, origins } = await open(new MemoryStorage(), {}, 8);
    for (let i = 0; i < 50; i++) await log.append(await fromOrigin('us-east', i * 2, 2)); // local = origin
    expect(origins.indexEntries('us-east')).toBeLessThanOrEqual(8);
    expect(origins.cursor('us-east')).toBe(99);
    for (const after of [0, 13, 57, 97, 99]) {
      const at = origins.locate('us-east', after);
      // Never past the first record after `after` (local offsets equal origin offsets here).
      expect(at).toBeLessThanOrEqual(after + 1);
    }
    expect(origins.locate('us-east', 99)).toBe(98); // the newest entry is always kept
    // A duplicate whose entry was thinned away still answers (conservatively: the cursor's batch).
    const dup = await log.append(await fromOrigin('us-east', 2, 2));
    expect(dup.duplicate).toBe(true);
    expect(dup.lastOffset).toBeGreaterThanOrEqual(3);
    expect(log.logEndOffset).toBe(100);
  });

  it('drops index entries below the log start after retention, keeping the cursor', async () => {
    // Two ~220-byte batches fill a 500-byte segment; retention keeps the newest ~500 bytes.
    const config = { segmentBytesMax: 500, messageBytesMax: 500, retentionBytes: 500, tailCacheBytesMax: 0 };
    const { log, origins } = await open(new MemoryStorage(), config);
    for (let i = 0; i < 6; i++) {
      await log.append(await buildBatch([{ value: `r${i}`.padEnd(150, '~') }], { origin: { region: 'us-east', offset: i }, nowMs: NOW }));
    }
    expect(origins.indexEntries('us-east')).toBe(6);
    await log.applyRetention();
    expect(log.logStartOffset).toBeGreaterThan(0);
    expect(origins.locate('us-east', 0)).toBe(log.logStartOffset);
    expect(origins.indexEntries('us-east')).toBe(6 - log.logStartOffset);
    expect(origins.cursor('us-east')).toBe(5);
    // What retention took is reported, so a relay never serves a region that needs it.
    expect(origins.deletedUpTo()).toEqual({ 'us-east': log.logStartOffset - 1 });
    // And after a restart (the rebuild sees only what is left), the same bound holds.
    const again = new OriginState();
    await again.rebuild(log);
    expect(again.deletedUpTo()).toEqual({ 'us-east': log.logStartOffset - 1 });
  });

  it('leaves origin-tagged batches to the origin state: their producer fields never reach the producer state', async () => {
    const { log, producers } = await open(new MemoryStorage());
    // Producer 7 of another region, at sequence 40: the local producer state would refuse it as out of order.
    expect((await log.append(await fromOrigin('us-east', 0, 2, { producerId: 7, baseSequence: 40 }))).baseOffset).toBe(0);
    expect(producers.size).toBe(0);
    // A local producer 7 starts at 0 as usual, and its retry is still recognised.
    const local = () => buildBatch([{ value: 'x' }], { producerId: 7, producerEpoch: 0, baseSequence: 0, nowMs: NOW });
    expect((await log.append(await local())).baseOffset).toBe(2);
    expect(await log.append(await local())).toMatchObject({ baseOffset: 2, duplicate: true });
  });
});
