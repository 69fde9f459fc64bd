// Proves the group coordinator runs Kafka's classic group protocol on a fake clock: joins land in
// one generation with one leader, syncs hand out the leader's assignments, expiry/leave/timeouts
// rebalance, stale generations are fenced, offsets round-trip and survive a restart, bad input fails.
import { afterAll, describe, expect, it } from 'vitest';
import { FakeClock, codeFromWire } from '../core/index.ts';
import { FsStorage, MemoryStorage, PartitionLog, type Storage } from '../log/index.ts';
import type {
  GroupProtocol,
  JoinGroupRequest,
  JoinGroupResponse,
  OffsetCommitResponse,
  SyncGroupResponse,
  WireError,
} from '../protocol/index.ts';
import { cleanupTempDirs, tempDir } from '../testing/index.ts';
import { rangeAssignor } from './assignors/index.ts';
import { decodeAssignment, decodeSubscription, encodeAssignment, encodeSubscription } from './consumer-protocol.ts';
import type { CoordinatorConfig } from './coordinator-config.ts';
import { GroupCoordinator, type CoordinatorDeps } from './coordinator.ts';
import { OffsetStore } from './offset-store.ts';

afterAll(cleanupTempDirs);

const CTX = { clientId: 'c', host: '127.0.0.1' };
const SESSION_MS = 1000;
const REBALANCE_MS = 5000;

/** The error code of a response field, or null. */
const code = (e: WireError | null | undefined): string | null => (e && e.code !== 0 ? codeFromWire(e.code) : null);

/** Lets resolved promise callbacks run (nothing here waits on time: the clock is fake). */
const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Wraps a promise so a test can ask whether it has settled yet. */
function track<T>(p: Promise<T>): { promise: Promise<T>; value: T | undefined; done: boolean } {
  const t = { promise: p, value: undefined as T | undefined, done: false };
  void p.then((v) => {
    t.value = v;
    t.done = true;
  });
  return t;
}

function protocols(topics: string[] = ['t'], names: string[] = ['range']): GroupProtocol[] {
  return names.map((name) => ({ name, metadata: encodeSubscription({ topics }) }));
}

function joinReq(memberId = '', over: Partial<JoinGroupRequest> = {}): JoinGroupRequest {
  return {
    groupId: 'g',
    sessionTimeoutMs: SESSION_MS,
    rebalanceTimeoutMs: REBALANCE_MS,
    memberId,
    protocolType: 'consumer',
    protocols: protocols(),
    ...over,
  };
}

async function setup(
  options: { config?: Partial<CoordinatorConfig>; deps?: Partial<CoordinatorDeps>; storage?: Storage; dir?: string } = {},
) {
  const clock = new FakeClock();
  const log = await PartitionLog.open(options.dir ?? '/offsets-0', { retentionMs: -1 }, { storage: options.storage ?? new MemoryStorage() });
  const offsets = await OffsetStore.load(log, { clock });
  let n = 0;
  const coord = new GroupCoordinator(
    { offsets, clock, newMemberId: (clientId) => `${clientId}-${++n}`, ...options.deps },
    { initialRebalanceDelayMs: 300, sessionTimeoutMsMin: 100, ...options.config },
  );
  return { coord, clock, log, offsets };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** Joins `count` new members together and waits out the initial delay. */
async function joinAll(s: Setup, count: number, groupId = 'g'): Promise<JoinGroupResponse[]> {
  const joins = Array.from({ length: count }, () => s.coord.joinGroup(joinReq('', { groupId }), CTX));
  await flush();
  s.clock.advance(300);
  return Promise.all(joins);
}

/** Forms a Stable group of `count` members: joins, then syncs with the range assignment. */
async function formGroup(s: Setup, count: number, partitions = 4): Promise<{ joins: JoinGroupResponse[]; syncs: SyncGroupResponse[] }> {
  const joins = await joinAll(s, count);
  const leader = joins.find((j) => j.memberId === j.leaderId)!;
  const assignment = rangeAssignor.assign(
    leader.members.map((m) => ({ memberId: m.memberId, topics: decodeSubscription(m.metadata).topics })),
    new Map([['t', partitions]]),
  );
  const syncs = await Promise.all(
    joins.map((j) =>
      s.coord.syncGroup({
        groupId: 'g',
        generationId: j.generationId,
        memberId: j.memberId,
        assignments:
          j === leader
            ? [...assignment].map(([memberId, tps]) => ({ memberId, assignment: encodeAssignment({ partitions: tps }) }))
            : [],
      }),
    ),
  );
  return { joins, syncs };
}

async function state(s: Setup, groupId = 'g'): Promise<string> {
  return (await s.coord.describeGroups({ groupIds: [groupId] })).groups[0]!.state;
}

function commitCodes(r: OffsetCommitResponse): (string | null)[] {
  return r.topics.flatMap((t) => t.partitions.map((p) => code(p.error)));
}

describe('GroupCoordinator: membership', () => {
  it('puts members that join together in one generation with one leader, who alone gets the members', async () => {
    const s = await setup();
    const a = track(s.coord.joinGroup(joinReq(), CTX));
    const b = track(s.coord.joinGroup(joinReq('', { protocols: protocols(['t', 'u']) }), CTX));
    await flush();
    expect(a.done || b.done).toBe(false);
    expect(await state(s)).toBe('PreparingRebalance');
    s.clock.advance(299);
    await flush();
    expect(a.done).toBe(false);
    s.clock.advance(1);
    const [ja, jb] = await Promise.all([a.promise, b.promise]);
    expect(code(ja.error)).toBeNull();
    expect(ja.generationId).toBe(1);
    expect(jb.generationId).toBe(1);
    expect(ja.memberId).toBe('c-1');
    expect(ja.leaderId).toBe('c-1');
    expect(jb.leaderId).toBe('c-1');
    expect(ja.protocolName).toBe('range');
    expect(ja.members.map((m) => [m.memberId, decodeSubscription(m.metadata).topics])).toEqual([
      ['c-1', ['t']],
      ['c-2', ['t', 'u']],
    ]);
    expect(jb.members).toEqual([]);
    expect(await state(s)).toBe('CompletingRebalance');
  });

  it('extends the initial delay for each new member, up to the rebalance timeout', async () => {
    const s = await setup({ config: { initialRebalanceDelayMs: 300 } });
    const a = track(s.coord.joinGroup(joinReq(), CTX));
    s.clock.advance(200);
    const b = track(s.coord.joinGroup(joinReq(), CTX));
    s.clock.advance(200);
    await flush();
    expect(a.done).toBe(false);
    s.clock.advance(100);
    expect((await a.promise).generationId).toBe(1);
    expect((await b.promise).generationId).toBe(1);
  });

  it('hands each member its assignment from the leader once the leader syncs, then is Stable', async () => {
    const s = await setup();
    const [ja, jb] = await joinAll(s, 2);
    const follower = track(s.coord.syncGroup({ groupId: 'g', generationId: 1, memberId: jb!.memberId }));
    await flush();
    expect(follower.done).toBe(false);
    const assignment = rangeAssignor.assign(
      ja!.members.map((m) => ({ memberId: m.memberId, topics: decodeSubscription(m.metadata).topics })),
      new Map([['t', 3]]),
    );
    const leader = await s.coord.syncGroup({
      groupId: 'g',
      generationId: 1,
      memberId: ja!.memberId,
      assignments: [...assignment].map(([memberId, partitions]) => ({ memberId, assignment: encodeAssignment({ partitions }) })),
    });
    expect(code(leader.error)).toBeNull();
    expect(decodeAssignment(leader.assignment).partitions).toEqual([{ topic: 't', partitions: [0, 1] }]);
    const f = await follower.promise;
    expect(decodeAssignment(f.assignment).partitions).toEqual([{ topic: 't', partitions: [2] }]);
    expect(await state(s)).toBe('Stable');
    // A late sync in Stable returns the stored assignment at once.
    const again = await s.coord.syncGroup({ groupId: 'g', generationId: 1, memberId: jb!.memberId });
    expect(decodeAssignment(again.assignment).partitions).toEqual([{ topic: 't', partitions: [2] }]);
    const d = (await s.coord.describeGroups({ groupIds: ['g'] })).groups[0]!;
    expect(d).toMatchObject({ state: 'Stable', generationId: 1, leaderId: 'c-1', protocolName: 'range', protocolType: 'consumer' });
    expect(d.members.map((m) => [m.memberId, m.clientId, m.host])).toEqual([
      ['c-1', 'c', '127.0.0.1'],
      ['c-2', 'c', '127.0.0.1'],
    ]);
  });

  it('removes a member whose session expires and rebalances into a generation without it', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 2);
    const [a, b] = joins as [JoinGroupResponse, JoinGroupResponse];
    // a heartbeats every 600 ms, b never does: b's session ends 1000 ms after its sync.
    s.clock.advance(600);
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId })).error)).toBeNull();
    s.clock.advance(600);
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId })).error)).toBe('REBALANCE_IN_PROGRESS');
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: b.memberId })).error)).toBe('UNKNOWN_MEMBER_ID');
    const rejoin = await s.coord.joinGroup(joinReq(a.memberId), CTX);
    expect(rejoin).toMatchObject({ generationId: 2, leaderId: a.memberId, memberId: a.memberId });
    expect(rejoin.members.map((m) => m.memberId)).toEqual([a.memberId]);
  });

  it('refuses heartbeats from an old generation with ILLEGAL_GENERATION and unknown members with UNKNOWN_MEMBER_ID', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 1);
    const a = joins[0]!;
    // The leader rejoining starts generation 2 (it must recompute the assignment).
    const rejoin = await s.coord.joinGroup(joinReq(a.memberId), CTX);
    expect(rejoin.generationId).toBe(2);
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: a.memberId })).error)).toBe('ILLEGAL_GENERATION');
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 2, memberId: a.memberId })).error)).toBeNull();
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 2, memberId: 'ghost' })).error)).toBe('UNKNOWN_MEMBER_ID');
    expect(code((await s.coord.heartbeat({ groupId: 'nope', generationId: 2, memberId: a.memberId })).error)).toBe('UNKNOWN_MEMBER_ID');
    expect(code((await s.coord.syncGroup({ groupId: 'g', generationId: 1, memberId: a.memberId })).error)).toBe('ILLEGAL_GENERATION');
  });

  it('rebalances when a member leaves; a new leader takes over when the leader leaves', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 3);
    const [a, b, c] = joins as [JoinGroupResponse, JoinGroupResponse, JoinGroupResponse];
    expect(code((await s.coord.leaveGroup({ groupId: 'g', memberId: a.memberId })).error)).toBeNull();
    expect(code((await s.coord.leaveGroup({ groupId: 'g', memberId: a.memberId })).error)).toBe('UNKNOWN_MEMBER_ID');
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: b.memberId })).error)).toBe('REBALANCE_IN_PROGRESS');
    const jb = track(s.coord.joinGroup(joinReq(b.memberId), CTX));
    await flush();
    expect(jb.done).toBe(false); // c has not rejoined yet
    const jc = await s.coord.joinGroup(joinReq(c.memberId), CTX);
    const rb = await jb.promise;
    expect(rb.generationId).toBe(2);
    expect(rb.leaderId).toBe(b.memberId);
    expect(rb.members.map((m) => m.memberId)).toEqual([b.memberId, c.memberId]);
    expect(jc.members).toEqual([]);
  });

  it('drops members that do not rejoin within the rebalance timeout', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 2);
    const [a, b] = joins as [JoinGroupResponse, JoinGroupResponse];
    const newcomer = track(s.coord.joinGroup(joinReq(), CTX));
    const ra = track(s.coord.joinGroup(joinReq(a.memberId), CTX));
    // b keeps its session alive with heartbeats but never rejoins.
    for (let t = 0; t < REBALANCE_MS - 500; t += 500) {
      s.clock.advance(500);
      expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: b.memberId })).error)).toBe('REBALANCE_IN_PROGRESS');
    }
    await flush();
    expect(ra.done).toBe(false);
    s.clock.advance(500);
    const r = await ra.promise;
    expect(r.generationId).toBe(2);
    expect(r.members.map((m) => m.memberId)).toEqual([a.memberId, 'c-3']);
    expect((await newcomer.promise).memberId).toBe('c-3');
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 2, memberId: b.memberId })).error)).toBe('UNKNOWN_MEMBER_ID');
  });

  it('answers syncs still waiting for the leader with REBALANCE_IN_PROGRESS when a rebalance starts', async () => {
    const s = await setup();
    const [, jb] = await joinAll(s, 2);
    const pending = track(s.coord.syncGroup({ groupId: 'g', generationId: 1, memberId: jb!.memberId }));
    await flush();
    expect(pending.done).toBe(false);
    void s.coord.joinGroup(joinReq(), CTX);
    expect(code((await pending.promise).error)).toBe('REBALANCE_IN_PROGRESS');
    expect(await state(s)).toBe('PreparingRebalance');
    expect(code((await s.coord.syncGroup({ groupId: 'g', generationId: 1, memberId: jb!.memberId })).error)).toBe('REBALANCE_IN_PROGRESS');
  });

  it('answers a follower re-sending the same join with the current generation, without a rebalance', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 2);
    const again = await s.coord.joinGroup(joinReq(joins[1]!.memberId), CTX);
    expect(again).toMatchObject({ generationId: 1, leaderId: 'c-1', members: [] });
    expect(await state(s)).toBe('Stable');
    // New metadata does rebalance.
    void s.coord.joinGroup(joinReq(joins[1]!.memberId, { protocols: protocols(['t', 'u']) }), CTX);
    expect(await state(s)).toBe('PreparingRebalance');
  });

  it('picks the protocol most members prefer among those all support, ties going to the leader', async () => {
    const s = await setup();
    const p = (names: string[]) => protocols(['t'], names);
    const joins = [
      s.coord.joinGroup(joinReq('', { protocols: p(['roundrobin', 'range']) }), CTX),
      s.coord.joinGroup(joinReq('', { protocols: p(['range', 'roundrobin', 'sticky']) }), CTX),
      s.coord.joinGroup(joinReq('', { protocols: p(['range', 'roundrobin']) }), CTX),
    ];
    s.clock.advance(300);
    expect((await Promise.all(joins)).map((j) => j.protocolName)).toEqual(['range', 'range', 'range']);

    const t = await setup();
    const tied = [
      t.coord.joinGroup(joinReq('', { protocols: p(['roundrobin', 'range']) }), CTX),
      t.coord.joinGroup(joinReq('', { protocols: p(['range', 'roundrobin']) }), CTX),
    ];
    t.clock.advance(300);
    expect((await Promise.all(tied)).map((j) => j.protocolName)).toEqual(['roundrobin', 'roundrobin']);
  });

  it('completes a lone join at once when the initial delay is 0', async () => {
    const s = await setup({ config: { initialRebalanceDelayMs: 0 } });
    const j = await s.coord.joinGroup(joinReq(), CTX);
    expect(j).toMatchObject({ generationId: 1, leaderId: 'c-1', memberId: 'c-1' });
  });
});

describe('GroupCoordinator: offsets and topic identity (KIP-516)', () => {
  it('never serves an offset committed for an earlier incarnation of a topic, and refuses a commit aimed at one', async () => {
    const ids = new Map([['t', 'aaaa']]);
    const log = await PartitionLog.open('/offsets-id', { retentionMs: -1 }, { storage: new MemoryStorage() });
    const clock = new FakeClock();
    const deps = { clock, topicIdOf: (topic: string) => ids.get(topic) };
    const coord = new GroupCoordinator({ offsets: await OffsetStore.load(log, { clock }), ...deps }, { initialRebalanceDelayMs: 0 });
    const commit = (topicId?: string) =>
      coord.commitOffsets({ groupId: 'g', generationId: -1, memberId: '', topics: [{ name: 't', ...(topicId ? { topicId } : {}), partitions: [{ partition: 0, offset: 40 }] }] });
    expect(commitCodes(await commit('aaaa'))).toEqual([null]);
    const fetchAll = async () => (await coord.fetchOffsets({ groupId: 'g' })).topics;
    const fetchOne = async () => (await coord.fetchOffsets({ groupId: 'g', topics: [{ name: 't', partitions: [0] }] })).topics[0]!.partitions[0]!.offset;
    expect(await fetchOne()).toBe(40);
    // The topic is deleted and created again: the same name, another id.
    ids.set('t', 'bbbb');
    expect(await fetchOne()).toBe(-1);
    expect(await fetchAll()).toEqual([]);
    // A consumer still on the old topic commits: refused, nothing written.
    const end = log.logEndOffset;
    expect(commitCodes(await commit('aaaa'))).toEqual(['UNKNOWN_TOPIC_ID']);
    expect(log.logEndOffset).toBe(end);
    // After a coordinator restart (replay of the log) the old offset is still not served.
    const again = new GroupCoordinator({ offsets: await OffsetStore.load(log, { clock }), ...deps }, { initialRebalanceDelayMs: 0 });
    expect((await again.fetchOffsets({ groupId: 'g', topics: [{ name: 't', partitions: [0] }] })).topics[0]!.partitions[0]!.offset).toBe(-1);
    // A commit for the new topic (without naming an id, as older clients do) is stamped with it.
    expect(commitCodes(await commit())).toEqual([null]);
    expect(await fetchOne()).toBe(40);
  });
});

describe('GroupCoordinator: offsets', () => {
  it('commits from the current generation and fetches them back; -1 for nothing committed', async () => {
    const s = await setup({ deps: { validatePartition: (topic, p) => topic === 't' && p < 4 } });
    const { joins } = await formGroup(s, 2);
    const a = joins[0]!;
    const r = await s.coord.commitOffsets({
      groupId: 'g',
      generationId: 1,
      memberId: a.memberId,
      topics: [
        { name: 't', partitions: [{ partition: 0, offset: 42, metadata: 'm' }, { partition: 9, offset: 1 }] },
        { name: 'x', partitions: [{ partition: 0, offset: 1 }] },
        { name: 't', partitions: [{ partition: 1, offset: 7, metadata: 'y'.repeat(5000) }] },
      ],
    });
    expect(code(r.error)).toBeNull();
    expect(commitCodes(r)).toEqual([null, 'UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_ARGUMENT']);
    const f = await s.coord.fetchOffsets({ groupId: 'g', topics: [{ name: 't', partitions: [0, 1] }] });
    expect(f.topics).toEqual([
      {
        name: 't',
        partitions: [
          { partition: 0, error: null, offset: 42, metadata: 'm' },
          { partition: 1, error: null, offset: -1, metadata: '' },
        ],
      },
    ]);
    const all = await s.coord.fetchOffsets({ groupId: 'g' });
    expect(all.topics).toEqual([{ name: 't', partitions: [{ partition: 0, error: null, offset: 42, metadata: 'm' }] }]);
  });

  it('refuses commits from a stale generation, an unknown member or outsiders, storing nothing', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 2);
    const [a] = joins as [JoinGroupResponse, JoinGroupResponse];
    const commit = (generationId: number, memberId: string) =>
      s.coord.commitOffsets({ groupId: 'g', generationId, memberId, topics: [{ name: 't', partitions: [{ partition: 0, offset: 5 }] }] });
    const end = s.log.logEndOffset;
    expect(code((await commit(0, a.memberId)).error)).toBe('ILLEGAL_GENERATION');
    expect(code((await commit(1, 'ghost')).error)).toBe('UNKNOWN_MEMBER_ID');
    expect(code((await commit(-1, '')).error)).toBe('UNKNOWN_MEMBER_ID');
    expect(commitCodes(await commit(0, a.memberId))).toEqual(['ILLEGAL_GENERATION']);
    expect(s.log.logEndOffset).toBe(end);
    expect((await s.coord.fetchOffsets({ groupId: 'g', topics: [{ name: 't', partitions: [0] }] })).topics[0]!.partitions[0]!.offset).toBe(-1);
  });

  it('takes commits from the current generation while a rebalance is prepared, and fences them once it completes', async () => {
    const s = await setup();
    const { joins } = await formGroup(s, 2);
    const [a, b] = joins as [JoinGroupResponse, JoinGroupResponse];
    const commit = (generationId: number, memberId: string, offset: number) =>
      s.coord.commitOffsets({ groupId: 'g', generationId, memberId, topics: [{ name: 't', partitions: [{ partition: 0, offset }] }] });
    // b changes its subscription: that starts a rebalance.
    const jb = s.coord.joinGroup(joinReq(b.memberId, { protocols: protocols(['t', 'u']) }), CTX);
    // a gives its partitions up after committing what it consumed, as Kafka members do.
    expect(code((await commit(1, a.memberId, 7)).error)).toBeNull();
    const ja = await s.coord.joinGroup(joinReq(a.memberId), CTX);
    await jb;
    expect(ja.generationId).toBe(2);
    expect(code((await commit(1, a.memberId, 9)).error)).toBe('ILLEGAL_GENERATION');
    expect((await s.coord.fetchOffsets({ groupId: 'g', topics: [{ name: 't', partitions: [0] }] })).topics[0]!.partitions[0]!.offset).toBe(7);
  });

  it('accepts generation -1 commits for a group without members', async () => {
    const s = await setup();
    const r = await s.coord.commitOffsets({
      groupId: 'admin',
      generationId: -1,
      memberId: '',
      topics: [{ name: 't', partitions: [{ partition: 0, offset: 3 }] }],
    });
    expect(commitCodes(r)).toEqual([null]);
    // A group that emptied out (its only member left) takes them too.
    await formGroup(s, 1);
    await s.coord.leaveGroup({ groupId: 'g', memberId: 'c-1' });
    expect(await state(s)).toBe('Empty');
    const r2 = await s.coord.commitOffsets({ groupId: 'g', generationId: -1, memberId: '', topics: [{ name: 't', partitions: [{ partition: 1, offset: 9 }] }] });
    expect(commitCodes(r2)).toEqual([null]);
  });

  it('keeps committed offsets across a restart of coordinator and log on disk', async () => {
    const dir = await tempDir('edgeq-group-');
    const s = await setup({ storage: new FsStorage(), dir });
    await formGroup(s, 1);
    const r = await s.coord.commitOffsets({
      groupId: 'g',
      generationId: 1,
      memberId: 'c-1',
      topics: [{ name: 't', partitions: [{ partition: 0, offset: 100, metadata: 'keep' }, { partition: 3, offset: 7 }] }],
    });
    expect(commitCodes(r)).toEqual([null, null]);
    await s.coord.close();
    await s.log.close();

    const again = await setup({ storage: new FsStorage(), dir });
    const f = await again.coord.fetchOffsets({ groupId: 'g' });
    expect(f.topics).toEqual([
      {
        name: 't',
        partitions: [
          { partition: 0, error: null, offset: 100, metadata: 'keep' },
          { partition: 3, error: null, offset: 7, metadata: '' },
        ],
      },
    ]);
    expect((await again.coord.listGroups()).groups).toEqual([{ groupId: 'g', state: 'Empty', protocolType: '' }]);
    expect((await again.coord.describeGroups({ groupIds: ['g'] })).groups[0]).toMatchObject({ state: 'Empty', error: null });
    await again.log.close();
  });
});

describe('GroupCoordinator: bad input, bounds and shutdown', () => {
  it('refuses empty, too long and control-character group ids with INVALID_GROUP', async () => {
    const s = await setup({ config: { groupIdBytesMax: 8 } });
    for (const groupId of ['', 'x'.repeat(9), 'a\nb']) {
      expect(code((await s.coord.joinGroup(joinReq('', { groupId }), CTX)).error)).toBe('INVALID_GROUP');
      expect(code((await s.coord.heartbeat({ groupId, generationId: 1, memberId: 'm' })).error)).toBe('INVALID_GROUP');
      expect(code((await s.coord.fetchOffsets({ groupId })).error)).toBe('INVALID_GROUP');
      expect(code((await s.coord.commitOffsets({ groupId, generationId: -1, memberId: '', topics: [] })).error)).toBe('INVALID_GROUP');
      expect(code((await s.coord.describeGroups({ groupIds: [groupId] })).groups[0]!.error)).toBe('INVALID_GROUP');
    }
    expect((await s.coord.listGroups()).groups).toEqual([]);
  });

  it('refuses unknown members, mismatched protocol types and protocols, and bad timeouts', async () => {
    const s = await setup();
    await formGroup(s, 1);
    const join = async (memberId: string, over: Partial<JoinGroupRequest>) => code((await s.coord.joinGroup(joinReq(memberId, over), CTX)).error);
    expect(await join('ghost', {})).toBe('UNKNOWN_MEMBER_ID');
    expect(await join('', { protocolType: 'connect' })).toBe('INVALID_GROUP');
    expect(await join('', { protocols: protocols(['t'], ['sticky']) })).toBe('INVALID_GROUP');
    expect(await join('', { sessionTimeoutMs: 50 })).toBe('INVALID_ARGUMENT');
    expect(await join('', { sessionTimeoutMs: 300_001 })).toBe('INVALID_ARGUMENT');
    expect(await join('', { rebalanceTimeoutMs: 10 ** 9 })).toBe('INVALID_ARGUMENT');
    expect(await join('', { protocols: [] })).toBe('INVALID_ARGUMENT');
    expect(await join('', { protocolType: '' })).toBe('INVALID_ARGUMENT');
    expect(await join('', { protocols: [...protocols(), ...protocols()] })).toBe('INVALID_ARGUMENT');
    expect(await join('', { protocols: [{ name: 'range', metadata: new Uint8Array(64 * 1024 + 1) }] })).toBe('INVALID_ARGUMENT');
    expect(await state(s)).toBe('Stable');
    expect(code((await s.coord.describeGroups({ groupIds: ['missing'] })).groups[0]!.error)).toBe('GROUP_ID_NOT_FOUND');
  });

  it('bounds members per group, groups and partitions per commit', async () => {
    const s = await setup({ config: { membersPerGroupMax: 2, groupsMax: 1, commitPartitionsMax: 2 } });
    await joinAll(s, 2);
    expect(code((await s.coord.joinGroup(joinReq(), CTX)).error)).toBe('QUEUE_FULL');
    expect(code((await s.coord.joinGroup(joinReq('', { groupId: 'other' }), CTX)).error)).toBe('QUEUE_FULL');
    const big = await s.coord.commitOffsets({
      groupId: 'other',
      generationId: -1,
      memberId: '',
      topics: [{ name: 't', partitions: [0, 1, 2].map((partition) => ({ partition, offset: 1 })) }],
    });
    expect(code(big.error)).toBe('INVALID_ARGUMENT');
    // Once g is empty it may be evicted to make room.
    await s.coord.leaveGroup({ groupId: 'g', memberId: 'c-1' });
    await s.coord.leaveGroup({ groupId: 'g', memberId: 'c-2' });
    expect(await state(s)).toBe('Empty');
    void s.coord.joinGroup(joinReq('', { groupId: 'other' }), CTX);
    expect((await s.coord.listGroups()).groups.map((g) => g.groupId)).toEqual(['other']);
  });

  it('answers pending joins with COORDINATOR_NOT_AVAILABLE on close and leaves no timer behind', async () => {
    const s = await setup();
    await formGroup(s, 1);
    const pending = s.coord.joinGroup(joinReq('', { groupId: 'h' }), CTX);
    await flush();
    expect(s.clock.pendingTimers()).toBeGreaterThan(0);
    await s.coord.close();
    expect(code((await pending).error)).toBe('COORDINATOR_NOT_AVAILABLE');
    expect(s.clock.pendingTimers()).toBe(0);
    expect(code((await s.coord.heartbeat({ groupId: 'g', generationId: 1, memberId: 'c-1' })).error)).toBe('COORDINATOR_NOT_AVAILABLE');
    expect(code((await s.coord.fetchOffsets({ groupId: 'g' })).error)).toBe('COORDINATOR_NOT_AVAILABLE');
    expect(code((await s.coord.listGroups()).error)).toBe('COORDINATOR_NOT_AVAILABLE');
  });
});
