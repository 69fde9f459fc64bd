// Proves over real TCP that a leader counts a follower fetch only after checking it (finding 7):
// a fetch naming a huge offset, a stale epoch or a broker that holds no replica answers a typed
// error and moves nothing: no high watermark, no acks=all answer, no ISR change.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, errorOf } from '../../src/protocol/index.ts';
import { RawClient, sleep } from '../../src/testing/index.ts';
import { eventually, TestCell } from '../helpers/cell.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

let cell: TestCell | null = null;
afterAll(async () => {
  await cell?.close();
  await cleanupTempDirs();
});

describe('forged follower fetches', () => {
  it('answer a typed error and move nothing', async () => {
    cell = await new TestCell({ size: 4, broker: { replicaLagTimeMaxMs: 60_000 } }).start();
    const client = createClient({ brokers: cell.addresses() });
    try {
      // Replicas on 3 of the 4 brokers; the fourth holds none.
      await client.admin().createTopics([{ name: 'f', partitions: 1, replicationFactor: 3 }]);
      await eventually(() => cell!.leaderOf('f', 0) > 0 && cell!.brokers.get(cell!.leaderOf('f', 0))!.topics.get('f')?.partitions[0]?.role === 'leader', 10_000, 'a leader that applied the topic');
      const leaderId = cell.leaderOf('f', 0);
      const leader = cell.brokers.get(leaderId)!;
      const p = leader.topics.partition('f', 0);
      const followers = p.replicas.filter((id) => id !== leaderId);
      const outsider = [1, 2, 3, 4].find((id) => !p.replicas.includes(id))!;
      // The followers stop fetching (stopped cleanly, they stay in the ISR: the lag bound is long),
      // so an acks=all produce waits on them.
      for (const id of followers) await cell.stopBroker(id);
      // Two connections: a broker answers one connection's requests in order, so the fetches must
      // not queue behind the waiting produce.
      const raw = await RawClient.connect(leader.port);
      const producing = await RawClient.connect(leader.port);
      try {
        const produced = producing.call('Produce', { acks: Acks.ALL, timeoutMs: 20_000, topics: [{ name: 'f', partitions: [{ partition: 0, records: await buildBatch([{ value: 'waits' }]) }] }] });
        let answered = false;
        void produced.then(() => (answered = true));
        await eventually(() => p.logEndOffset === 1, 5_000, 'the append');
        const isrBefore = [...p.isr];
        const forge = async (replicaId: number, fetchOffset: number, epoch: number) => {
          const res = await raw.call('Fetch', {
            replicaId,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 1024,
            topics: [{ name: 'f', partitions: [{ partition: 0, fetchOffset, maxBytes: 1024, currentLeaderEpoch: epoch }] }],
          });
          return errorOf(res.topics[0]!.partitions[0]!.error)?.code ?? null;
        };
        expect(await forge(followers[0]!, 1_000_000_000, p.leaderEpoch)).toBe('OFFSET_OUT_OF_RANGE');
        expect(await forge(followers[0]!, 1, p.leaderEpoch - 1)).toBe('FENCED_LEADER_EPOCH');
        expect(await forge(outsider, 1, p.leaderEpoch)).toBe('INVALID_REQUEST');
        expect(await forge(leaderId, 1, p.leaderEpoch)).toBe('INVALID_REQUEST');
        await sleep(200); // any ISR change or HW move would have been made by now
        expect(p.highWatermark).toBe(0);
        expect(p.isr).toEqual(isrBefore);
        expect(answered).toBe(false);
        // Genuine claims from the followers do count: the write is acknowledged.
        for (const id of followers) expect(await forge(id, 1, p.leaderEpoch)).toBeNull();
        const res = await produced;
        expect(errorOf(res.topics[0]!.partitions[0]!.error)).toBeNull();
      } finally {
        raw.close();
        producing.close();
      }
    } finally {
      await client.close();
    }
  }, 60_000);
});
