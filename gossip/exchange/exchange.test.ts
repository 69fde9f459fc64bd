import { afterEach, describe, expect, it } from 'vitest';
import { Exchange } from './exchange.ts';
import { eventually, FakeWorld, InstantMesh } from './test-support.ts';
import type { GapEvent } from './replicator.ts';

const T = 'orders';
const FAST = { fetchWaitMs: 20, backoffMsMin: 5, backoffMsMax: 50, watchIntervalMs: 20, publishDelayMs: 1, fetchTimeoutMs: 500 };

let running: Exchange[] = [];
afterEach(async () => {
  await Promise.all(running.map((e) => e.stop()));
  running = [];
});

function deploy(regions: string[], partitions = 1, limits: Record<string, number> = {}) {
  const world = new FakeWorld();
  const mesh = new InstantMesh();
  const meshes = regions.map((r) => mesh.member(r));
  const exchanges = regions.map((r, i) => new Exchange({ mesh: meshes[i]!, cells: world.cells(r), topics: () => [{ name: T, partitions }], limits: { ...FAST, ...limits } }));
  running.push(...exchanges);
  return { world, mesh, exchanges, start: () => exchanges.forEach((e) => e.start()) };
}

/** Per origin, the origin offsets and values in log order. */
async function byOrigin(world: FakeWorld, region: string, partition = 0) {
  const out = new Map<string, string[]>();
  for (const r of await world.records(region, T, partition)) {
    const l = out.get(r.origin) ?? [];
    l.push(`${r.originOffset}=${r.value}`);
    out.set(r.origin, l);
  }
  return out;
}

async function converged(world: FakeWorld, regions: string[], expected: number, partition = 0): Promise<boolean> {
  for (const r of regions) if ((await world.records(r, T, partition)).length !== expected) return false;
  return true;
}

describe('Exchange', () => {
  it('every region ends with every record exactly once, in origin order, while all three write', async () => {
    const regions = ['a', 'b', 'c'];
    const { world, start } = deploy(regions);
    start();
    let n = 0;
    for (let round = 0; round < 20; round++) {
      for (const r of regions) {
        const values = [`${r}-${round}-0`, `${r}-${round}-1`];
        await world.produce(r, T, 0, values);
        n += values.length;
      }
      if (round % 5 === 0) await new Promise((res) => setTimeout(res, 15));
    }
    await eventually('every region holds every record', 10_000, () => converged(world, regions, n));
    const views = await Promise.all(regions.map((r) => byOrigin(world, r)));
    for (const origin of regions) {
      const seq = views[0]!.get(origin)!;
      expect(seq).toHaveLength(40);
      for (const v of views) expect(v.get(origin)).toEqual(seq);
      const offsets = seq.map((s) => Number(s.split('=')[0]));
      for (let i = 1; i < offsets.length; i++) expect(offsets[i]!).toBeGreaterThan(offsets[i - 1]!);
    }
    // No loops: a region's log holds every other origin's records once, its own never as applied.
    for (const r of regions) {
      const all = await world.records(r, T, 0);
      expect(new Set(all.map((x) => x.value)).size).toBe(n);
    }
  });

  it('reaches a region through another when the direct link is down (relay), exactly once', async () => {
    const regions = ['a', 'b', 'c'];
    const { world, exchanges, start } = deploy(regions);
    world.partition('a', 'c');
    start();
    for (let i = 0; i < 10; i++) await world.produce('a', T, 0, [`a-${i}`]);
    await eventually('c holds a\'s records through b', 10_000, async () => (await byOrigin(world, 'c')).get('a')?.length === 10);
    expect((await byOrigin(world, 'c')).get('a')).toEqual((await byOrigin(world, 'b')).get('a'));
    const c = exchanges[2]!;
    expect(c.linkStatus().find((l) => l.source === 'a')?.healthy).toBe(false);
    expect(c.replication().find((s) => s.origin === 'a')?.source).toBe('b');
    // Healed: the direct link is used again and nothing is doubled.
    world.partition('a', 'c', false);
    for (let i = 10; i < 15; i++) await world.produce('a', T, 0, [`a-${i}`]);
    await eventually('c holds all 15 of a', 10_000, async () => (await byOrigin(world, 'c')).get('a')?.length === 15);
    await eventually('c fetches from a again', 5_000, () => c.replication().find((s) => s.origin === 'a')?.source === 'a');
    expect((await world.records('c', T, 0)).length).toBe(15);
  });

  it('recovers its cursors from the log after a restart: nothing applied twice', async () => {
    const regions = ['a', 'b'];
    const first = deploy(regions);
    first.start();
    for (let i = 0; i < 5; i++) await first.world.produce('a', T, 0, [`a-${i}`]);
    await eventually('b has 5', 5_000, async () => (await first.world.records('b', T, 0)).length === 5);
    await first.exchanges[1]!.stop();
    for (let i = 5; i < 8; i++) await first.world.produce('a', T, 0, [`a-${i}`]);
    const mesh = new InstantMesh();
    const again = new Exchange({ mesh: mesh.member('b'), cells: first.world.cells('b'), topics: () => [{ name: T, partitions: 1 }], limits: FAST });
    mesh.member('a');
    running.push(again);
    again.start();
    await eventually('b has 8', 5_000, async () => (await first.world.records('b', T, 0)).length === 8);
    expect((await byOrigin(first.world, 'b')).get('a')).toEqual(Array.from({ length: 8 }, (_, i) => `${i}=a-${i}`));
  });

  it('reports a retention gap with its first and last missing origin offsets, then goes on', async () => {
    const { world, exchanges, start } = deploy(['a', 'b']);
    world.partition('a', 'b');
    start();
    for (let i = 0; i < 10; i++) await world.produce('a', T, 0, [`a-${i}`]);
    world.log('a', T, 0).deleteBefore(6);
    const gaps: GapEvent[] = [];
    exchanges[1]!.onGap((g) => gaps.push(g));
    world.partition('a', 'b', false);
    await eventually('b has the 4 that are left', 10_000, async () => (await world.records('b', T, 0)).length === 4);
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ origin: 'a', topic: T, partition: 0, firstMissingOriginOffset: 0, lastMissingOriginOffset: 5, records: 6 });
    expect(exchanges[1]!.gaps()).toHaveLength(1);
    expect(exchanges[1]!.totals.gapRecords.get(`a/${T}/0`)).toBe(6);
    expect((await byOrigin(world, 'b')).get('a')).toEqual(['6=a-6', '7=a-7', '8=a-8', '9=a-9']);
  });

  it('never relays from a region whose retention took records past the cursor: the gap is reported by the origin instead', async () => {
    const { world, exchanges, start } = deploy(['a', 'b', 'c']);
    world.partition('a', 'c');
    world.partition('b', 'c');
    start();
    for (let i = 0; i < 10; i++) await world.produce('a', T, 0, [`a-${i}`]);
    await eventually('b has a\'s 10', 5_000, async () => (await world.records('b', T, 0)).length === 10);
    // Retention in both a and b took the first six.
    world.log('a', T, 0).deleteBefore(6);
    world.log('b', T, 0).deleteBefore(6);
    const gaps: GapEvent[] = [];
    exchanges[2]!.onGap((g) => gaps.push(g));
    world.partition('b', 'c', false);
    // b would hand c records 6..9 as if they were all there is: c must not take them from b.
    await eventually('c sees b\'s retention bound', 5_000, () => exchanges[2]!.board.get('b', T, 0)?.deleted?.['a'] === 5);
    const fetchesBefore = world.fetches;
    await eventually('c tries sources a few times', 5_000, () => world.fetches > fetchesBefore + 5);
    expect(await world.records('c', T, 0)).toHaveLength(0);
    world.partition('a', 'c', false);
    await eventually('c has the 4 that are left', 10_000, async () => (await world.records('c', T, 0)).length === 4);
    expect(gaps).toEqual([expect.objectContaining({ origin: 'a', firstMissingOriginOffset: 0, lastMissingOriginOffset: 5, records: 6 })]);
  });

  it('appends in flight one behind another: a refused one leaves no hole, the rest are re-read from the log and applied once', async () => {
    const { world, exchanges, start } = deploy(['a', 'b']);
    // 30 one-record batches at a before b starts: b's replicator pipelines their appends.
    for (let i = 0; i < 30; i++) await world.produce('a', T, 0, [`a-${i}`]);
    world.failApplyAt = 5;
    start();
    await eventually('b holds all 30', 10_000, async () => (await world.records('b', T, 0)).length === 30);
    expect((await byOrigin(world, 'b')).get('a')).toEqual(Array.from({ length: 30 }, (_, i) => `${i}=a-${i}`));
    expect(exchanges[1]!.replication()[0]!.appliedOriginOffset).toBe(29);
  });

  it('acks=geo: resolves when N other regions applied the offset, GEO_TIMEOUT otherwise', async () => {
    const { world, exchanges, start } = deploy(['a', 'b', 'c']);
    world.partition('a', 'c');
    world.partition('b', 'c');
    start();
    await world.produce('a', T, 0, ['x', 'y']);
    await expect(exchanges[0]!.waitApplied(T, 0, 1, 1, 5_000)).resolves.toEqual(['b']);
    await expect(exchanges[0]!.waitApplied(T, 0, 1, 2, 300)).rejects.toMatchObject({ code: 'GEO_TIMEOUT', details: { appliedIn: ['b'] } });
  });

  it('a replicator whose source never answers while the origin moves on is reported stalled and restarted', async () => {
    const { world, exchanges, start } = deploy(['a', 'b'], 1, { stallMs: 200 });
    start();
    await world.produce('a', T, 0, ['one']);
    await eventually('b has one', 5_000, async () => (await world.records('b', T, 0)).length === 1);
    world.hanging.add('a');
    await eventually('a fetch hangs', 5_000, () => world.hung > 0);
    const stalls: string[] = [];
    exchanges[1]!.onStall((s) => stalls.push(`${s.origin}/${s.partition}`));
    await world.produce('a', T, 0, ['two']);
    await eventually('a stall is reported', 5_000, () => stalls.length > 0);
    expect(stalls[0]).toBe('a/0');
    expect(exchanges[1]!.totals.stalls).toBeGreaterThan(0);
    world.hanging.delete('a');
    await eventually('b has two after the restart', 5_000, async () => (await world.records('b', T, 0)).length === 2);
    expect(exchanges[1]!.replication()[0]!.stalled).toBe(false);
  });
});
