// Proves that a topic deleted and created again under the same name is a new topic to clients
// (its id, KIP-516): the same idempotent producer writes to it from offset 0 without a sequence
// error, a group's offsets committed for the old topic are not used, and a consumer that was
// reading the old topic starts the new one afresh instead of skipping its first records.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, type ConsumerRecord } from '../../src/client/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { TestCell } from '../helpers/cell.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

let cell: TestCell | null = null;
afterAll(async () => {
  await cell?.close();
  await cleanupTempDirs();
});

const values = (rs: ConsumerRecord[]) => rs.map((r) => r.value!.toString());

describe('a topic deleted and created again', () => {
  it('starts afresh for producers, committed offsets and consumers', async () => {
    cell = await new TestCell().start();
    await eventually(() => cell!.leaderOf('__consumer_offsets', 0) > 0, 15_000, 'the offsets topic');
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 60_000 });
    const admin = client.admin();
    try {
      await admin.createTopics([{ name: 'again', partitions: 1 }]);
      const producer = client.producer({ acks: 'all', lingerMs: 0 });
      for (let i = 0; i < 5; i++) await producer.send('again', { value: `old${i}` });

      // A group reads the old topic and commits after offset 5.
      const reader = client.consumer({ groupId: 'g', fromBeginning: true, autoCommit: false, sessionTimeoutMs: 3000, heartbeatIntervalMs: 300 });
      reader.subscribe('again');
      const old: ConsumerRecord[] = [];
      await eventually(async () => {
        old.push(...(await reader.poll({ timeoutMs: 200 })));
        return old.length >= 5;
      }, 20_000, 'the old records');
      await reader.commit();
      // A second consumer (no group) stays assigned across the re-creation, at position 5.
      const follower = client.consumer({ fromBeginning: true, maxWaitMs: 100 });
      follower.assign([{ topic: 'again', partition: 0 }]);
      await eventually(async () => (await follower.poll({ timeoutMs: 200 })).length === 0 && follower.positions().find((p) => p.topic === 'again' && p.partition === 0)?.offset === 5, 20_000, 'the follower at the old end');
      await reader.close();

      await admin.deleteTopics(['again']);
      await admin.createTopics([{ name: 'again', partitions: 1 }]);
      // The same producer, whose metadata still names the old topic: its first record is offset 0.
      const [first] = await producer.send('again', { value: 'new0' });
      expect(first!.offset).toBe(0);
      for (let i = 1; i < 7; i++) await producer.send('again', { value: `new${i}` });
      await producer.close();

      // The group's commit was for the old topic: a new member starts by the reset policy.
      const next = client.consumer({ groupId: 'g', fromBeginning: true, autoCommit: false, sessionTimeoutMs: 3000, heartbeatIntervalMs: 300 });
      next.subscribe('again');
      const fresh: ConsumerRecord[] = [];
      await eventually(async () => {
        fresh.push(...(await next.poll({ timeoutMs: 200 })));
        return fresh.length >= 7;
      }, 20_000, 'the new records through the group');
      expect(values(fresh)).toEqual(['new0', 'new1', 'new2', 'new3', 'new4', 'new5', 'new6']);
      await next.close();

      // The consumer that stayed assigned starts the new topic from its beginning, not at 5.
      const seen: ConsumerRecord[] = [];
      await eventually(async () => {
        seen.push(...(await follower.poll({ timeoutMs: 200 })));
        return seen.length >= 7;
      }, 20_000, 'the new records through the assigned consumer');
      expect(values(seen)).toEqual(['new0', 'new1', 'new2', 'new3', 'new4', 'new5', 'new6']);
      await follower.close();
    } finally {
      await client.close();
    }
  }, 90_000);
});
