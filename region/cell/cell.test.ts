// Proves the cell in one process with real brokers, TCP and logs on disk: topics replicate to
// every replica with identical batches, acks=all answers only once the ISR holds a batch, a new
// leader is elected from the ISR when the leader stops and keeps every acknowledged record, and a
// returning broker truncates, catches up and rejoins the ISR; min.insync.replicas refuses writes
// (writing nothing) and recovers.
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { decodeBatches, readBatchHeader, splitBatches } from '../../src/log/index.ts';
import type { Broker, Partition } from '../../src/broker/index.ts';
import { eventually, TestCell } from '../../test/helpers/cell.ts';
import { cleanupTempDirs } from '../../test/helpers/tmp.ts';

let cell: TestCell | null = null;
afterEach(async () => {
  await cell?.close();
  cell = null;
  await cleanupTempDirs();
});

async function batchesOf(p: Partition): Promise<string[]> {
  const out: string[] = [];
  let offset = p.logStartOffset;
  while (offset < p.logEndOffset) {
    const r = await p.log.read(offset, 1 << 20);
    for (const b of splitBatches(r.bytes)) {
      const h = readBatchHeader(b);
      out.push(`${h.baseOffset}:${h.crc}:${h.partitionLeaderEpoch}`);
    }
    offset = r.nextOffset;
  }
  return out;
}

function replica(b: Broker | undefined, topic: string, p = 0): Partition {
  const r = b?.topics.get(topic)?.partitions[p];
  if (!r) throw new Error(`no replica of ${topic}-${p} on broker ${b?.brokerId}`);
  return r;
}

describe('cell', () => {
  it('replicates to every ISR member, answers acks=all after the HW, and survives the leader stopping', async () => {
    cell = await new TestCell().start();
    const client = createClient({ brokers: cell.addresses(), retry: { retriesMax: 20 } as never });
    try {
      await client.admin().createTopics([{ name: 'r', partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
      const producer = client.producer({ acks: 'all', lingerMs: 1 });
      const acked = new Map<number, string>();
      for (let i = 0; i < 40; i++) {
        const [m] = await producer.send('r', { value: `a${i}` });
        acked.set(m!.offset, `a${i}`);
      }
      const leader = cell.leaderOf('r', 0);
      expect(leader).toBeGreaterThan(0);
      const lp = replica(cell.brokers.get(leader), 'r');
      expect(lp.highWatermark).toBe(40);
      await eventually(async () => {
        const all = await Promise.all([...cell!.brokers.values()].map((b) => batchesOf(replica(b, 'r'))));
        return all.every((x) => JSON.stringify(x) === JSON.stringify(all[0])) && all[0]!.length > 0;
      }, 10_000, 'replicas to agree');

      // The leader stops; one of the others takes over with a higher epoch.
      await cell.stopBroker(leader);
      await eventually(() => cell!.leaderOf('r', 0) > 0 && cell!.leaderOf('r', 0) !== leader, 10_000, 'a new leader');
      const next = cell.leaderOf('r', 0);
      expect(replica(cell.brokers.get(next), 'r').leaderEpoch).toBeGreaterThan(lp.leaderEpoch);
      for (let i = 40; i < 60; i++) {
        const [m] = await producer.send('r', { value: `a${i}` });
        acked.set(m!.offset, `a${i}`);
      }
      const np = replica(cell.brokers.get(next), 'r');
      const recs = await decodeBatches((await np.log.read(0, 1 << 22)).bytes);
      const seen = new Map(recs.map((r) => [r.offset, r.value!.toString()]));
      for (const [off, v] of acked) expect(seen.get(off)).toBe(v);
      expect(new Set(recs.map((r) => r.value!.toString())).size).toBe(recs.length);

      // The old leader comes back as a follower, catches up and rejoins the ISR.
      await cell.startBroker(leader);
      await eventually(() => (cell!.brokers.get(next)?.cell?.partitionState('r', 0)?.isr.length ?? 0) === 3, 15_000, 'the ISR to grow back to 3');
      const back = replica(cell.brokers.get(leader), 'r');
      expect(back.role).toBe('follower');
      await eventually(async () => JSON.stringify(await batchesOf(back)) === JSON.stringify(await batchesOf(np)), 10_000, 'the returning replica to agree');
      await producer.close();
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses acks=all below min.insync.replicas, writing nothing, and recovers when the follower returns', async () => {
    cell = await new TestCell().start();
    const client = createClient({ brokers: cell.addresses() });
    try {
      await client.admin().createTopics([{ name: 'm', partitions: 1, replicationFactor: 2, config: { 'min.insync.replicas': '2' } }]);
      const producer = client.producer({ acks: 'all', lingerMs: 0, retriesMax: 0 });
      await producer.send('m', { value: 'first' });
      const st = cell.brokers.get(1)!.cell!.partitionState('m', 0)!;
      const follower = st.replicas.find((id) => id !== st.leader)!;
      await cell.stopBroker(follower);
      // The leader drops the silent follower from the ISR after replicaLagTimeMaxMs.
      await eventually(() => (cell!.brokers.get(st.leader)!.cell!.partitionState('m', 0)?.isr.length ?? 0) === 1, 10_000, 'the ISR to shrink');
      const lp = replica(cell.brokers.get(st.leader), 'm');
      const end = lp.logEndOffset;
      const err = await producer.send('m', { value: 'refused' }).then(() => null, (e: { code: string }) => e.code);
      expect(err).toBe('NOT_ENOUGH_REPLICAS');
      expect(lp.logEndOffset).toBe(end);
      await cell.startBroker(follower);
      await eventually(() => (cell!.brokers.get(st.leader)!.cell!.partitionState('m', 0)?.isr.length ?? 0) === 2, 15_000, 'the ISR to grow back');
      const [m] = await producer.send('m', { value: 'again' });
      expect(m!.offset).toBe(end);
      await producer.close();
    } finally {
      await client.close();
    }
  }, 60_000);
});
