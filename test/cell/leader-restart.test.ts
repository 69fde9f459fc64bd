// Proves, with real processes, that a leader SIGKILLed with a tail its followers never received
// (both followers SIGSTOPped) and restarted within its lease TTL does not show that tail to
// consumers, nor acknowledge the idempotent producer's retry of it, until the followers hold it;
// and that every replica ends with the tail exactly once.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { decodeBatches } from '../../src/log/index.ts';
import { errorOf } from '../../src/protocol/index.ts';
import { RawClient, sleep, waitFor } from '../../src/testing/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { checkReplicasAgree, partitionMarks, replicaStatus } from '../helpers/partition-probe.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const TOPIC = 'r';
/**
 * Long enough that the kill, the restart (tsx compiles on start: ~1-3 s on a loaded 2-core
 * machine) and the observation window all fit in the old lease and the followers' leases.
 */
const LEASE_TTL_MS = 15_000;
/** How long the test watches for the tail to show before the followers resume. */
const WATCH_MS = 2_000;

/** Values a consumer fetch at `offset` returns from the broker on `port` (empty on any refusal). */
async function consumerValues(port: number, offset: number): Promise<string[]> {
  const c = await RawClient.connect(port);
  try {
    const f = await c.call('Fetch', { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, topics: [{ name: TOPIC, partitions: [{ partition: 0, fetchOffset: offset, maxBytes: 1 << 20 }] }] });
    const p = f.topics[0]!.partitions[0]!;
    if (errorOf(p.error)) return [];
    return (await decodeBatches(Buffer.from(p.records), offset)).filter((r) => r.offset >= offset).map((r) => r.value!.toString());
  } finally {
    c.close();
  }
}

describe('leader restart within its lease', () => {
  it('hides an unreplicated tail and answers its retry only after the followers hold it', async () => {
    const cell = await new ProcessCell({ leaseTtlMs: LEASE_TTL_MS, replicaLagTimeMaxMs: 3000 }).start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500, retry: { retriesMax: 100 } as never });
    let marks;
    try {
      await client.admin().createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
      const producer = client.producer({ acks: 'all', lingerMs: 0, retriesMax: 1000, deliveryTimeoutMs: 120_000 });
      for (let i = 0; i < 5; i++) await producer.send(TOPIC, { value: `head${i}` });
      const [d] = await client.admin().describeTopics([TOPIC]);
      const leader = d!.partitions[0]!.leaderId;
      const followers = [1, 2, 3].filter((id) => id !== leader);
      await waitFor('both followers at the log end', 20_000, async () => {
        const s = await Promise.all(followers.map((id) => replicaStatus(TOPIC, cell.portOf(id))));
        return s.every((x) => x && x.logEndOffset === 5) ? true : undefined;
      });
      // The leader learns the followers hold 5 from their next fetches.
      const before = await waitFor('the leader\'s HW at 5', 20_000, async () => {
        const s = await replicaStatus(TOPIC, cell.portOf(leader));
        return s?.highWatermark === 5 ? s : undefined;
      });

      // The tail: written by the leader only.
      for (const id of followers) cell.pause(id);
      let ackedAt = 0;
      const tail = producer.send(TOPIC, { value: 'tail' }).then(([m]) => {
        ackedAt = Date.now();
        return m!.offset;
      });
      await waitFor('the tail in the leader\'s log', 10_000, async () => ((await replicaStatus(TOPIC, cell.portOf(leader)))?.logEndOffset === 6 ? true : undefined));

      // Crash and restart the leader while the followers stay frozen.
      await cell.kill(leader);
      await cell.startBroker(leader);
      const restarted = await waitFor('the restarted broker to lead', 20_000, async () => {
        const s = await replicaStatus(TOPIC, cell.portOf(leader));
        return s?.role === 'leader' ? s : undefined;
      });
      expect(restarted.logEndOffset).toBe(6);
      // eslint-disable-next-line no-console
      console.log(`[leader-restart] restarted leader ${leader}: epoch ${before.leaderEpoch} -> ${restarted.leaderEpoch}, HW ${restarted.highWatermark}, log end ${restarted.logEndOffset}`);
      const watchUntil = Date.now() + WATCH_MS;
      while (Date.now() < watchUntil) {
        const s = (await replicaStatus(TOPIC, cell.portOf(leader)))!;
        expect(s.highWatermark, 'the HW stays below the unreplicated tail').toBeLessThanOrEqual(5);
        expect(await consumerValues(cell.portOf(leader), 5), 'the tail is not readable').toEqual([]);
        expect(ackedAt, 'the retry of the tail is not acknowledged').toBe(0);
        await sleep(100);
      }

      const resumedAt = Date.now();
      for (const id of followers) cell.resume(id);
      const offset = await tail;
      expect(offset).toBe(5);
      expect(ackedAt).toBeGreaterThanOrEqual(resumedAt);
      await producer.close();
      expect(await consumerValues(cell.portOf(leader), 0)).toEqual(['head0', 'head1', 'head2', 'head3', 'head4', 'tail']);
      await waitFor('the full ISR back', 30_000, async () => ((await partitionMarks(cell, TOPIC)).isr.length === 3 ? true : undefined));
      marks = await partitionMarks(cell, TOPIC);
    } finally {
      await client.close();
      await cell.close();
    }
    expect(await checkReplicasAgree(cell, TOPIC, [1, 2, 3], marks)).toBeGreaterThan(0);
  }, 150_000);
});
