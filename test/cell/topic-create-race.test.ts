// Proves that concurrent creates of the same topics in a cell of 5 in-process brokers (replication
// factor 3, every arbiter write delayed by a random few ms to widen the race), and the offsets topic
// created by whichever broker sees the cell fill first, leave every partition with exactly one
// leader, always one of its replicas, in one epoch every broker agrees on, and no partition state
// the winning topic record does not account for.
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryArbiter } from '../../region/arbiter/index.ts';
import { ArbiterCellController, CellKeys } from '../../region/cell/index.ts';
import { TestArbiterView } from '../../region/cell/test-support.ts';
import { Broker, CONSUMER_OFFSETS_TOPIC, type PartitionState, type TopicRecord } from '../../src/broker/index.ts';
import { isEdgeqError } from '../../src/core/index.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const CELL = 'race';
const BROKERS = 5;
const RF = 3;
const ROUNDS = 4;
const TOPICS_PER_ROUND = 3;
/** Upper bound of the random delay before each arbiter write. */
const WRITE_DELAY_MS_MAX = 3;
/** Time for every broker to apply the final states (elections included) on a loaded machine. */
const SETTLE_MS_MAX = 15_000;

/** What is wrong with the cell now, as readable lines (empty when every rule holds). */
async function violations(arbiter: MemoryArbiter, brokers: Broker[]): Promise<string[]> {
  const keys = new CellKeys(CELL);
  const out: string[] = [];
  const topics = (await arbiter.getPrefix(`${keys.root}topics/`)).map((kv) => JSON.parse(kv.value.toString()) as TopicRecord);
  for (const rec of topics) {
    const assignments = rec.assignments ?? [];
    // Raw partition states in the arbiter must belong to the winning record.
    for (const kv of await arbiter.getPrefix(keys.partitionsOf(rec.name))) {
      const p = Number(kv.key.slice(keys.partitionsOf(rec.name).length));
      const st = JSON.parse(kv.value.toString()) as PartitionState;
      if (!(p < rec.partitions)) out.push(`${rec.name}: a state for partition ${p}, but the topic has ${rec.partitions}`);
      else if (JSON.stringify(st.replicas) !== JSON.stringify(assignments[p])) out.push(`${rec.name}-${p}: stored replicas ${JSON.stringify(st.replicas)}, assigned ${JSON.stringify(assignments[p])}`);
    }
    for (let p = 0; p < rec.partitions; p++) {
      const replicas = assignments[p] ?? [];
      const seen = brokers.map((b) => b.cell!.partitionState(rec.name, p));
      const st = seen[0];
      if (!st) {
        out.push(`${rec.name}-${p}: no state`);
        continue;
      }
      if (!seen.every((s) => s && s.leader === st.leader && s.leaderEpoch === st.leaderEpoch)) out.push(`${rec.name}-${p}: brokers disagree: ${JSON.stringify(seen.map((s) => s && [s.leader, s.leaderEpoch]))}`);
      if (!replicas.includes(st.leader)) out.push(`${rec.name}-${p}: leader ${st.leader} is not one of its replicas ${JSON.stringify(replicas)}`);
      if (JSON.stringify(st.replicas) !== JSON.stringify(replicas)) out.push(`${rec.name}-${p}: state replicas ${JSON.stringify(st.replicas)}, assigned ${JSON.stringify(replicas)}`);
      const leading = brokers.filter((b) => b.topics.get(rec.name)?.partitions[p]?.role === 'leader');
      if (leading.length !== 1 || leading[0]!.brokerId !== st.leader) out.push(`${rec.name}-${p}: led locally by ${JSON.stringify(leading.map((b) => b.brokerId))}, state says ${st.leader}`);
      for (const b of leading) {
        const epoch = b.topics.get(rec.name)!.partitions[p]!.leaderEpoch;
        if (epoch !== st.leaderEpoch) out.push(`${rec.name}-${p}: broker ${b.brokerId} leads in epoch ${epoch}, state says ${st.leaderEpoch}`);
      }
      for (const b of brokers) {
        const hosts = b.topics.get(rec.name)?.partitions[p] !== undefined;
        if (hosts !== replicas.includes(b.brokerId)) out.push(`${rec.name}-${p}: broker ${b.brokerId} ${hosts ? 'holds' : 'lacks'} a replica (assigned ${JSON.stringify(replicas)})`);
      }
    }
  }
  if (!topics.some((t) => t.name === CONSUMER_OFFSETS_TOPIC)) out.push('no offsets topic');
  return out;
}

async function settled(arbiter: MemoryArbiter, brokers: Broker[]): Promise<string[]> {
  const deadline = Date.now() + SETTLE_MS_MAX;
  for (;;) {
    const v = await violations(arbiter, brokers);
    if (v.length === 0 || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('topic creation race (finding 4)', () => {
  it(`leaves one leader per partition, one of its replicas, after ${ROUNDS} rounds of ${BROKERS} concurrent creates of the same topics`, async () => {
    const rand = seededRandom(testSeed('topic-create-race'));
    const arbiter = new MemoryArbiter();
    const delay = (): Promise<void> => new Promise((r) => setTimeout(r, randInt(rand, 0, WRITE_DELAY_MS_MAX)));
    // Started together, so every broker sees the cell fill and tries to create the offsets topic.
    const brokers = await Promise.all(
      Array.from({ length: BROKERS }, async (_, i) =>
        Broker.start({
          dataDir: await tempDir(`edgeq-race-${i + 1}-`),
          port: 0,
          brokerId: i + 1,
          cell: new ArbiterCellController({ arbiter: new TestArbiterView(arbiter, delay), cellId: CELL, leaseTtlMs: 2000, cellSize: BROKERS, electionDelayMs: 50 }),
          replicaLagTimeMaxMs: 10_000,
          replicaFetch: { replicaFetchWaitMs: 200 },
        }),
      ),
    );
    try {
      expect(await settled(arbiter, brokers)).toEqual([]);
      for (let round = 0; round < ROUNDS; round++) {
        await Promise.all(
          Array.from({ length: TOPICS_PER_ROUND }, async (_, t) => {
            const name = `race-${round}-${t}`;
            // Every broker creates it at once, each with its own partition count.
            const outcomes = await Promise.allSettled(brokers.map((b) => b.cell!.createTopic({ name, partitions: 1 + ((b.brokerId + t) % 3), replicationFactor: RF })));
            const won = outcomes.filter((o) => o.status === 'fulfilled');
            const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
            expect(won).toHaveLength(1);
            for (const o of lost) expect(isEdgeqError(o.reason, 'TOPIC_ALREADY_EXISTS') ? 'TOPIC_ALREADY_EXISTS' : o.reason).toBe('TOPIC_ALREADY_EXISTS');
          }),
        );
        expect(await settled(arbiter, brokers)).toEqual([]);
      }
    } finally {
      await Promise.all(brokers.map((b) => b.close().catch(() => undefined)));
      await arbiter.close();
    }
  }, 120_000);
});
