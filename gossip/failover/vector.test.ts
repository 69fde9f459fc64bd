// Proves the vector arithmetic of failover over real batch headers: the vector of a committed
// offset (own and applied batches, N inside a batch), and its translation into another region's
// log (start = first uncovered record, horizon = after the last covered one past it, early end).
import { describe, expect, it } from 'vitest';
import { FakeGeoCell } from './test-support.ts';
import { scanLog } from './log-scan.ts';
import { advanceVector, Translation, vectorCovers, type BatchSpan } from './vector.ts';

async function spans(cell: FakeGeoCell, topic = 't'): Promise<BatchSpan[]> {
  const out: BatchSpan[] = [];
  await scanLog(cell, cell.region, topic, 0, { from: 0 }, (s) => {
    out.push(...s);
  });
  return out;
}

/** A's log: own 0..2, B's 0..3 at 3..6, own 3 at 7, C's 0..1 at 8..9, B's 4..5 at 10..11. */
async function regionA(): Promise<FakeGeoCell> {
  const a = new FakeGeoCell('A');
  await a.append('t', 0, 3);
  await a.append('t', 0, 4, { region: 'B', offset: 0 });
  await a.append('t', 0, 1);
  await a.append('t', 0, 2, { region: 'C', offset: 0 });
  await a.append('t', 0, 2, { region: 'B', offset: 4 });
  return a;
}

describe('the vector of a committed offset', () => {
  it('per origin, the highest origin offset below N (own records: their offset)', async () => {
    const s = await spans(await regionA());
    expect(s.map((x) => x.origin)).toEqual(['A', 'B', 'A', 'C', 'B']);
    expect(advanceVector({}, s, 0, 0)).toEqual({});
    expect(advanceVector({}, s, 0, 12)).toEqual({ A: 7, B: 5, C: 1 });
    // N inside a batch: originOffset + (N - 1 - baseOffset).
    expect(advanceVector({}, s, 0, 5)).toEqual({ A: 2, B: 1 });
    expect(advanceVector({}, s, 0, 9)).toEqual({ A: 7, B: 3, C: 0 });
  });

  it('moves forward from a cached (N, V) to the same result as a scan from the start', async () => {
    const s = await spans(await regionA());
    const cached = advanceVector({}, s, 0, 5);
    expect(advanceVector({ ...cached }, s, 5, 11)).toEqual(advanceVector({}, s, 0, 11));
  });

  it('vectorCovers compares entry by entry', () => {
    expect(vectorCovers({ A: 3, B: 1 }, { A: 2 })).toBe(true);
    expect(vectorCovers({ A: 3 }, { A: 2, B: 0 })).toBe(false);
  });
});

describe('the translation into another log', () => {
  /** B's log of the same topic, in another interleaving: own 0..5 (two batches), A 0..2, C 0..1, A 3..7. */
  async function regionB(): Promise<FakeGeoCell> {
    const b = new FakeGeoCell('B');
    await b.append('t', 0, 4);
    await b.append('t', 0, 2);
    await b.append('t', 0, 3, { region: 'A', offset: 0 });
    await b.append('t', 0, 2, { region: 'C', offset: 0 });
    await b.append('t', 0, 5, { region: 'A', offset: 3 });
    return b;
  }

  async function translate(cell: FakeGeoCell, v: Record<string, number>): Promise<{ start: number; horizon: number }> {
    const t = new Translation(v, 0);
    const end = await scanLog(cell, cell.region, 't', 0, { from: 0 }, (s) => {
      t.add(s);
      return t.done();
    });
    return t.result(end.highWatermark);
  }

  it('start is the first uncovered record; covered records after it set the horizon', async () => {
    const b = await regionB();
    // The group at A consumed up to 9 there: {A: 7, B: 3, C: 0}.
    const r = await translate(b, { A: 7, B: 3, C: 0 });
    // B's log: own 0..3 covered, own 4 not: start 4; A0..2 (6..8), C0 (9) and A3..7 (11..15) covered after it.
    expect(r).toEqual({ start: 4, horizon: 16 });
  });

  it('every record covered: start is the end, no horizon; nothing covered: start 0', async () => {
    const b = await regionB();
    expect(await translate(b, { A: 7, B: 5, C: 1 })).toEqual({ start: 16, horizon: -1 });
    expect(await translate(b, {})).toEqual({ start: 0, horizon: -1 });
  });

  it('a covered record inside a batch past the start sets the horizon inside it', async () => {
    const b = await regionB();
    // A up to 4: A3..4 at 11..12 covered, the rest of that batch not.
    expect(await translate(b, { A: 4, B: 3 })).toEqual({ start: 4, horizon: 13 });
  });

  it('stops reading once every origin passed its entry after the start', async () => {
    const b = await regionB();
    for (let i = 0; i < 20; i++) await b.append('t', 0, 1);
    b.reads = 0;
    expect(await translate(b, { A: 1, B: -1 })).toEqual({ start: 0, horizon: 8 });
    // A is passed at A2 (offset 8), in the second read of two batches each: not the whole log's 13.
    expect(b.reads).toBe(2);
  });
});
