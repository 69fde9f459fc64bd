// Proves that a follower's fetcher acts only on answers to the requests it sent for the replica
// as it is now (a stale answer from before a role change is dropped), and that a follower told it
// is behind always recovers, on a fake clock with answers the test controls.
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError, FakeClock } from '../core/index.ts';
import { buildBatch, MemoryStorage, PartitionLog } from '../log/index.ts';
import { wireError, type ApiName, type FetchRequest, type OffsetForLeaderEpochRequest, type RequestOf, type ResponseOf } from '../protocol/index.ts';
import { LeaderEpochCache } from './leader-epoch-cache.ts';
import { Partition } from './partition.ts';
import { ProducerState } from './producer-state.ts';
import { ReplicaFetchers, type ReplicaConnection } from './replica-fetcher.ts';
import { parseTopicConfig } from './topic-config.ts';

interface Pending {
  name: ApiName;
  body: unknown;
  resolve: (v: unknown) => void;
  reject: (err: unknown) => void;
}

/** A connection whose every request waits until the test answers it. */
class FakeLeaderConnection implements ReplicaConnection {
  closed = false;
  readonly pending: Pending[] = [];
  request<N extends ApiName>(name: N, body: RequestOf<N>): Promise<ResponseOf<N>> {
    return new Promise((resolve, reject) => this.pending.push({ name, body, resolve: resolve as (v: unknown) => void, reject }));
  }
  /** As a real connection does, a close fails what is unanswered. */
  close(): void {
    this.closed = true;
    for (const p of this.pending.splice(0)) p.reject(new EdgeqError('CONNECTION_CLOSED', 'closed'));
  }
  /** The oldest unanswered request, which must be of kind `name`. */
  take<N extends ApiName>(name: N): { body: RequestOf<N>; answer: (res: ResponseOf<N>) => void } {
    const i = this.pending.findIndex((p) => p.name === name);
    if (i < 0) throw new Error(`no pending ${name} request (pending: ${this.pending.map((p) => p.name).join(', ') || 'none'})`);
    const [p] = this.pending.splice(i, 1);
    return { body: p!.body as RequestOf<N>, answer: (res) => p!.resolve(res) };
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
}

let fetchers: ReplicaFetchers | null = null;
afterEach(async () => {
  await fetchers?.close();
  fetchers = null;
});

async function replica(storage: MemoryStorage, clock: FakeClock, index: number): Promise<Partition> {
  const dir = `/data/t.abc/${index}`;
  const log = await PartitionLog.open(dir, {}, { storage, clock });
  const epochs = new LeaderEpochCache(storage, dir);
  await epochs.rebuild(log);
  return new Partition({
    topic: 't',
    index,
    log,
    producers: new ProducerState({ clock }),
    epochs,
    leaderEpoch: 1,
    settings: parseTopicConfig({}, {}),
    brokerId: 2,
    storage,
    clock,
    cellReplicas: [1, 2, 3],
  });
}

/** Broker 2 following partition t-0 (and t-1, which keeps the fetch loop to leader 1 alive). */
async function rig() {
  const storage = new MemoryStorage();
  const clock = new FakeClock();
  const p = await replica(storage, clock, 0);
  const other = await replica(storage, clock, 1);
  const conn = new FakeLeaderConnection();
  fetchers = new ReplicaFetchers({
    brokerId: 2,
    addressOf: () => ({ host: '127.0.0.1', port: 1 }),
    connect: async () => conn,
    limits: { replicaBackoffMs: 100, replicaStalledRetryMs: 1000 },
    clock,
  });
  return { p, other, conn, clock, fetchers };
}

const truncationAnswer = (req: OffsetForLeaderEpochRequest, endOffset: number): ResponseOf<'OffsetForLeaderEpoch'> => ({
  topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((x) => ({ partition: x.partition, leaderEpoch: x.leaderEpoch, endOffset })) })),
});

function fetchAnswer(req: FetchRequest, o: { records?: Buffer; hw?: number; error?: EdgeqError }): ResponseOf<'Fetch'> {
  return {
    topics: req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((x) => ({
        partition: x.partition,
        highWatermark: o.hw ?? 0,
        logStartOffset: 0,
        logEndOffset: o.hw ?? 0,
        records: o.records ?? Buffer.alloc(0),
        leaderEpoch: 2,
        ...(o.error ? { error: wireError(o.error) } : {}),
      })),
    })),
  };
}

const fenced = () => new EdgeqError('FENCED_LEADER_EPOCH', 'epoch 1 is older than the leader\'s 2');

/** `p` follows leader 1 in epoch 1; the truncation step is answered; returns its first fetch. */
async function followToFirstFetch(p: Partition, conn: FakeLeaderConnection, fetchers: ReplicaFetchers) {
  p.becomeFollower(1, 1, [1, 2, 3], [1, 2, 3]);
  fetchers.follow(p);
  await settle();
  const t = conn.take('OffsetForLeaderEpoch');
  t.answer(truncationAnswer(t.body, 0));
  await settle();
  return conn.take('Fetch');
}

describe('replica fetcher', () => {
  it('drops a FENCED_LEADER_EPOCH answer from before a role change, and fetches in the new epoch', async () => {
    const { p, other, conn, fetchers } = await rig();
    other.becomeFollower(1, 1, [1, 2, 3], [1, 2, 3]);
    fetchers.follow(other);
    await settle();
    const t0 = conn.take('OffsetForLeaderEpoch');
    t0.answer(truncationAnswer(t0.body, 0));
    await settle();
    const longPoll = conn.take('Fetch'); // t-1 keeps following leader 1 throughout
    p.becomeFollower(1, 1, [1, 2, 3], [1, 2, 3]);
    fetchers.follow(p);
    longPoll.answer({ topics: [] });
    await settle();
    const t1 = conn.take('OffsetForLeaderEpoch');
    t1.answer(truncationAnswer(t1.body, 0));
    await settle();
    const oldFetch = conn.take('Fetch');
    const sent = oldFetch.body.topics[0]!.partitions.find((x) => x.partition === 0)!;
    expect(sent.currentLeaderEpoch).toBe(1);
    // The arbiter names a new epoch of the same leader while the old fetch is out.
    p.becomeFollower(1, 2, [1, 2, 3], [1, 2, 3]);
    fetchers.follow(p);
    // The leader, already in epoch 2, refuses the old request for t-0.
    oldFetch.answer({
      topics: [{ name: 't', partitions: [{ partition: 0, highWatermark: 0, logStartOffset: 0, logEndOffset: 0, records: Buffer.alloc(0), leaderEpoch: 2, error: wireError(fenced()) }] }],
    });
    await settle();
    const t2 = conn.take('OffsetForLeaderEpoch');
    expect(t2.body.topics[0]!.partitions).toEqual([expect.objectContaining({ partition: 0, currentLeaderEpoch: 2 })]);
    t2.answer(truncationAnswer(t2.body, 0));
    await settle();
    const newFetch = conn.take('Fetch');
    expect(newFetch.body.topics[0]!.partitions.find((x) => x.partition === 0)?.currentLeaderEpoch).toBe(2);
    newFetch.answer({
      topics: [{ name: 't', partitions: [{ partition: 0, highWatermark: 1, logStartOffset: 0, logEndOffset: 1, records: await buildBatch([{ value: 'a' }], { leaderEpoch: 2 }), leaderEpoch: 2 }] }],
    });
    await settle();
    expect(p.logEndOffset).toBe(1);
    expect(p.highWatermark).toBe(1);
  });

  it('an answer with records for a replica whose role changed meanwhile appends nothing', async () => {
    const { p, conn, fetchers } = await rig();
    const f = await followToFirstFetch(p, conn, fetchers);
    p.becomeLeader(2, [2], [1, 2, 3]);
    fetchers.unfollow(p);
    f.answer(fetchAnswer(f.body, { records: await buildBatch([{ value: 'from the old leader' }], { leaderEpoch: 1 }), hw: 1 }));
    await settle();
    expect(p.logEndOffset).toBe(0);
    expect(p.highWatermark).toBe(0);
  });

  it('a follower the leader calls behind asks again after replicaStalledRetryMs, and recovers', async () => {
    const { p, conn, clock, fetchers } = await rig();
    const f1 = await followToFirstFetch(p, conn, fetchers);
    f1.answer(fetchAnswer(f1.body, { error: fenced() }));
    await settle();
    // Stalled: nothing is asked before the retry time.
    for (let i = 0; i < 9; i++) {
      clock.advance(100);
      await settle();
    }
    expect(conn.pending).toEqual([]);
    clock.advance(150);
    await settle();
    const t2 = conn.take('OffsetForLeaderEpoch');
    t2.answer(truncationAnswer(t2.body, 0));
    await settle();
    const f2 = conn.take('Fetch');
    f2.answer(fetchAnswer(f2.body, { records: await buildBatch([{ value: 'b' }], { leaderEpoch: 1 }), hw: 1 }));
    await settle();
    expect(p.logEndOffset).toBe(1);
  });

  it('a refusal it has no rule for backs off instead of asking again at once', async () => {
    const { p, conn, clock, fetchers } = await rig();
    const f1 = await followToFirstFetch(p, conn, fetchers);
    f1.answer(fetchAnswer(f1.body, { error: new EdgeqError('INVALID_REQUEST', 'broker 2 is not a follower replica') }));
    await settle();
    expect(conn.pending).toEqual([]);
    clock.advance(100);
    await settle();
    clock.advance(100);
    await settle();
    expect(conn.pending.map((x) => x.name)).toEqual(['Fetch']);
  });
});
