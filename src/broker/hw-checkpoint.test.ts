// Proves that a broker's replicas reopen with the high watermark they had at the last checkpoint,
// never the log end, that a damaged checkpoint only costs visibility, and that a topic created again
// under the same name does not inherit the old one's marks.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { buildBatch, FilePool, MemoryStorage } from '../log/index.ts';
import { HW_CHECKPOINT_FILE, hwCheckpointKey, readHwCheckpoint, writeHwCheckpoint } from './hw-checkpoint.ts';
import { TopicManager } from './topic-manager.ts';
import type { TopicRecord } from './topic-store.ts';

const DATA = '/data';

function record(id: string): TopicRecord {
  return { name: 'orders', id, partitions: 1, replicationFactor: 3, config: {}, leaderEpoch: 1, createdAtMs: 0, internal: false, assignments: [[1, 2, 3]] };
}

async function open(storage: MemoryStorage, clock: FakeClock): Promise<TopicManager> {
  return TopicManager.open({
    storage,
    dataDir: DATA,
    filePool: new FilePool(storage, 16),
    producerIds: { init: async () => ({ producerId: 0, producerEpoch: 0 }), currentEpoch: () => undefined },
    logDefaults: {},
    brokerCount: 3,
    retentionCheckIntervalMs: 1_000_000,
    brokerId: 1,
    bumpEpochsOnOpen: false,
    clock,
  });
}

describe('high-watermark checkpoint', () => {
  it('round-trips, and an absent or damaged file reads as empty', async () => {
    const storage = new MemoryStorage();
    expect(await readHwCheckpoint(storage, DATA)).toEqual(new Map());
    await storage.mkdir(DATA);
    await writeHwCheckpoint(storage, DATA, new Map([['a.1/0', 5], ['b.2/3', 0]]));
    expect(await readHwCheckpoint(storage, DATA)).toEqual(new Map([['a.1/0', 5], ['b.2/3', 0]]));
    await storage.writeFileAtomic(`${DATA}/${HW_CHECKPOINT_FILE}`, Buffer.from('{"version":1,"partitions":{"a.1/0":-4,"b.2/3":"x","c.3/0":7}}'));
    expect(await readHwCheckpoint(storage, DATA)).toEqual(new Map([['c.3/0', 7]]));
    await storage.writeFileAtomic(`${DATA}/${HW_CHECKPOINT_FILE}`, Buffer.from('garbage'));
    expect(await readHwCheckpoint(storage, DATA)).toEqual(new Map());
  });

  it('a cell replica reopens at its checkpointed high watermark, below its log end', async () => {
    const storage = new MemoryStorage();
    const clock = new FakeClock();
    const first = await open(storage, clock);
    await first.applyTopic(record('aaaa'));
    const p = first.partition('orders', 0);
    p.becomeLeader(2, [1, 2, 3], [1, 2, 3]);
    await p.produce(await buildBatch([{ value: 'a' }, { value: 'b' }, { value: 'c' }]), { acks: 'leader' });
    p.recordFollowerFetch(2, 3, 2);
    p.recordFollowerFetch(3, 3, 2);
    await p.produce(await buildBatch([{ value: 'tail' }]), { acks: 'leader' });
    expect([p.highWatermark, p.logEndOffset]).toEqual([3, 4]);
    await first.close();
    expect(await readHwCheckpoint(storage, DATA)).toEqual(new Map([[hwCheckpointKey('orders', 'aaaa', 0), 3]]));

    const again = await open(storage, clock);
    const q = again.partition('orders', 0);
    expect(q.role).toBe('follower');
    expect([q.highWatermark, q.logEndOffset]).toEqual([3, 4]);
    await again.close();
  });

  it('a topic created again under the same name starts at its log start', async () => {
    const storage = new MemoryStorage();
    const clock = new FakeClock();
    await storage.mkdir(DATA);
    await writeHwCheckpoint(storage, DATA, new Map([[hwCheckpointKey('orders', 'aaaa', 0), 3]]));
    const m = await open(storage, clock);
    await m.applyTopic(record('bbbb'));
    expect(m.partition('orders', 0).highWatermark).toBe(0);
    await m.close();
  });
});
