// Proves with real processes that a follower killed and restarted rejoins: while it is away the
// ISR shrinks, acks=all below min.insync.replicas is refused with a typed error and writes
// nothing; once it is back it catches up (also from below the leader's log start, after retention
// dropped what it missed) and rejoins the ISR, and writes are acknowledged again.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { replicaBatches } from '../helpers/replica-check.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { eventually } from '../helpers/cell.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const ROUNDS = 2;

describe('follower restart', () => {
  it(`refuses below min.insync while a follower is away and catches it up when it returns (${ROUNDS} rounds)`, async () => {
    const rand = seededRandom(testSeed('follower-restart'));
    const cell = await new ProcessCell({ replicaLagTimeMaxMs: 1500, env: { EDGEQ_BROKER__RETENTION_CHECK_INTERVAL_MS: '200' } }).start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500 });
    const admin = client.admin();
    const partitionOf = async () => (await admin.cellStatus()).partitions.find((p) => p.topic === 'f')!;
    try {
      // Small segments and size retention: while a follower is away, the leader drops segments it
      // never fetched, so it must start over at the leader's log start.
      await admin.createTopics([
        { name: 'f', partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '3', 'segment.bytes': '4096', 'max.message.bytes': '2048', 'retention.bytes': '8192' } },
      ]);
      const producer = client.producer({ acks: 'all', lingerMs: 0 });
      const strict = client.producer({ acks: 'all', lingerMs: 0, retriesMax: 0, idempotent: false });
      await producer.send('f', { value: 'start' });
      for (let round = 0; round < ROUNDS; round++) {
        const p = await partitionOf();
        const followers = p.replicas.filter((id) => id !== p.leaderId);
        const victim = followers[randInt(rand, 0, followers.length - 1)]!;
        await cell.kill(victim);
        await eventually(async () => (await partitionOf()).isr.length === 2, 15_000, 'the ISR to shrink');
        const before = (await partitionOf()).logEndOffset;
        const refused = await strict.send('f', { value: 'refused' }).then(() => null, (e: { code: string }) => e.code);
        expect(refused).toBe('NOT_ENOUGH_REPLICAS');
        expect((await partitionOf()).logEndOffset).toBe(before);
        // acks=1 still works: write past what the follower has, and past the retention limit.
        const leaderOnly = client.producer({ acks: 1, lingerMs: 0 });
        for (let i = 0; i < 60; i++) await leaderOnly.send('f', { value: `r${round}-${i}`.padEnd(300, '.') });
        await leaderOnly.close();
        await eventually(async () => (await partitionOf()).logStartOffset > before, 15_000, 'retention to advance the log start');
        await cell.startBroker(victim);
        await eventually(async () => (await partitionOf()).isr.length === 3, 20_000, 'the follower to rejoin the ISR');
        const [m] = await producer.send('f', { value: `after-${round}` });
        expect(m!.offset).toBeGreaterThanOrEqual(before);
      }
      await producer.close();
      await strict.close();
    } finally {
      await client.close();
      await cell.close();
    }
    // Stopped: every replica holds the same batches over the range they all still have.
    const copies = await Promise.all([1, 2, 3].map((id) => replicaBatches(cell.dirOf(id), 'f', 0)));
    const common = (c: { batches: string[] }) => c.batches.map((b) => b.split(':')[0]!);
    const start = Math.max(...copies.map((c) => Number(common(c)[0] ?? 0)));
    const tails = copies.map((c) => c.batches.filter((b) => Number(b.split(':')[0]) >= start));
    const n = Math.min(...tails.map((t) => t.length));
    expect(n).toBeGreaterThan(0);
    for (const t of tails) expect(t.slice(0, n)).toEqual(tails[0]!.slice(0, n));
  }, 180_000);
});
