// Proves the consumer starts a translated position exactly (docs/geo.md) against a real broker:
// from a commit whose metadata holds a vector it skips the covered records below filterUntil and
// keeps the rest; its commits below filterUntil carry the position, so a restarted consumer keeps
// filtering, and past it they are plain; `resumeFrom` finds the position of a partition never
// committed in the group in `__geo.<region>.<group>`.
import { describe, expect, it } from 'vitest';
import { buildBatch } from '../log/index.ts';
import { Acks, errorOf } from '../protocol/index.ts';
import { RawClient } from '../testing/index.ts';
import { Cluster } from './cluster.ts';
import { geoMetadata, parseGeoMetadata } from './geo-filter.ts';
import type { Consumer, ConsumerRecord } from './index.ts';
import { useBrokerAndClient } from './test-support.ts';

const rig = useBrokerAndClient();
/** Polls this many times at most while collecting. */
const POLLS_MAX = 60;

async function collect(c: Consumer, n: number, maxRecords = 100): Promise<ConsumerRecord[]> {
  const got: ConsumerRecord[] = [];
  for (let i = 0; i < POLLS_MAX && got.length < n; i++) got.push(...(await c.poll({ timeoutMs: 200, maxRecords })));
  return got;
}

/**
 * Topic `topic`: own h0, h1 (0, 1), us-east 10..12 (2..4), own h5 (5), us-east 13 (6). Returns
 * the broker's region (the origin of own records).
 */
async function setUp(topic: string): Promise<string> {
  await rig.client.admin().createTopics([{ name: topic, partitions: 1, config: { scope: 'global' } }]);
  const raw = await RawClient.connect(rig.tb.broker.port);
  try {
    const put = async (values: string[], origin?: { region: string; offset: number }) => {
      const r = await raw.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: topic, partitions: [{ partition: 0, records: await buildBatch(values.map((value) => ({ value })), origin ? { origin } : {}) }] }] });
      expect(errorOf(r.topics[0]!.partitions[0]!.error)).toBeNull();
    };
    await put(['h0', 'h1']);
    await put(['e10', 'e11', 'e12'], { region: 'us-east', offset: 10 });
    await put(['h5']);
    await put(['e13'], { region: 'us-east', offset: 13 });
  } finally {
    raw.close();
  }
  const cluster = new Cluster({ brokers: [rig.tb.address] });
  try {
    await cluster.ensureFresh([topic]);
    return cluster.brokers()[0]!.region;
  } finally {
    await cluster.close();
  }
}

const values = (rs: ConsumerRecord[]) => rs.map((r) => r.value!.toString());

describe('a consumer starting from a translated position', () => {
  it('skips covered records below filterUntil, carries the position on its commits, and a restart keeps filtering', async () => {
    const own = await setUp('geo-f');
    // Consumed elsewhere: own 0 and us-east up to 11. Start 1 (h1); covered after it: e10, e11 (2, 3): filterUntil 4.
    const position = { from: 'us-east', vector: { [own]: 0, 'us-east': 11 }, filterUntil: 4 };
    await rig.client.admin().commitGroupOffsets('gf', [{ topic: 'geo-f', partition: 0, offset: 1, metadata: geoMetadata(position) }]);
    const first = rig.client.consumer({ groupId: 'gf', autoCommit: false, maxWaitMs: 100 });
    first.subscribe('geo-f');
    const one = await collect(first, 1, 1);
    expect(values(one)).toEqual(['h1']);
    await first.commit();
    const [committed] = await rig.client.admin().fetchGroupOffsets('gf', { topics: ['geo-f'] });
    expect(committed!.offset).toBe(2);
    expect(parseGeoMetadata(committed!.metadata)).toEqual(position);
    await first.close();

    const second = rig.client.consumer({ groupId: 'gf', autoCommit: false, maxWaitMs: 100 });
    second.subscribe('geo-f');
    const rest = await collect(second, 3);
    expect(values(rest)).toEqual(['e12', 'h5', 'e13']);
    await second.commit();
    const [after] = await rig.client.admin().fetchGroupOffsets('gf', { topics: ['geo-f'] });
    expect(after).toMatchObject({ offset: 7, metadata: '' });
    await second.close();
  });

  it('resumeFrom starts a partition never committed here at __geo.<region>.<group>, filtered', async () => {
    const own = await setUp('geo-r');
    const position = { from: 'us-east', vector: { [own]: 1, 'us-east': 10 }, filterUntil: 3 };
    await rig.client.admin().commitGroupOffsets('__geo.us-east.gr', [{ topic: 'geo-r', partition: 0, offset: 2, metadata: geoMetadata(position) }]);
    const plain = rig.client.consumer({ groupId: 'gr-plain', autoCommit: false, maxWaitMs: 100, fromBeginning: true });
    plain.subscribe('geo-r');
    // Without resumeFrom: the reset policy, every record.
    expect(values(await collect(plain, 7))).toEqual(['h0', 'h1', 'e10', 'e11', 'e12', 'h5', 'e13']);
    await plain.close();
    const c = rig.client.consumer({ groupId: 'gr', autoCommit: false, maxWaitMs: 100, fromBeginning: true, resumeFrom: 'us-east' });
    c.subscribe('geo-r');
    expect(values(await collect(c, 4))).toEqual(['e11', 'e12', 'h5', 'e13']);
    await c.close();
  });

  it('a fetch whose every record is skipped moves the position and what a commit writes past them', async () => {
    const own = await setUp('geo-s');
    // Everything from 5 on is covered except h5 (own 5): start 5 would be plain; start at 4 (e12) with e12 and e13 covered.
    const position = { from: 'us-east', vector: { [own]: 1, 'us-east': 13 }, filterUntil: 7 };
    await rig.client.admin().commitGroupOffsets('gs', [{ topic: 'geo-s', partition: 0, offset: 4, metadata: geoMetadata(position) }]);
    const c = rig.client.consumer({ groupId: 'gs', autoCommit: false, maxWaitMs: 100 });
    c.subscribe('geo-s');
    // e12 (4) skipped, h5 (5) kept, e13 (6) skipped: the tail of the fetch is skipped.
    expect(values(await collect(c, 1))).toEqual(['h5']);
    // Nothing else comes; the position moved past e13, and a commit says so (plain: at the horizon).
    const more: ConsumerRecord[] = [];
    for (let i = 0; i < 5; i++) more.push(...(await c.poll({ timeoutMs: 200 })));
    expect(more).toEqual([]);
    await c.commit();
    const [committed] = await rig.client.admin().fetchGroupOffsets('gs', { topics: ['geo-s'] });
    expect(committed).toMatchObject({ offset: 7, metadata: '' });
    await c.close();
  });
});
