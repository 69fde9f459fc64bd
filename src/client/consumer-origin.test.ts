// Proves the consumer hands out each record's origin: a record applied from another region
// carries that region and its batch's origin offset + the record's delta, a record written here
// null and -1.
import { describe, expect, it } from 'vitest';
import { buildBatch } from '../log/index.ts';
import { Acks, errorOf } from '../protocol/index.ts';
import { RawClient } from '../testing/index.ts';
import type { ConsumerRecord } from './index.ts';
import { useBrokerAndClient } from './test-support.ts';

const rig = useBrokerAndClient();

describe('consumer records of a global topic', () => {
  it('carry originRegion and originOffset', async () => {
    await rig.client.admin().createTopics([{ name: 'geo', partitions: 1, config: { scope: 'global' } }]);
    const producer = rig.client.producer({ lingerMs: 1 });
    await producer.send('geo', { value: 'here' }, { partition: 0 });
    await producer.close();
    const raw = await RawClient.connect(rig.tb.broker.port);
    try {
      const records = await buildBatch([{ value: 'there-0' }, { value: 'there-1' }], { origin: { region: 'us-east', offset: 70 } });
      const r = await raw.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'geo', partitions: [{ partition: 0, records }] }] });
      expect(errorOf(r.topics[0]!.partitions[0]!.error)).toBeNull();
    } finally {
      raw.close();
    }
    const consumer = rig.client.consumer({ maxWaitMs: 100, autoCommit: false });
    consumer.assign([{ topic: 'geo', partition: 0 }]);
    consumer.seek('geo', 0, 0);
    const got: ConsumerRecord[] = [];
    for (let i = 0; i < 50 && got.length < 3; i++) got.push(...(await consumer.poll({ timeoutMs: 100 })));
    await consumer.close();
    expect(got.map((r) => [r.value!.toString(), r.offset, r.originRegion, r.originOffset])).toEqual([
      ['here', 0, null, -1],
      ['there-0', 1, 'us-east', 70],
      ['there-1', 2, 'us-east', 71],
    ]);
  });
});
