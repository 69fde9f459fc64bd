// Proves exact consumer failover between regions with real processes: a 3-region `edgeq dev`
// (one broker per region, 50 ms RTT). A group consumes part of a global topic written in all three
// regions at A over the HTTP group API and commits; failed over to B with
// `POST /v1/groups/{g}/failover` it consumes the rest there, and the union of what it saw is every
// record exactly once. When A's last commits never left it (A cut off right after an earlier
// commit was published), the failover at B starts from the last published position: records are
// delivered again, never skipped. Failovers from an unknown region, from B itself, of a group
// never published, and into a group with a live member are refused and change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/core/index.ts';
import { testSeed, waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** Convergence bound of the exchange after the writes stop (as test/geo/exchange.test.ts). */
const CONVERGE_MS = 60_000;
/** A published position reaches another region within: the 1 s publisher period, mesh dissemination, and a loaded machine. */
const PUBLISH_MS = 30_000;
/** Polls of one consuming loop at most (each waits ≤ POLL_WAIT_MS). */
const POLLS_MAX = 200;
const POLL_WAIT_MS = 500;
/**
 * How long a cut-off A is given to (fail to) publish its later commit: five publisher periods.
 * Waiting on an absence has no event to await; the bound is what makes the check mean something.
 */
const UNEXCHANGED_MS = 5_000;

let geo: Geo;
let A: string, B: string, C: string;
const rand = seededRandom(testSeed('geo-failover'));

interface SeenRecord {
  topic: string;
  partition: number;
  offset: number;
  value: string;
  originRegion: string;
  originOffset: number;
}

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-geo-fo-'), base, { regions: '3', brokersPerRegion: 1, wanLatencyMs: 25 });
  geo = new Geo(await dev.ready);
  [A, B, C] = geo.regions as [string, string, string];
  await geo.waitForExchanges(60_000);
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** Every region writes `rounds` requests of `batch` unique values to random partitions, all at once; then every region holds them all. */
async function fill(topic: string, partitions: number, rounds: number, batch: number): Promise<Set<string>> {
  const acked = new Map<number, Set<string>>(Array.from({ length: partitions }, (_, p) => [p, new Set<string>()]));
  await Promise.all(
    geo.regions.map(async (region) => {
      for (let i = 0; i < rounds; i++) {
        const p = Math.floor(rand() * partitions);
        const values = Array.from({ length: batch }, (_, j) => `${topic}-${region}-${i}-${j}`);
        const r = await geo.produce(region, topic, p, values);
        expect(r.status).toBe(200);
        for (const v of values) acked.get(p)!.add(v);
      }
    }),
  );
  for (const [p, values] of acked) await geo.converged(topic, p, values.size, CONVERGE_MS);
  return new Set([...acked.values()].flatMap((s) => [...s]));
}

/** An HTTP group member at `region`. */
class Member {
  private constructor(
    readonly region: string,
    readonly path: string,
  ) {}

  static async join(region: string, group: string, topic: string): Promise<Member> {
    const r = await geo.call(region, 'POST', `/v1/groups/${group}/members`, { topics: [topic], fromBeginning: true });
    expect(r.status).toBe(201);
    return new Member(region, `/v1/groups/${group}/members/${r.json.memberId as string}`);
  }

  async poll(maxRecords: number): Promise<SeenRecord[]> {
    const r = await geo.call(this.region, 'GET', `${this.path}/records?maxRecords=${maxRecords}&waitMs=${POLL_WAIT_MS}`);
    expect(r.status).toBe(200);
    return r.json.records as SeenRecord[];
  }

  /** Polls until at least `n` records came (or POLLS_MAX polls), a few at a time so it can stop near `n`. */
  async consume(n: number, perPoll = 7): Promise<SeenRecord[]> {
    const got: SeenRecord[] = [];
    for (let i = 0; i < POLLS_MAX && got.length < n; i++) got.push(...(await this.poll(Math.min(perPoll, n - got.length))));
    return got;
  }

  /** Commits everything polled so far. */
  async commit(): Promise<void> {
    const r = await geo.call(this.region, 'POST', `${this.path}/commit`);
    expect(r.status).toBe(204);
  }

  async leave(): Promise<void> {
    expect((await geo.call(this.region, 'DELETE', this.path)).status).toBe(204);
  }
}

/** Per partition, the vector of what was consumed: per origin, the highest origin offset. */
function vectorsOf(seen: readonly SeenRecord[]): Map<number, Record<string, number>> {
  const out = new Map<number, Record<string, number>>();
  for (const r of seen) {
    const v = out.get(r.partition) ?? {};
    v[r.originRegion] = Math.max(v[r.originRegion] ?? -1, r.originOffset);
    out.set(r.partition, v);
  }
  return out;
}

interface FailoverAnswer {
  group: string;
  from: string;
  partitions: { topic: string; partition: number; startOffset: number; filterUntil: number; vector: Record<string, number> }[];
}

/**
 * Fails the group over from A to B once B's view of A's published position holds `expected` (a
 * failover is repeatable while the group has no member at B: each one translates afresh).
 */
async function failoverWhen(group: string, expected: Map<number, Record<string, number>>): Promise<FailoverAnswer> {
  let last = '';
  try {
    return await waitFor(`${group}'s position at ${A} to reach ${B}`, PUBLISH_MS, async () => {
      const r = await geo.call(B, 'POST', `/v1/groups/${group}/failover`, { from: A });
      last = `${r.status} ${JSON.stringify(r.json)}`;
      if (r.status !== 200) return undefined;
      const got = r.json as FailoverAnswer;
      const ok = [...expected].every(([p, v]) => JSON.stringify(sorted(got.partitions.find((x) => x.partition === p)?.vector ?? {})) === JSON.stringify(sorted(v)));
      return ok ? got : undefined;
    }, 500);
  } catch (err) {
    throw new Error(`${(err as Error).message}; expected ${JSON.stringify([...expected])}, last answer ${last}`);
  }
}

const sorted = (v: Record<string, number>) => Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)));

/** How many times each value was seen. */
function counts(seen: readonly SeenRecord[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of seen) m.set(r.value, (m.get(r.value) ?? 0) + 1);
  return m;
}

describe('consumer failover between regions', () => {
  it('consume part at A, fail over to B, consume the rest: every record exactly once', async () => {
    await geo.createGlobal(A, 'fo-exact', 2);
    const all = await fill('fo-exact', 2, 6, 4);
    expect(all.size).toBe(3 * 6 * 4);
    const atA = await Member.join(A, 'g-exact', 'fo-exact');
    const seenA = await atA.consume(Math.floor(all.size / 2));
    await atA.commit();
    await atA.leave();
    const answer = await failoverWhen('g-exact', vectorsOf(seenA));
    expect(answer.partitions.map((p) => p.partition).sort()).toEqual([0, 1]);
    const atB = await Member.join(B, 'g-exact', 'fo-exact');
    const seenB = await atB.consume(all.size - seenA.length);
    // Nothing more comes: a duplicate would show up here.
    seenB.push(...(await atB.poll(100)));
    await atB.leave();
    const c = counts([...seenA, ...seenB]);
    expect([...all].filter((v) => c.get(v) !== 1)).toEqual([]);
    expect([...c.keys()].filter((v) => !all.has(v))).toEqual([]);
    // B's log orders the records otherwise than A's (each region's own writes land first): the
    // filter did work, not just the start offset.
    expect(answer.partitions.some((p) => p.filterUntil > p.startOffset)).toBe(true);
  }, 240_000);

  it('the last commit at A never left it: at B only duplicates of what it consumed since, never a skip', async () => {
    await geo.createGlobal(B, 'fo-cut', 1);
    const all = await fill('fo-cut', 1, 5, 4);
    const atA = await Member.join(A, 'g-cut', 'fo-cut');
    const early = await atA.consume(Math.floor(all.size / 3));
    await atA.commit();
    // The earlier commit is published and has reached B...
    await failoverWhen('g-cut', vectorsOf(early));
    // ...then A is cut off from both other regions and goes on consuming and committing.
    await geo.blackhole(A, B, true);
    await geo.blackhole(A, C, true);
    try {
      const late = await atA.consume(Math.floor(all.size / 3));
      expect(late.length).toBeGreaterThan(0);
      await atA.commit();
      await atA.leave();
      await new Promise((r) => setTimeout(r, UNEXCHANGED_MS));
      // B still knows only the earlier position.
      const answer = await failoverWhen('g-cut', vectorsOf(early));
      expect(answer.partitions).toHaveLength(1);
      const atB = await Member.join(B, 'g-cut', 'fo-cut');
      const seenB = await atB.consume(all.size - early.length);
      seenB.push(...(await atB.poll(100)));
      await atB.leave();
      const c = counts([...early, ...late, ...seenB]);
      // Never a skip: every record at least once.
      expect([...all].filter((v) => (c.get(v) ?? 0) < 1)).toEqual([]);
      // Duplicates exactly the records consumed at A after the last exchanged commit, each twice.
      const dup = [...c].filter(([, n]) => n > 1);
      console.log(`[geo-failover] unexchanged commit: ${dup.length} duplicates at ${B}, bound ${late.length} (records consumed at ${A} after the last exchanged commit), ${all.size} records`);
      expect(dup.every(([, n]) => n === 2)).toBe(true);
      expect(dup.map(([v]) => v).sort()).toEqual(late.map((r) => r.value).sort());
      // What B delivered is the rest exactly once: nothing consumed before the published commit again.
      expect(counts(seenB).size).toBe(seenB.length);
      expect(seenB.filter((r) => early.some((e) => e.value === r.value))).toEqual([]);
    } finally {
      await geo.blackhole(A, B, false);
      await geo.blackhole(A, C, false);
    }
  }, 240_000);

  it('refusals: an unknown region, this region, a group never published, live members: nothing changes', async () => {
    await geo.createGlobal(A, 'fo-bad', 1);
    const all = await fill('fo-bad', 1, 3, 4);
    const atA = await Member.join(A, 'g-bad', 'fo-bad');
    const seenA = await atA.consume(3, 3);
    await atA.commit();
    await atA.leave();
    const first = await failoverWhen('g-bad', vectorsOf(seenA));
    const start = first.partitions[0]!.startOffset;

    const unknown = await geo.call(B, 'POST', '/v1/groups/g-bad/failover', { from: 'mars' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe('NOT_FOUND');
    expect((await geo.call(B, 'POST', '/v1/groups/g-bad/failover', { from: B })).status).toBe(400);
    expect((await geo.call(B, 'POST', '/v1/groups/g-never/failover', { from: A })).status).toBe(404);

    // A member at B consumes a little and commits; a failover now is refused and its commit stays.
    const atB = await Member.join(B, 'g-bad', 'fo-bad');
    const firstB = await atB.consume(2, 2);
    expect(firstB[0]!.offset).toBeGreaterThanOrEqual(start);
    await atB.commit();
    const busy = await geo.call(B, 'POST', '/v1/groups/g-bad/failover', { from: A });
    expect(busy.status).toBe(409);
    expect(busy.json.code).toBe('GROUP_NOT_EMPTY');
    await atB.leave();
    const again = await Member.join(B, 'g-bad', 'fo-bad');
    const next = await again.consume(1, 1);
    await again.leave();
    // It resumes after what the first member committed; a failover that had gone through would have started it over.
    expect(next[0]!.offset).toBeGreaterThan(firstB[firstB.length - 1]!.offset);
    expect(counts([...seenA, ...firstB, ...next]).size).toBe(seenA.length + firstB.length + next.length);
    expect(all.size).toBe(3 * 3 * 4);
  }, 240_000);
});
