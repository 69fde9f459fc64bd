// Proves the admin client creates, lists, describes and deletes topics, reports groups and offsets, and surfaces per-topic errors, against a real broker.
import { describe, expect, it } from 'vitest';
import { useBrokerAndClient } from './test-support.ts';

const rig = useBrokerAndClient();

describe('Admin', () => {
  it('creates, lists, describes and deletes topics', async () => {
    const admin = rig.client.admin();
    await admin.createTopics([
      { name: 'adm-a', partitions: 3, config: { 'retention.ms': '60000' } },
      { name: 'adm-b', partitions: 1 },
    ]);
    expect(await admin.listTopics()).toEqual(expect.arrayContaining(['adm-a', 'adm-b']));
    const [a] = await admin.describeTopics(['adm-a']);
    expect(a!.partitions.map((p) => p.partition)).toEqual([0, 1, 2]);
    expect(a!.partitions.every((p) => p.leaderId === rig.tb.broker.brokerId)).toBe(true);
    expect(a!.replicationFactor).toBe(1);
    expect(a!.config['retention.ms']).toBe('60000');

    await expect(admin.createTopics([{ name: 'adm-a', partitions: 1 }])).rejects.toMatchObject({ code: 'TOPIC_ALREADY_EXISTS' });
    await admin.createTopics([{ name: 'adm-a', partitions: 1 }], { ifNotExists: true });

    await admin.deleteTopics(['adm-b']);
    expect(await admin.listTopics()).not.toContain('adm-b');
    await expect(admin.describeTopics(['adm-b'])).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    await expect(admin.deleteTopics(['adm-b'])).rejects.toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });
    await admin.deleteTopics(['adm-b'], { ifExists: true });
  });

  it('lists offsets and group state', async () => {
    const admin = rig.client.admin();
    await admin.createTopics([{ name: 'adm-off', partitions: 2 }]);
    const producer = rig.client.producer();
    await producer.send('adm-off', [{ value: '1' }, { value: '2' }, { value: '3' }], { partition: 1 });
    expect(await admin.listOffsets('adm-off', { spec: 'latest' })).toEqual([
      { topic: 'adm-off', partition: 0, offset: 0 },
      { topic: 'adm-off', partition: 1, offset: 3 },
    ]);
    expect((await admin.listOffsets('adm-off', { spec: 'earliest' })).map((o) => o.offset)).toEqual([0, 0]);

    const consumer = rig.client.consumer({ groupId: 'adm-g', fromBeginning: true, heartbeatIntervalMs: 100, maxWaitMs: 50 });
    consumer.subscribe('adm-off');
    const got = [];
    for (let i = 0; i < 50 && got.length < 3; i++) got.push(...(await consumer.poll({ timeoutMs: 100 })));
    await consumer.commit();
    expect((await admin.listGroups()).map((g) => g.groupId)).toContain('adm-g');
    const [g] = await admin.describeGroups(['adm-g']);
    expect(g!.state).toBe('Stable');
    expect(g!.members).toHaveLength(1);
    expect(g!.members[0]!.topics).toEqual(['adm-off']);
    expect(g!.members[0]!.assignment.map((tp) => tp.partition).sort()).toEqual([0, 1]);
    const offsets = await admin.fetchGroupOffsets('adm-g', { topics: ['adm-off'] });
    expect(offsets.map((o) => [o.partition, o.offset])).toEqual([
      [0, 0],
      [1, 3],
    ]);
    await consumer.close();
  });
});
