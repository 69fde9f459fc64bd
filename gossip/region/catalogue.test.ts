// Proves the catalogue of global topics on a fake mesh and fake cells: a topic created or deleted
// in one region is created or deleted in every region; concurrent creates with different
// definitions end the same way everywhere; bad or taken names change nothing; a copy that holds
// records is never dropped to make definitions agree.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, isEdgeqError } from '../../src/core/index.ts';
import { GlobalCatalogue } from './catalogue.ts';
import { FakeCell, FakeMesh } from './test-support.ts';

const SETTLE_MS = 1000;
const running: GlobalCatalogue[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

function regions(names = ['a', 'b', 'c']) {
  const clock = new FakeClock();
  const mesh = new FakeMesh(clock, 200);
  const r = names.map((name) => {
    const member = mesh.member(name);
    const cell = new FakeCell(clock);
    const catalogue = new GlobalCatalogue(member, cell, { clock, settleMs: SETTLE_MS, reconcileIntervalMs: 1000 });
    catalogue.start();
    running.push(catalogue);
    return { name, member, cell, catalogue };
  });
  return { clock, mesh, r };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((res) => setImmediate(res));
}

/** Advances the fake clock in 50 ms steps, letting async work run between them. */
async function advance(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 50) {
    clock.advance(50);
    await flush();
  }
}

async function code(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (isEdgeqError(err)) return err.code;
    throw err;
  }
}

describe('global topic catalogue', () => {
  it('creates a global topic in every region, and deletes it everywhere', async () => {
    const { clock, r } = regions();
    const [a, b, c] = r;
    const created = a!.catalogue.create({ name: 'orders', partitions: 3, config: { 'retention.ms': '60000' } });
    await advance(clock, SETTLE_MS + 100);
    expect((await created).region).toBe('a');
    await advance(clock, 500);
    for (const x of r) {
      expect(x.cell.topicsByName.get('orders'), x.name).toMatchObject({ partitions: 3, scope: 'global', config: { 'retention.ms': '60000' } });
    }
    await b!.catalogue.delete('orders');
    await advance(clock, 500);
    for (const x of r) expect(x.cell.topicsByName.has('orders'), x.name).toBe(false);
    expect(c!.catalogue.list()).toEqual([]);
  });

  it('ends concurrent creates of one name with different definitions the same way everywhere', async () => {
    const { clock, r } = regions();
    const [a, b] = r;
    const fromA = code(a!.catalogue.create({ name: 'race', partitions: 2, config: {} }));
    const fromB = code(b!.catalogue.create({ name: 'race', partitions: 5, config: { 'retention.ms': '1000' } }));
    await advance(clock, SETTLE_MS + 1000);
    const codes = [await fromA, await fromB].map((c) => c ?? 'created');
    // One wins, the other is told so; nobody created a copy of its own definition first.
    expect(codes.sort()).toEqual(['TOPIC_ALREADY_EXISTS', 'created']);
    const winner = a!.catalogue.get('race')!;
    for (const x of r) {
      expect(x.catalogue.get('race'), x.name).toMatchObject({ partitions: winner.partitions, member: winner.member });
      expect(x.cell.topicsByName.get('race')?.partitions, x.name).toBe(winner.partitions);
      // No region made a copy of the losing definition first (each waits out the settle time).
      expect(x.cell.created.filter((c) => c.name === 'race'), x.name).toEqual([{ name: 'race', partitions: winner.partitions }]);
    }
  });

  it('a third region never makes a copy of a definition that then loses to a later concurrent one', async () => {
    const { clock, mesh, r } = regions();
    const [a, b, c] = r;
    // a's news reaches c in 200 ms but b only in 600 ms: b creates the same name at 300 ms, not
    // knowing of a's, and b's (a newer version) wins.
    mesh.setDelay('a-gw', 'b-gw', 600);
    const first = code(a!.catalogue.create({ name: 'late', partitions: 2, config: {} }));
    await advance(clock, 300);
    const second = code(b!.catalogue.create({ name: 'late', partitions: 4, config: {} }));
    await advance(clock, SETTLE_MS + 1500);
    expect([await first, await second]).toEqual(['TOPIC_ALREADY_EXISTS', null]);
    for (const x of r) expect(x.cell.topicsByName.get('late')?.partitions, x.name).toBe(4);
    expect(c!.cell.created.filter((t) => t.name === 'late')).toEqual([{ name: 'late', partitions: 4 }]);
  });

  it('changes nothing on a bad definition or a name taken here or in the catalogue', async () => {
    const { clock, r } = regions(['a', 'b']);
    const [a, b] = r;
    a!.cell.refuse.add('bad');
    expect(await code(a!.catalogue.create({ name: 'bad', partitions: 1, config: {} }))).toBe('INVALID_ARGUMENT');
    await a!.cell.create({ name: 'mine', partitions: 1, config: {} }, 'local');
    expect(await code(a!.catalogue.create({ name: 'mine', partitions: 1, config: {} }))).toBe('TOPIC_ALREADY_EXISTS');
    const ok = a!.catalogue.create({ name: 'g', partitions: 1, config: {} });
    await advance(clock, SETTLE_MS + 500);
    await ok;
    expect(await code(b!.catalogue.create({ name: 'g', partitions: 1, config: {} }))).toBe('TOPIC_ALREADY_EXISTS');
    expect(await code(b!.catalogue.delete('not-global'))).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    await advance(clock, 500);
    expect(a!.catalogue.list().map((t) => t.name)).toEqual(['g']);
    expect(b!.cell.topicsByName.has('bad')).toBe(false);
    expect(b!.cell.topicsByName.has('mine')).toBe(false);
  });

  it('publishes a global topic created through a cell directly, and every region takes it', async () => {
    const { clock, r } = regions();
    await r[2]!.cell.create({ name: 'via-cli', partitions: 4, config: {} });
    await advance(clock, 2000);
    for (const x of r) expect(x.cell.topicsByName.get('via-cli')?.partitions, x.name).toBe(4);
  });

  it('keeps a copy that holds records when the definitions differ, and reports it; an empty copy is made again', async () => {
    const { clock, mesh, r } = regions(['a', 'b']);
    const [a, b] = r;
    // Cut off from each other, both regions create the same name.
    mesh.partition('a-gw', 'b-gw');
    const ca = a!.catalogue.create({ name: 'split', partitions: 2, config: {} });
    const cb = b!.catalogue.create({ name: 'split', partitions: 6, config: {} });
    await advance(clock, SETTLE_MS + 200);
    await Promise.all([ca, cb]);
    a!.cell.write('split', 10);
    b!.cell.write('split', 10);
    mesh.partition('a-gw', 'b-gw', false);
    mesh.syncAll();
    await advance(clock, 1500);
    const winner = a!.catalogue.get('split')!;
    expect(b!.catalogue.get('split')?.member).toBe(winner.member);
    const loser = winner.region === 'a' ? b! : a!;
    // Records were acknowledged in both: nothing is dropped, the loser reports the difference.
    expect(loser.cell.topicsByName.get('split')?.records).toBe(10);
    expect(loser.catalogue.conflicts().map((c) => c.topic)).toEqual(['split']);
    // Had the loser's copy been empty, it would take the winning definition.
    loser.cell.topicsByName.get('split')!.records = 0;
    await advance(clock, 1500);
    expect(loser.cell.topicsByName.get('split')?.partitions).toBe(winner.partitions);
    expect(loser.catalogue.conflicts()).toEqual([]);
  });

  it('does not delete a copy created after the delete, and reports a local topic with a global name', async () => {
    const { clock, mesh, r } = regions(['a', 'b']);
    const [a, b] = r;
    const made = a!.catalogue.create({ name: 't', partitions: 1, config: {} });
    await advance(clock, SETTLE_MS + 500);
    await made;
    await a!.catalogue.delete('t');
    await advance(clock, 500);
    expect(b!.cell.topicsByName.has('t')).toBe(false);
    // Created again through b's cell after the delete: it is published, not deleted.
    await b!.cell.create({ name: 't', partitions: 3, config: {} });
    await advance(clock, 2000);
    expect(a!.cell.topicsByName.get('t')?.partitions).toBe(3);
    // A local topic in b named like a global topic of a.
    mesh.partition('a-gw', 'b-gw');
    await b!.cell.create({ name: 'clash', partitions: 1, config: {} }, 'local');
    const g = a!.catalogue.create({ name: 'clash', partitions: 1, config: {} });
    await advance(clock, SETTLE_MS + 200);
    await g;
    mesh.partition('a-gw', 'b-gw', false);
    mesh.syncAll();
    await advance(clock, 1500);
    expect(b!.cell.topicsByName.get('clash')?.scope).toBe('local');
    expect(b!.catalogue.conflicts().map((c) => c.topic)).toContain('clash');
  });
});
