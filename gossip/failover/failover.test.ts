// Proves failover's moving parts over a cell in memory and a shared mesh state: the publisher
// writes a group's vectors for global topics only, once per change and incrementally; the
// translator stores `__geo.<region>.<group>`; a failover refuses this region, an unknown region, a
// group never published and a group with live members, writing nothing; and, end to end, what a
// group consumed in A before the failover plus what it consumes in B after it (with the filter)
// is every record exactly once.
import { describe, expect, it } from 'vitest';
import { GeoFilter, geoMetadata, parseGeoMetadata } from '../../src/client/index.ts';
import { FakeClock, isEdgeqError } from '../../src/core/index.ts';
import { decodeBatchesWithOrigin } from '../../src/log/index.ts';
import { InstantMesh } from '../exchange/test-support.ts';
import { failoverGroup } from './failover.ts';
import { groupKey } from './group-entry.ts';
import { GroupPublisher } from './group-publisher.ts';
import { GroupTranslator } from './group-translator.ts';
import { FakeGeoCell } from './test-support.ts';

const clock = new FakeClock(1_000);

/** Two regions holding the same records of t/0 in different orders (own writes first in each). */
async function world() {
  const mesh = new InstantMesh();
  const ma = mesh.member('A');
  const mb = mesh.member('B');
  const a = new FakeGeoCell('A');
  const b = new FakeGeoCell('B');
  // Own records' origin offsets are their offsets, so A: own 0..4, B's 0..2, own 8..9, B's 8..10;
  // and B: own 0..2, A's 0..4, own 8..10, A's 8..9.
  await a.append('t', 0, 5);
  await a.append('t', 0, 3, { region: 'B', offset: 0 });
  await a.append('t', 0, 2);
  await a.append('t', 0, 3, { region: 'B', offset: 8 });
  await b.append('t', 0, 3);
  await b.append('t', 0, 5, { region: 'A', offset: 0 });
  await b.append('t', 0, 3);
  await b.append('t', 0, 2, { region: 'A', offset: 8 });
  const publisher = new GroupPublisher({ mesh: ma, cell: a, topics: () => new Set(['t']), clock });
  const translator = new GroupTranslator({ mesh: mb, cell: b, otherRegions: () => ['A'] });
  return { mesh, ma, mb, a, b, publisher, translator };
}

/** Every record of t/0 in a cell as "origin:originOffset" with its local offset. */
async function records(cell: FakeGeoCell): Promise<{ offset: number; originRegion: string | null; originOffset: number; id: string }[]> {
  const decoded = await decodeBatchesWithOrigin(Buffer.concat(cell.logs.get('t/0')!), 0);
  return decoded.map((r) => ({ offset: r.offset, originRegion: r.originRegion, originOffset: r.originOffset, id: r.originRegion ? `${r.originRegion}:${r.originOffset}` : `${cell.region}:${r.offset}` }));
}

describe('publishing group positions', () => {
  it('publishes global topics only, once per change, and moves forward incrementally', async () => {
    const w = await world();
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 7, metadata: '' }, { topic: 'local', partition: 0, offset: 3, metadata: '' }]);
    await w.a.commit('__geo.B.other', [{ topic: 't', partition: 0, offset: 1, metadata: '' }]);
    await w.publisher.publishAll();
    const entry = () => w.mesh.entries.get(groupKey('A', 'g'));
    expect(entry()?.value).toMatchObject({ topics: { t: { '0': { offset: 7, vector: { A: 4, B: 1 } } } } });
    expect(Object.keys((entry()!.value as { topics: object }).topics)).toEqual(['t']);
    expect(w.mesh.entries.has(groupKey('A', '__geo.B.other'))).toBe(false);
    const version = entry()!.version;
    await w.publisher.publishAll();
    expect(entry()!.version).toBe(version);
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 11, metadata: '' }]);
    await w.publisher.publishAll();
    expect(entry()?.value).toMatchObject({ topics: { t: { '0': { offset: 11, vector: { A: 9, B: 8 } } } } });
    // Forward from 11 to 13: one read from 11 on (the whole log takes two).
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 13, metadata: '' }]);
    w.a.reads = 0;
    await w.publisher.publishAll();
    expect(entry()?.value).toMatchObject({ topics: { t: { '0': { offset: 13, vector: { A: 9, B: 10 } } } } });
    expect(w.a.reads).toBe(1);
    // A commit that still carries a translated position (the group moved here, below its horizon)
    // publishes what the position covers too.
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 13, metadata: geoMetadata({ from: 'B', vector: { B: 12, C: 4 }, filterUntil: 20 }) }]);
    await w.publisher.publishAll();
    expect(entry()?.value).toMatchObject({ topics: { t: { '0': { offset: 13, vector: { A: 9, B: 12, C: 4 } } } } });
    // Back to 2: from the log start.
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 2, metadata: '' }]);
    await w.publisher.publishAll();
    expect(entry()?.value).toMatchObject({ topics: { t: { '0': { offset: 2, vector: { A: 1 } } } } });
  });
});

describe('translating and failing over', () => {
  it('stores the translation in __geo.<region>.<group> with the vector and the horizon', async () => {
    const w = await world();
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 7, metadata: '' }]);
    await w.publisher.publishAll();
    await w.translator.translateAll();
    const [c] = await w.b.groupCommits('__geo.A.g');
    // Vector {A: 4, B: 1}: B's own 0..1 covered, own 2 not: start 2; A's 0..4 (3..7) covered after it.
    expect(c).toMatchObject({ topic: 't', partition: 0, offset: 2 });
    expect(parseGeoMetadata(c!.metadata)).toEqual({ from: 'A', vector: { A: 4, B: 1 }, filterUntil: 8 });
  });

  it('refuses this region, an unknown region, a group never published and live members, writing nothing', async () => {
    const w = await world();
    await w.a.commit('g', [{ topic: 't', partition: 0, offset: 7, metadata: '' }]);
    await w.publisher.publishAll();
    const d = { self: 'B', otherRegions: () => ['A'], translator: w.translator, cell: w.b };
    const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (isEdgeqError(e) ? e.code : String(e)));
    expect(await codeOf(failoverGroup(d, 'g', 'B'))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(failoverGroup(d, 'g', 'Z'))).toBe('NOT_FOUND');
    expect(await codeOf(failoverGroup(d, 'never', 'A'))).toBe('NOT_FOUND');
    w.b.members.set('g', 2);
    expect(await codeOf(failoverGroup(d, 'g', 'A'))).toBe('GROUP_NOT_EMPTY');
    expect(await w.b.groupCommits('g')).toEqual([]);
    expect(await w.b.groupCommits('__geo.A.g')).toEqual([]);
    w.b.members.set('g', 0);
    const r = await failoverGroup(d, 'g', 'A');
    expect(r).toEqual({ group: 'g', from: 'A', partitions: [{ topic: 't', partition: 0, startOffset: 2, filterUntil: 8, vector: { A: 4, B: 1 } }] });
    expect((await w.b.groupCommits('g'))[0]).toMatchObject({ offset: 2 });
  });

  it('what the group saw in A before the failover plus what it sees in B after it is every record exactly once, at every commit point', async () => {
    const w = await world();
    const inA = await records(w.a);
    const inB = await records(w.b);
    for (let n = 0; n <= inA.length; n++) {
      await w.a.commit('g', [{ topic: 't', partition: 0, offset: n, metadata: '' }]);
      await w.publisher.publishAll();
      w.b.commits.delete('g');
      const r = await failoverGroup({ self: 'B', otherRegions: () => ['A'], translator: w.translator, cell: w.b }, 'g', 'A');
      const p = r.partitions[0]!;
      const filter = new GeoFilter({ from: 'A', vector: p.vector, filterUntil: p.filterUntil });
      const seen = [...inA.slice(0, n), ...inB.filter((x) => x.offset >= p.startOffset && !filter.skips(x, 'B'))].map((x) => x.id);
      expect(seen.sort(), `commit ${n}`).toEqual(inA.map((x) => x.id).sort());
    }
  });
});
