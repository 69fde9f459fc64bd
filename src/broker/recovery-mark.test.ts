// Proves the recovery mark of a cell replica: set when its log may lack writes it once accepted
// (a crash on a new boot), kept across later restarts, clean ones included, until the replica has
// caught up with a leader or was elected; never set on a lone broker's partition.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { buildBatch, FilePool, MemoryStorage } from '../log/index.ts';
import { RECOVERY_MARK_FILE } from './recovery-mark.ts';
import { TopicManager } from './topic-manager.ts';
import type { TopicRecord } from './topic-store.ts';

const DATA = '/data';
const REC: TopicRecord = { name: 'r', id: 'cafe0001', partitions: 1, replicationFactor: 3, config: {}, leaderEpoch: 1, createdAtMs: 0, internal: false, assignments: [[1, 2, 3]] };

function open(storage: MemoryStorage, recovered: string[] = []): Promise<TopicManager> {
  return TopicManager.open({
    storage,
    dataDir: DATA,
    filePool: new FilePool(storage, 16),
    producerIds: { init: async () => ({ producerId: 0, producerEpoch: 0 }), currentEpoch: () => undefined },
    logDefaults: { flushPolicy: 'interval', flushIntervalMs: 1_000_000 },
    brokerCount: 3,
    retentionCheckIntervalMs: 1_000_000,
    brokerId: 1,
    bumpEpochsOnOpen: false,
    clock: new FakeClock(),
  }).then((m) => {
    m.onReplicaRecovered = (p, why) => recovered.push(`${p.topic}-${p.index}: ${why}`);
    return m;
  });
}

async function followerWithRecords(storage: MemoryStorage): Promise<TopicManager> {
  const m = await open(storage);
  await m.applyTopic(REC);
  const p = m.partition('r', 0);
  p.becomeFollower(2, 1, [1, 2, 3], [1, 2, 3]);
  await p.appendAsFollower(await buildBatch([{ value: 'a' }, { value: 'b' }], { leaderEpoch: 1 }), 0);
  return m;
}

/** A follower with records, then a power cut: the reopened replica, recovering, following broker 2 in epoch 2. */
async function afterPowerLoss(recovered: string[]) {
  const storage = new MemoryStorage();
  await followerWithRecords(storage);
  storage.crash();
  const m = await open(storage, recovered);
  const p = m.partition('r', 0);
  p.becomeFollower(2, 2, [1, 2, 3], [1, 2, 3]);
  return { storage, m, p };
}

describe('recovery mark', () => {
  it('marks a replica whose log lost unsynced writes to a power cut, and keeps the mark across a clean restart', async () => {
    const storage = new MemoryStorage();
    const first = await followerWithRecords(storage);
    expect(first.partition('r', 0).recovering).toBeNull();
    storage.crash(); // the power goes: the two records were never synced
    const second = await open(storage);
    const p = second.partition('r', 0);
    expect(p.logEndOffset).toBe(0);
    expect(p.recovering?.reason).toMatch(/unclean shutdown on a new boot/);
    await second.close();
    const third = await open(storage);
    expect(third.partition('r', 0).recovering, 'a clean close does not clear the mark').not.toBeNull();
    await third.close();
  });

  it('clears the mark once the follower holds what the leader held at a previous answer, durably', async () => {
    const recovered: string[] = [];
    const { storage, m, p } = await afterPowerLoss(recovered);
    const gen = p.generation;
    // The leader is at 3; the follower at 0 is behind this answer (and there was none before).
    p.noteLeaderEnd(3, gen);
    expect(p.recovering).not.toBeNull();
    await p.appendAsFollower(await buildBatch([{ value: 'a' }, { value: 'b' }, { value: 'c' }], { leaderEpoch: 1 }), 0, gen);
    // At 3: short of the leader's 7 now, but holding the 3 it had at the previous answer.
    p.noteLeaderEnd(7, gen);
    expect(p.recovering).toBeNull();
    expect(recovered).toEqual(['r-0: caught up with its leader']);
    await m.close();
    expect(await storage.exists(`${DATA}/topics/r.cafe0001/0/${RECOVERY_MARK_FILE}`)).toBe(false);
    expect((await open(storage)).partition('r', 0).recovering).toBeNull();
  });

  it('an answer from an older generation does not clear it; being elected does', async () => {
    const recovered: string[] = [];
    const { p } = await afterPowerLoss(recovered);
    const old = p.generation;
    p.becomeFollower(3, 3, [1, 2, 3], [1, 2, 3]);
    p.noteLeaderEnd(0, old);
    expect(p.recovering).not.toBeNull();
    p.becomeLeader(4, [1], [1, 2, 3]);
    expect(p.recovering).toBeNull();
    expect(recovered).toEqual(['r-0: became leader']);
  });

  it('a SIGKILL on the same boot (nothing lost) sets no mark', async () => {
    const storage = new MemoryStorage();
    const first = await followerWithRecords(storage);
    void first; // abandoned without a close, as a killed process; the page cache (memory) keeps it all
    const again = await open(storage);
    expect(again.partition('r', 0).logEndOffset).toBe(2);
    expect(again.partition('r', 0).recovering).toBeNull();
  });
});
