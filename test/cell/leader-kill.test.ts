// Proves, with real processes (an arbiter and three brokers), that SIGKILLing the leader of a busy
// partition under continuous acks=all produce from the idempotent producer loses nothing: every
// acknowledged record is readable from the new leader exactly once and in order, and after the
// cell stops every ISR member holds every batch below the high watermark, the leader's byte for
// byte (same offset, CRC and epoch), and no two replicas differ at the same position.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { checkReplicasAgree, partitionMarks, type PartitionMarks } from '../helpers/partition-probe.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const ROUNDS = 3;

async function leaderOf(client: ReturnType<typeof createClient>, topic: string): Promise<number> {
  const [d] = await client.admin().describeTopics([topic]);
  return d!.partitions[0]!.leaderId;
}

describe('leader kill', () => {
  it(`keeps every acknowledged record, exactly once, over ${ROUNDS} leader SIGKILLs`, async () => {
    const rand = seededRandom(testSeed('leader-kill'));
    const cell = await new ProcessCell({ leaseTtlMs: 2000 }).start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 1000, retry: { retriesMax: 50 } as never });
    let marks: PartitionMarks | undefined;
    try {
      await client.admin().createTopics([{ name: 'k', partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
      const producer = client.producer({ acks: 'all', lingerMs: 2, retriesMax: 100, deliveryTimeoutMs: 60_000 });
      const acked = new Map<number, string>();
      let seq = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const leader = await leaderOf(client, 'k');
        const killAfter = randInt(rand, 50, 300);
        let answered = 0;
        let killed = false;
        const inflight = new Set<Promise<void>>();
        const deadline = Date.now() + 60_000;
        // Keep producing until the kill happened and 100 more records were acknowledged.
        while ((!killed || answered < killAfter + 100) && Date.now() < deadline) {
          const value = `v${seq++}`;
          const p = producer.send('k', { value }).then(([m]) => {
            acked.set(m!.offset, value);
            answered++;
          });
          inflight.add(p);
          void p.finally(() => inflight.delete(p));
          if (inflight.size >= 20) await Promise.race(inflight);
          if (!killed && answered >= killAfter) {
            killed = true;
            await cell.kill(leader);
          }
        }
        await Promise.all(inflight);
        expect(killed).toBe(true);
        expect(answered).toBeGreaterThanOrEqual(killAfter + 100);
        const next = await leaderOf(client, 'k');
        expect(next).not.toBe(leader);
        await cell.startBroker(leader);
      }
      await producer.close();

      // Read everything back from the current leader.
      const consumer = client.consumer({ fromBeginning: true, maxWaitMs: 100 });
      consumer.assign([{ topic: 'k', partition: 0 }]);
      const seen: { offset: number; value: string }[] = [];
      const until = Date.now() + 30_000;
      while (seen.length < acked.size && Date.now() < until) {
        for (const r of await consumer.poll({ timeoutMs: 500 })) seen.push({ offset: r.offset, value: r.value!.toString() });
      }
      await consumer.close();
      const byOffset = new Map(seen.map((s) => [s.offset, s.value]));
      for (const [off, v] of acked) expect(byOffset.get(off), `offset ${off}`).toBe(v);
      const values = seen.map((s) => s.value);
      expect(new Set(values).size).toBe(values.length); // exactly once
      const numbers = values.map((v) => Number(v.slice(1)));
      const outOfOrder = numbers.findIndex((n, i) => i > 0 && n < numbers[i - 1]!);
      expect(outOfOrder, `order breaks at ${outOfOrder}: ${numbers.slice(Math.max(0, outOfOrder - 5), outOfOrder + 5).join(',')}`).toBe(-1); // in send order
      marks = await partitionMarks(cell, 'k');
      expect(marks.highWatermark).toBeGreaterThanOrEqual(Math.max(...acked.keys()) + 1);
    } finally {
      await client.close();
      await cell.close();
    }
    // The cell is stopped: every ISR member holds everything below the HW, as the leader does.
    await checkReplicasAgree(cell, 'k', [1, 2, 3], marks!);
  }, 240_000);
});
