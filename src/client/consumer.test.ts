// Proves against a real broker that group members split partitions and rebalance when one leaves, that committed offsets survive a restart (at-least-once and at-most-once), and that seek, pause and resume steer what poll returns.
import { describe, expect, it } from 'vitest';
import type { Consumer, ConsumerRecord } from './index.ts';
import { useBrokerAndClient } from './test-support.ts';

const rig = useBrokerAndClient();

const fast = { sessionTimeoutMs: 3_000, heartbeatIntervalMs: 100, rebalanceTimeoutMs: 5_000, maxWaitMs: 100 };

async function produce(topic: string, partitions: number, perPartition: number): Promise<void> {
  const producer = rig.client.producer({ lingerMs: 1 });
  const sends = [];
  for (let p = 0; p < partitions; p++) {
    for (let i = 0; i < perPartition; i++) sends.push(producer.send(topic, { value: `${p}:${i}` }, { partition: p }));
  }
  await Promise.all(sends);
  await producer.close();
}

async function pollUntil(consumer: Consumer, done: (all: ConsumerRecord[]) => boolean, rounds = 200): Promise<ConsumerRecord[]> {
  const all: ConsumerRecord[] = [];
  for (let i = 0; i < rounds && !done(all); i++) all.push(...(await consumer.poll({ timeoutMs: 100 })));
  return all;
}

const partitionsOf = (c: Consumer) => c.assignment().map((tp) => tp.partition).sort();

describe('consumer groups', () => {
  it('two members split the partitions; when one closes, the other takes them all', async () => {
    await rig.client.admin().createTopics([{ name: 'split', partitions: 4 }]);
    await produce('split', 4, 5);
    const a = rig.client.consumer({ groupId: 'split-g', fromBeginning: true, ...fast });
    const b = rig.client.consumer({ groupId: 'split-g', fromBeginning: true, ...fast });
    a.subscribe('split');
    b.subscribe('split');
    const seenA: ConsumerRecord[] = [];
    const seenB: ConsumerRecord[] = [];
    for (let i = 0; i < 200 && !(a.assignment().length === 2 && b.assignment().length === 2 && seenA.length + seenB.length >= 20); i++) {
      const [ra, rb] = await Promise.all([a.poll({ timeoutMs: 100 }), b.poll({ timeoutMs: 100 })]);
      seenA.push(...ra);
      seenB.push(...rb);
    }
    expect(partitionsOf(a).length).toBe(2);
    expect(partitionsOf(b).length).toBe(2);
    expect(new Set([...partitionsOf(a), ...partitionsOf(b)])).toEqual(new Set([0, 1, 2, 3]));
    expect(seenA.length + seenB.length).toBeGreaterThanOrEqual(20);

    await a.close();
    for (let i = 0; i < 100 && b.assignment().length !== 4; i++) await b.poll({ timeoutMs: 100 });
    expect(partitionsOf(b)).toEqual([0, 1, 2, 3]);
    const described = await rig.client.admin().describeGroups(['split-g']);
    expect(described[0]!.members).toHaveLength(1);
    expect(described[0]!.state).toBe('Stable');
    await b.close();
  });

  it('at-least-once: a restarted member continues from the committed offset', async () => {
    await rig.client.admin().createTopics([{ name: 'alo', partitions: 1 }]);
    await produce('alo', 1, 10);
    const first = rig.client.consumer({ groupId: 'alo-g', fromBeginning: true, autoCommit: false, ...fast });
    first.subscribe('alo');
    const got = await pollUntil(first, (all) => all.length >= 4);
    // Process only the first four, commit them, then "crash" (close commits nothing: autoCommit is off).
    await first.commit([{ topic: 'alo', partition: 0, offset: got[3]!.offset + 1 }]);
    await first.close();
    const offsets = await rig.client.admin().fetchGroupOffsets('alo-g');
    expect(offsets).toMatchObject([{ topic: 'alo', partition: 0, offset: 4 }]);

    const second = rig.client.consumer({ groupId: 'alo-g', fromBeginning: true, ...fast });
    second.subscribe('alo');
    const rest = await pollUntil(second, (all) => all.length >= 6);
    expect(rest.map((r) => r.offset)).toEqual([4, 5, 6, 7, 8, 9]);
    await second.close(); // auto-commit on close: everything handed out before the last poll
    const after = await rig.client.admin().fetchGroupOffsets('alo-g');
    expect(after[0]!.offset).toBe(10);
  });

  it('at-most-once: positions are committed before poll returns the records', async () => {
    await rig.client.admin().createTopics([{ name: 'amo', partitions: 1 }]);
    await produce('amo', 1, 6);
    const c = rig.client.consumer({ groupId: 'amo-g', fromBeginning: true, delivery: 'at-most-once', ...fast });
    c.subscribe('amo');
    const got = await pollUntil(c, (all) => all.length >= 1);
    const committed = await rig.client.admin().fetchGroupOffsets('amo-g');
    expect(committed[0]!.offset).toBe(got[got.length - 1]!.offset + 1);
    await c.close();
  });

  it('the async iterator yields records and commits what the loop body finished', async () => {
    await rig.client.admin().createTopics([{ name: 'iter', partitions: 1 }]);
    await produce('iter', 1, 5);
    const c = rig.client.consumer({ groupId: 'iter-g', fromBeginning: true, ...fast });
    c.subscribe('iter');
    const values: string[] = [];
    for await (const r of c) {
      values.push(r.value!.toString());
      if (values.length === 3) break;
    }
    expect(values).toEqual(['0:0', '0:1', '0:2']);
    await c.close(); // closing counts everything handed out as processed
    const committed = await rig.client.admin().fetchGroupOffsets('iter-g');
    expect(committed[0]!.offset).toBe(3);
  });
});

describe('manual assignment', () => {
  it('seek moves the position; pause stops a partition; resume brings it back', async () => {
    await rig.client.admin().createTopics([{ name: 'steer', partitions: 2 }]);
    await produce('steer', 2, 5);
    const c = rig.client.consumer({ fromBeginning: true, maxWaitMs: 50 });
    c.assign([{ topic: 'steer', partition: 0 }, { topic: 'steer', partition: 1 }]);
    c.seek('steer', 0, 3);
    c.pause([{ topic: 'steer', partition: 1 }]);
    const first = await pollUntil(c, (all) => all.length >= 2, 40);
    expect(first.map((r) => `${r.partition}@${r.offset}`)).toEqual(['0@3', '0@4']);
    expect(await c.poll({ timeoutMs: 150 })).toEqual([]); // partition 1 is paused
    c.resume([{ topic: 'steer', partition: 1 }]);
    const second = await pollUntil(c, (all) => all.length >= 5, 40);
    expect(second.map((r) => `${r.partition}@${r.offset}`)).toEqual(['1@0', '1@1', '1@2', '1@3', '1@4']);
    c.seek('steer', 1, 1);
    const again = await pollUntil(c, (all) => all.length >= 1, 40);
    expect(again[0]).toMatchObject({ partition: 1, offset: 1, value: Buffer.from('1:1') });
    await c.close();
  });

  it('without fromBeginning a new reader starts at the end', async () => {
    await rig.client.admin().createTopics([{ name: 'latest', partitions: 1 }]);
    await produce('latest', 1, 3);
    const c = rig.client.consumer({ maxWaitMs: 50 });
    c.assign([{ topic: 'latest', partition: 0 }]);
    expect(await c.poll({ timeoutMs: 200 })).toEqual([]);
    expect(c.positions()[0]!.offset).toBe(3);
    await produce('latest', 1, 1);
    const got = await pollUntil(c, (all) => all.length >= 1, 40);
    expect(got.map((r) => r.offset)).toEqual([3]);
    await c.close();
  });
});
