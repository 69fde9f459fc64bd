// Proves the replica rules of one partition deterministically, on a fake clock and in-memory
// storage: the high watermark after a restart, the ISR join rule, which follower fetches count,
// role changes in the middle of follower work, acks=all answers that wait for replication, and
// the origin cursor of a global topic carried through follower copies, truncation and a takeover.
import { describe, expect, it } from 'vitest';
import { FakeClock, isEdgeqError } from '../core/index.ts';
import { buildBatch, MemoryStorage, PartitionLog, readBatchHeader, splitBatches } from '../log/index.ts';
import { LeaderEpochCache } from './leader-epoch-cache.ts';
import { Partition, type PartitionHooks } from './partition.ts';
import { OriginState } from './origin-state.ts';
import { ProducerState } from './producer-state.ts';
import { parseTopicConfig } from './topic-config.ts';

const ME = 1;

interface Rig {
  p: Partition;
  log: PartitionLog;
  clock: FakeClock;
  storage: MemoryStorage;
  isrChanges: number[][];
}

/** A replica of a 3-replica partition on broker 1, as a cell opens it (a follower of nobody yet). */
async function openReplica(o: { storage?: MemoryStorage; clock?: FakeClock; highWatermark?: number; minIsr?: number; grantIsr?: boolean; global?: boolean } = {}): Promise<Rig> {
  const storage = o.storage ?? new MemoryStorage();
  const clock = o.clock ?? new FakeClock();
  const dir = '/data/t.abc/0';
  const log = await PartitionLog.open(dir, { flushPolicy: 'interval', flushIntervalMs: 1_000_000 }, { storage, clock });
  const producers = new ProducerState({ clock });
  await producers.rebuild(log, storage);
  const origins = new OriginState({ clock });
  await origins.rebuild(log);
  const epochs = new LeaderEpochCache(storage, dir);
  await epochs.rebuild(log);
  const p = new Partition({
    topic: 't',
    index: 0,
    log,
    producers,
    origins,
    epochs,
    leaderEpoch: 1,
    settings: parseTopicConfig({ 'min.insync.replicas': String(o.minIsr ?? 2), ...(o.global ? { scope: 'global' } : {}) }, {}),
    brokerId: ME,
    storage,
    clock,
    ...(o.highWatermark !== undefined ? { highWatermark: o.highWatermark } : {}),
    cellReplicas: [1, 2, 3],
  });
  const isrChanges: number[][] = [];
  const hooks: PartitionHooks = {
    canLead: () => true,
    changeIsr: async (_p, isr) => {
      isrChanges.push(isr);
      return o.grantIsr ?? true;
    },
  };
  p.setHooks(hooks);
  return { p, log, clock, storage, isrChanges };
}

async function batch(n: number, o: { producerId?: number; baseSequence?: number; epoch?: number; baseOffset?: number } = {}): Promise<Buffer> {
  return buildBatch(
    Array.from({ length: n }, (_, i) => ({ value: `v${i}` })),
    {
      nowMs: 1_700_000_000_000,
      ...(o.producerId !== undefined ? { producerId: o.producerId, producerEpoch: 0, baseSequence: o.baseSequence ?? 0 } : {}),
      ...(o.epoch !== undefined ? { leaderEpoch: o.epoch } : {}),
      ...(o.baseOffset !== undefined ? { baseOffset: o.baseOffset } : {}),
    },
  );
}

/** Lets promise chains (log appends, hooks) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

async function consumerRead(p: Partition, offset: number): Promise<number> {
  const r = await p.read(offset, 1 << 20);
  return splitBatches(r.bytes).reduce((n, b) => n + readBatchHeader(b).recordCount, 0);
}

describe('Partition: the high watermark after a restart', () => {
  it('opens at the checkpointed HW, not the log end, and a restarted leader shows no unreplicated tail', async () => {
    const storage = new MemoryStorage();
    const first = await openReplica({ storage });
    first.p.becomeLeader(1, [1, 2, 3], [1, 2, 3]);
    // Followers hold 3 records; the leader then writes 5 more that nobody fetched.
    await first.p.produce(await batch(3), { acks: 'leader' });
    first.p.recordFollowerFetch(2, 3, 1);
    first.p.recordFollowerFetch(3, 3, 1);
    expect(first.p.highWatermark).toBe(3);
    await first.p.produce(await batch(5), { acks: 'leader' });
    expect(first.p.highWatermark).toBe(3);
    await first.log.close();

    // The broker restarts (same epoch: nobody else was elected) with HW 3 from its checkpoint.
    const again = await openReplica({ storage, highWatermark: first.p.highWatermark });
    expect(again.p.logEndOffset).toBe(8);
    expect(again.p.highWatermark).toBe(3);
    again.p.becomeLeader(2, [1, 2, 3], [1, 2, 3]);
    expect(again.p.highWatermark).toBe(3);
    expect(await consumerRead(again.p, 0)).toBe(3);
    expect(await consumerRead(again.p, 3)).toBe(0);
    // Once both followers fetched past the tail, it is visible.
    again.p.recordFollowerFetch(2, 8, 2);
    expect(again.p.highWatermark).toBe(3);
    again.p.recordFollowerFetch(3, 8, 2);
    expect(again.p.highWatermark).toBe(8);
    expect(await consumerRead(again.p, 3)).toBe(5);
  });

  it('without a checkpoint opens at the log start', async () => {
    const storage = new MemoryStorage();
    const first = await openReplica({ storage });
    first.p.becomeLeader(1, [1, 2, 3], [1, 2, 3]);
    await first.p.produce(await batch(4), { acks: 'leader' });
    await first.log.close();
    const again = await openReplica({ storage });
    again.p.becomeLeader(2, [1, 2, 3], [1, 2, 3]);
    expect(again.p.highWatermark).toBe(0);
    expect(await consumerRead(again.p, 0)).toBe(0);
  });

  it('answers an acks=all retry of a batch held only by the leader after the followers hold it', async () => {
    const storage = new MemoryStorage();
    const first = await openReplica({ storage });
    first.p.becomeLeader(1, [1, 2, 3], [1, 2, 3]);
    const b = await batch(2, { producerId: 7, baseSequence: 0 });
    const lost = first.p.produce(b, { acks: 'all', timeoutMs: 60_000 });
    await settle();
    expect(first.p.logEndOffset).toBe(2);
    await first.log.close();
    void lost.catch(() => undefined); // that broker is gone: its answer never comes

    const again = await openReplica({ storage, highWatermark: 0, clock: first.clock });
    again.p.becomeLeader(2, [1, 2, 3], [1, 2, 3]);
    let answered = false;
    const retry = again.p.produce(b, { acks: 'all', timeoutMs: 60_000 }).then((r) => {
      answered = true;
      return r;
    });
    await settle();
    expect(answered).toBe(false);
    again.p.recordFollowerFetch(2, 2, 2);
    await settle();
    expect(answered).toBe(false);
    again.p.recordFollowerFetch(3, 2, 2);
    const r = await retry;
    expect(r.duplicate).toBe(true);
    expect(r.baseOffset).toBe(0);
    expect(again.p.logEndOffset).toBe(2);
  });
});

describe('Partition: which follower fetches count', () => {
  async function leaderWithTail(): Promise<Rig> {
    const rig = await openReplica();
    rig.p.becomeLeader(3, [1, 2], [1, 2, 3]);
    await rig.p.produce(await batch(10), { acks: 'leader' });
    return rig;
  }

  it('a fetch from a stale epoch, a non-replica, past the log end or before its start moves nothing', async () => {
    const rig = await leaderWithTail();
    const codes: string[] = [];
    const attempt = (id: number, offset: number, epoch: number | null) => {
      try {
        rig.p.recordFollowerFetch(id, offset, epoch);
        codes.push('ok');
      } catch (err) {
        codes.push(isEdgeqError(err) ? err.code : 'other');
      }
    };
    attempt(2, 10, 2); // older epoch
    attempt(2, 10, 4); // newer epoch
    attempt(2, 10, null); // no epoch
    attempt(9, 10, 3); // not a replica
    attempt(1, 10, 3); // the leader itself
    attempt(2, 1_000_000, 3); // past the log end
    attempt(2, -1, 3); // before the log start
    expect(codes).toEqual(['FENCED_LEADER_EPOCH', 'LEADER_NOT_AVAILABLE', 'INVALID_REQUEST', 'INVALID_REQUEST', 'INVALID_REQUEST', 'OFFSET_OUT_OF_RANGE', 'OFFSET_OUT_OF_RANGE']);
    expect(rig.p.highWatermark).toBe(0);
    expect(rig.isrChanges).toEqual([]);
    attempt(2, 10, 3);
    expect(rig.p.highWatermark).toBe(10);
  });

  it('a fetch with a huge offset does not answer acks=all waiters', async () => {
    const rig = await leaderWithTail();
    let answered = false;
    void rig.p.produce(await batch(1), { acks: 'all', timeoutMs: 60_000 }).then(() => (answered = true), () => undefined);
    await settle();
    expect(() => rig.p.recordFollowerFetch(2, Number.MAX_SAFE_INTEGER, 3)).toThrow(/outside/);
    await settle();
    expect(answered).toBe(false);
  });

  it('a follower joins the ISR only once it holds the HW and the start of the current epoch', async () => {
    // A leader of epoch 3 whose epoch starts at offset 10 and whose HW is stale-low at 4.
    const storage = new MemoryStorage();
    const first = await openReplica({ storage });
    first.p.becomeLeader(2, [1, 2], [1, 2, 3]);
    await first.p.produce(await batch(10), { acks: 'leader' });
    first.p.recordFollowerFetch(2, 4, 2);
    expect(first.p.highWatermark).toBe(4);
    await first.log.close();
    const rig = await openReplica({ storage, highWatermark: 4 });
    rig.p.becomeLeader(3, [1, 2], [1, 2, 3]);
    expect(rig.p.epochStartOffset).toBe(10);
    expect(rig.p.highWatermark).toBe(4);
    // Replica 3 lags at offset 6: at or past the stale HW, but short of the epoch start.
    rig.p.recordFollowerFetch(3, 6, 3);
    await settle();
    expect(rig.isrChanges).toEqual([]);
    expect(rig.p.isr).toEqual([1, 2]);
    rig.p.recordFollowerFetch(3, 10, 3);
    await settle();
    expect(rig.isrChanges).toEqual([[1, 2, 3]]);
    expect(rig.p.isr).toEqual([1, 2, 3]);
  });

  it('the HW does not move while the ISR is smaller than min.insync.replicas', async () => {
    const rig = await openReplica({ minIsr: 2 });
    rig.p.becomeLeader(1, [1], [1, 2, 3]);
    await rig.p.produce(await batch(3), { acks: 'leader' });
    expect(rig.p.highWatermark).toBe(0);
    expect(await consumerRead(rig.p, 0)).toBe(0);
    rig.p.recordFollowerFetch(2, 3, 1);
    await settle();
    expect(rig.p.isr).toEqual([1, 2]);
    expect(rig.p.highWatermark).toBe(3);
  });
});

describe('Partition: role changes during follower work', () => {
  it('a follower append that finishes after the replica became leader sets no follower HW, and the new epoch starts after it', async () => {
    const rig = await openReplica();
    rig.p.becomeFollower(2, 1, [1, 2, 3], [1, 2, 3]);
    const gen = rig.p.generation;
    const fetched = await batch(4, { epoch: 1, baseOffset: 0 });
    const append = rig.p.appendAsFollower(fetched, 4, gen);
    // Elected while the append is still in the log's queue.
    rig.p.becomeLeader(2, [1, 3], [1, 2, 3]);
    expect(await append).toBe(true);
    await settle();
    expect(rig.p.role).toBe('leader');
    expect(rig.p.highWatermark).toBe(0);
    expect(rig.p.epochs.list()).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 2, startOffset: 4 },
    ]);
    // A produce in the new term lands after the old term's batches, stamped with the new epoch.
    const r = await rig.p.produce(await batch(1), { acks: 'leader' });
    expect(r.baseOffset).toBe(4);
  });

  it('follower work decided in an older generation does nothing', async () => {
    const rig = await openReplica();
    rig.p.becomeFollower(2, 1, [1, 2, 3], [1, 2, 3]);
    const old = rig.p.generation;
    rig.p.becomeFollower(3, 2, [1, 2, 3], [1, 2, 3]);
    expect(await rig.p.appendAsFollower(await batch(2, { epoch: 1, baseOffset: 0 }), 2, old)).toBe(false);
    expect(rig.p.logEndOffset).toBe(0);
    rig.p.setFollowerHw(5, old);
    expect(rig.p.highWatermark).toBe(0);
    expect(await rig.p.truncateTo(0, old)).toBe(false);
  });

  it('records the epochs of written batches only', async () => {
    const rig = await openReplica();
    rig.p.becomeFollower(2, 5, [1, 2, 3], [1, 2, 3]);
    const good = await batch(2, { epoch: 4, baseOffset: 0 });
    const bad = Buffer.from(await batch(2, { epoch: 5, baseOffset: 2 }));
    bad.writeUInt8(bad.readUInt8(bad.length - 1) ^ 0xff, bad.length - 1); // breaks the CRC
    await expect(rig.p.appendAsFollower(Buffer.concat([good, bad]), 4)).rejects.toThrow();
    expect(rig.p.logEndOffset).toBe(2);
    expect(rig.p.epochs.list()).toEqual([{ epoch: 4, startOffset: 0 }]); // not epoch 5 of the refused batch
  });
});

describe('Partition: the origin cursor of a global topic', () => {
  const applied = (offset: number, n: number, o: { epoch?: number; baseOffset?: number } = {}) =>
    buildBatch(Array.from({ length: n }, (_, i) => ({ value: `e${offset + i}` })), {
      nowMs: 1_700_000_000_000,
      origin: { region: 'us-east', offset },
      ...(o.epoch !== undefined ? { leaderEpoch: o.epoch } : {}),
      ...(o.baseOffset !== undefined ? { baseOffset: o.baseOffset } : {}),
    });

  it('follows the leader, rolls back with a truncation, and after a takeover answers a held batch as a duplicate once the followers hold it', async () => {
    const rig = await openReplica({ global: true });
    rig.p.becomeFollower(2, 1, [1, 2, 3], [1, 2, 3]);
    const copies = Buffer.concat([await applied(0, 2, { epoch: 1, baseOffset: 0 }), await applied(2, 2, { epoch: 1, baseOffset: 2 })]);
    expect(await rig.p.appendAsFollower(copies, 0)).toBe(true);
    expect(rig.p.origins.cursors()).toEqual({ 'us-east': 3 });
    // The leader's log ends at 2: the second batch was a divergent tail.
    expect(await rig.p.truncateTo(2)).toBe(true);
    expect(rig.p.origins.cursors()).toEqual({ 'us-east': 1 });

    rig.p.becomeLeader(2, [1, 2, 3], [1, 2, 3]);
    let answered = false;
    const dup = rig.p.produce(await applied(0, 2), { acks: 'all', timeoutMs: 60_000, region: 'eu-west' }).then((r) => {
      answered = true;
      return r;
    });
    await settle();
    expect(answered).toBe(false); // the HW is still below the held batch
    rig.p.recordFollowerFetch(2, 2, 2);
    await settle();
    expect(answered).toBe(false);
    rig.p.recordFollowerFetch(3, 2, 2);
    const r = await dup;
    expect(r).toMatchObject({ baseOffset: 0, lastOffset: 1, duplicate: true });
    // The batch the truncation dropped is no longer held: written again.
    const again = await rig.p.produce(await applied(2, 2), { acks: 'leader', region: 'eu-west' });
    expect(again.duplicate).toBeUndefined();
    expect(again.baseOffset).toBe(2);
    expect(rig.p.origins.cursors()).toEqual({ 'us-east': 3 });
    // This region's own records coming back are a loop.
    const self = buildBatch([{ value: 'x' }], { origin: { region: 'eu-west', offset: 9 } });
    await expect(rig.p.produce(await self, { acks: 'leader', region: 'eu-west' })).rejects.toMatchObject({ code: 'ORIGIN_IS_SELF' });
    expect(rig.p.logEndOffset).toBe(4);
  });
});
