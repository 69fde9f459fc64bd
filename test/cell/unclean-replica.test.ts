// Proves, with real processes on the power-loss storage, that a replica which lost records it had
// acknowledged to its leader (a power cut discarded every write after its last fdatasync) is not
// elected when the leader dies, even as the preferred candidate still in the ISR: another ISR
// member is, every acknowledged record survives, and the recovering replica leads again only after
// it has caught up.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { applyPowerLoss, FAULT_STORAGE_ENV } from '../../src/log/index.ts';
import { waitFor } from '../../src/testing/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { checkReplicasAgree, partitionMarks, readAll, replicaStatus } from '../helpers/partition-probe.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const TOPIC = 'u';
const RECORDS = 50;
/**
 * The frozen leader's lease must outlast the recovering replica's kill, power loss and restart
 * (tsx compiles at start: 1-3 s on a loaded 2-core machine), so both remaining replicas are live
 * when the election comes.
 */
const LEASE_TTL_MS = 8000;

describe('a replica that lost acknowledged records', () => {
  it('is not elected until it has caught up, and no acknowledged record is lost', async () => {
    const cell = await new ProcessCell({ leaseTtlMs: LEASE_TTL_MS, replicaLagTimeMaxMs: 60_000, env: { [FAULT_STORAGE_ENV]: 'power-loss' } }).start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500 });
    let marks;
    try {
      // Nothing is synced after the append: only replication makes a record durable.
      await client.admin().createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2', 'flush.interval.ms': '3600000' } }]);
      const producer = client.producer({ acks: 'all', lingerMs: 0 });
      const acked: string[] = [];
      for (let i = 0; i < RECORDS; i++) {
        await producer.send(TOPIC, { value: `r${i}` });
        acked.push(`r${i}`);
      }
      await producer.close();
      const [d] = await client.admin().describeTopics([TOPIC]);
      const leader = d!.partitions[0]!.leaderId;
      const [lost, keeper] = [1, 2, 3].filter((id) => id !== leader).sort((a, b) => a - b) as [number, number];
      await waitFor('both followers hold every record', 20_000, async () => {
        const s = await Promise.all([lost, keeper].map((id) => replicaStatus(TOPIC, cell.portOf(id))));
        return s.every((x) => x?.logEndOffset === RECORDS) ? true : undefined;
      });

      // The leader freezes (nobody can catch up from it); the preferred candidate `lost` loses
      // power and comes back without the records it had acknowledged, still in the ISR.
      cell.pause(leader);
      await cell.kill(lost);
      const power = await applyPowerLoss(cell.dirOf(lost));
      // eslint-disable-next-line no-console
      console.log(`[unclean-replica] leader ${leader}; power loss on ${lost}: ${JSON.stringify(power).slice(0, 300)}`);
      await cell.startBroker(lost);
      const back = await waitFor('the restarted replica to report', 20_000, () => replicaStatus(TOPIC, cell.portOf(lost)));
      expect(back.logEndOffset, 'the power loss took acknowledged records').toBeLessThan(RECORDS);
      expect(back.isr, 'still in the ISR as the arbiter has it').toContain(lost);
      await cell.kill(leader);

      const elected = await waitFor('a new leader', 40_000, async () => {
        for (const id of [lost, keeper]) {
          const s = await replicaStatus(TOPIC, cell.portOf(id));
          if (s?.role === 'leader') return { id, ...s };
        }
        return undefined;
      }, 100);
      expect(elected.id, `the replica that lost records (${lost}) must not be elected`).toBe(keeper);
      // A new leader's HW starts from what it knew as a follower and moves with the ISR's fetches.
      await waitFor('the new leader\'s HW over every acknowledged record', 30_000, async () => ((await replicaStatus(TOPIC, cell.portOf(keeper)))!.highWatermark >= RECORDS ? true : undefined));
      const seen = (await readAll(cell.portOf(keeper), TOPIC)).map((r) => r.value);
      expect(seen).toEqual(acked);

      // The recovering replica catches up from the new leader and is back in the ISR.
      await cell.startBroker(leader);
      await waitFor('the full ISR with every replica at the end', 30_000, async () => {
        const s = await replicaStatus(TOPIC, cell.portOf(keeper));
        if (!s || s.isr.length !== 3) return undefined;
        const ends = await Promise.all([1, 2, 3].map((id) => replicaStatus(TOPIC, cell.portOf(id))));
        return ends.every((x) => x?.logEndOffset === RECORDS) ? true : undefined;
      });
      marks = await partitionMarks(cell, TOPIC);
    } finally {
      await client.close();
      await cell.close();
    }
    expect(await checkReplicasAgree(cell, TOPIC, [1, 2, 3], marks)).toBeGreaterThan(0);
  }, 150_000);
});
