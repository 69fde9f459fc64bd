// Proves the checked workload against a fake gateway: each answer becomes the right outcome (200 acked, 429 and 503 of quota and limiter retried with the same id after Retry-After, 400 failed, timeout and lost connections indeterminate, refused failed), the open-loop rate holds within ±10%, in-flight requests, records and kept polls are bounded, readers follow each partition without going back, topics are created where they belong, and bad options are typed errors.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError, FakeClock } from '../../src/core/index.ts';
import { eventually, freePort } from '../../src/testing/index.ts';
import { FakeGateway } from './fake-gateway.ts';
import { CheckedWorkload, type CheckedWorkloadOptions } from './workload.ts';
import { PRODUCER_INFLIGHT_MAX } from './producer.ts';
import type { PollObservation } from '../types.ts';

const GW = 'http://r1.test';
const base = (gw: FakeGateway, clock?: FakeClock): CheckedWorkloadOptions => ({
  regions: [{ region: 'r1', gateway: GW }],
  globalTopic: 'g',
  localTopic: 'l',
  rate: 10,
  seed: 7,
  fetch: gw.fetch,
  ...(clock ? { clock } : {}),
});

/** Lets in-process requests finish: a Hono request takes a few turns of the event loop. */
async function flush(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
}

/** Advances the fake clock in steps, letting answers arrive in between. Bounded by `ms / stepMs`. */
async function advance(clock: FakeClock, ms: number, stepMs = 5): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    clock.advance(stepMs);
    await flush();
  }
}

const seqOf = (id: string) => Number(id.split('/').pop());

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('CheckedWorkload outcomes', () => {
  it('classifies 200, 429 and 503 retries, 400, a timeout, 504 and 503 NOT_ENOUGH_REPLICAS; onAck and stats agree', async () => {
    const clock = new FakeClock();
    const gw = new FakeGateway();
    gw.script = (value, _p, attempt) => {
      if (!value.includes('/g/')) return 'ok';
      switch (seqOf(value)) {
        case 1:
          return attempt <= 2 ? { status: 429, code: 'QUOTA_EXCEEDED', retryAfter: '1' } : 'ok';
        case 2:
          return attempt === 1 ? { status: 503, code: 'TEMPORARY_REDUCED_CAPACITY', retryAfter: '1' } : 'ok';
        case 3:
          return { status: 400, code: 'INVALID_ARGUMENT' };
        case 4:
          return 'hang';
        case 5:
          return { status: 504, code: 'GEO_TIMEOUT', write: true };
        case 6:
          return { status: 503, code: 'NOT_ENOUGH_REPLICAS' };
        default:
          return 'ok';
      }
    };
    const acks: [string, number][] = [];
    const w = new CheckedWorkload({ ...base(gw, clock), partitions: 8, durationMs: 700, requestTimeoutMs: 500, consume: false, onAck: (r, at) => acks.push([r, at]) });
    await w.ensureTopics();
    w.start();
    await advance(clock, 5_000);
    await w.stop();
    gw.releaseHung();
    const byId = new Map(w.produced().map((r) => [r.id, r]));
    expect(byId.size).toBe(14);
    const g = (seq: number) => byId.get(`r1/g/p0/${String(seq).padStart(6, '0')}`)!;
    expect(g(0).outcome.kind).toBe('acked');
    expect(g(1).outcome).toMatchObject({ kind: 'acked' });
    expect(g(1).retries).toBe(2);
    // Each retry waited its Retry-After (1 s) on the clock.
    expect(g(1).outcome.atMs - g(1).sentAtMs).toBeGreaterThanOrEqual(2_000);
    expect(gw.produces.filter((p) => p.value === g(1).id)).toHaveLength(3);
    expect(g(2)).toMatchObject({ retries: 1, outcome: { kind: 'acked' } });
    expect(g(3).outcome).toMatchObject({ kind: 'failed', code: 'INVALID_ARGUMENT' });
    expect(g(4).outcome).toMatchObject({ kind: 'indeterminate', code: 'TIMEOUT' });
    expect(g(4).outcome.atMs - g(4).sentAtMs).toBeGreaterThanOrEqual(500);
    expect(g(5).outcome).toMatchObject({ kind: 'indeterminate', code: 'GEO_TIMEOUT' });
    expect(g(6).outcome).toMatchObject({ kind: 'indeterminate', code: 'NOT_ENOUGH_REPLICAS' });
    // An acked record's offset is where the gateway put it, on the partition it names.
    const acked = g(0);
    expect(acked.outcome.kind === 'acked' && gw.topics.get('g')!.logs[acked.partition]![acked.outcome.offset]!.value).toBe(acked.id);
    const s = w.stats();
    expect(s).toMatchObject({ acked: 10, failed: 1, indeterminate: 3 });
    expect(s.regions['r1']).toMatchObject({ acked: 10, retries: 3, skipped: 0, inflight: 0 });
    expect(acks).toHaveLength(10);
    expect(acks.every(([r]) => r === 'r1')).toBe(true);
    expect(s.regions['r1']!.lastAckAtMs).toBe(Math.max(...acks.map(([, at]) => at)));
  });

  it('a retry wait cut by stop() is failed with the refusal code (nothing was written)', async () => {
    const clock = new FakeClock();
    const gw = new FakeGateway();
    gw.script = () => ({ status: 503, code: 'TEMPORARY_REDUCED_CAPACITY', retryAfter: '5' });
    const w = new CheckedWorkload({ ...base(gw, clock), rate: 1, durationMs: 1_000, consume: false });
    await w.ensureTopics();
    w.start();
    await advance(clock, 1_100);
    await w.stop();
    expect(w.produced().map((r) => r.outcome)).toEqual([expect.objectContaining({ kind: 'failed', code: 'TEMPORARY_REDUCED_CAPACITY' }), expect.objectContaining({ kind: 'failed', code: 'TEMPORARY_REDUCED_CAPACITY' })]);
  });

  it('a connection reset is indeterminate and a refused connection failed (real sockets)', async () => {
    const server = createServer((req) => req.socket.destroy());
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const resetUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const closedUrl = `http://127.0.0.1:${await freePort()}`;
    const w = new CheckedWorkload({ regions: [{ region: 'r1', gateway: resetUrl }, { region: 'r2', gateway: closedUrl }], globalTopic: 'g', localTopic: 'l', rate: 20, seed: 1, durationMs: 200, consume: false });
    w.start();
    // 4 records per topic per region: 16 in all.
    await eventually(() => w.produced().length === 16, 10_000, '16 outcomes');
    await w.stop();
    const r1 = w.produced().filter((r) => r.region === 'r1');
    const r2 = w.produced().filter((r) => r.region === 'r2');
    expect(r1.map((r) => r.outcome.kind === 'indeterminate' && r.outcome.code)).toEqual(Array(8).fill('CONNECTION_LOST'));
    expect(r2.map((r) => r.outcome.kind === 'failed' && r.outcome.code)).toEqual(Array(8).fill('CONNECTION_REFUSED'));
  });
});

describe('CheckedWorkload pacing and bounds', () => {
  it('keeps the rate on a fake clock: 100 records/s per topic, every second within ±10%', async () => {
    const clock = new FakeClock();
    const gw = new FakeGateway();
    const w = new CheckedWorkload({ ...base(gw, clock), rate: 100, durationMs: 5_000, consume: false });
    await w.ensureTopics();
    const t0 = clock.nowMs();
    w.start();
    await advance(clock, 5_500);
    await w.stop();
    for (const topic of ['g', 'l']) {
      const sent = w.produced().filter((r) => r.topic === topic);
      expect(sent).toHaveLength(500);
      for (let sec = 0; sec < 5; sec++) {
        const n = sent.filter((r) => r.sentAtMs >= t0 + sec * 1000 && r.sentAtMs < t0 + (sec + 1) * 1000).length;
        expect(n).toBeGreaterThanOrEqual(90);
        expect(n).toBeLessThanOrEqual(110);
      }
      // Round-robin: every partition gets its quarter.
      for (let p = 0; p < 4; p++) expect(sent.filter((r) => r.partition === p)).toHaveLength(125);
    }
    expect(w.stats().regions['r1']!.skipped).toBe(0);
  });

  it('keeps the rate on the real clock over 3 s within ±10%, plus the event-loop stalls it measured', async () => {
    const gw = new FakeGateway();
    const w = new CheckedWorkload({ ...base(gw), rate: 100, durationMs: 3_000, consume: false });
    await w.ensureTopics();
    // A loaded machine stalls the event loop; the schedule then skips what it cannot catch up
    // (by design: it does not queue). The bounds below are the pacer's arithmetic widened by the
    // stalls this process really had, measured while it ran.
    const stalls = monitorEventLoopDelay({ resolution: 10 });
    stalls.enable();
    w.start();
    const accounted = () => w.produced().length + w.stats().regions['r1']!.skipped;
    await eventually(() => accounted() === 600, 20_000, '600 records sent or skipped');
    await w.stop();
    stalls.disable();
    const stallMs = stalls.max / 1e6;
    expect(accounted()).toBe(600);
    for (const topic of ['g', 'l']) {
      const at = w.produced().filter((r) => r.topic === topic).map((r) => r.sentAtMs).sort((a, b) => a - b);
      // Record k is due at k × 10 ms: the last of 300 at 2.99 s. Never early (a burst fails this);
      // late by at most a tenth plus the longest stall (a pacer at a lower rate fails this).
      const span = at.at(-1)! - at[0]!;
      expect(span).toBeGreaterThanOrEqual(2_990 * 0.9);
      expect(span).toBeLessThanOrEqual(2_990 * 1.1 + stallMs);
      // Without stalls nothing is skipped: at least the slots outside the stalls were sent.
      expect(at.length).toBeGreaterThanOrEqual(300 - Math.ceil((3 * stallMs) / 10));
    }
  });

  it('keeps one request per partition and at most PRODUCER_INFLIGHT_MAX in flight; the rest are skipped, and stop() waits for the answers', async () => {
    const clock = new FakeClock();
    const gw = new FakeGateway();
    gw.script = (value) => (value.includes('/g/') ? 'hang' : 'ok');
    const w = new CheckedWorkload({ ...base(gw, clock), rate: 100, partitions: 32, durationMs: 1_000, requestTimeoutMs: 2_000, consume: false });
    await w.ensureTopics();
    w.start();
    await advance(clock, 1_000);
    expect(gw.hungCount).toBe(PRODUCER_INFLIGHT_MAX);
    const hung = gw.produces.filter((p) => p.value.includes('/g/'));
    expect(new Set(hung.map((p) => p.partition)).size).toBe(hung.length);
    expect(w.stats().regions['r1']).toMatchObject({ inflight: PRODUCER_INFLIGHT_MAX, skipped: 100 - PRODUCER_INFLIGHT_MAX });
    let stopped = false;
    const stopping = w.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
    await advance(clock, 2_100);
    await stopping;
    gw.releaseHung();
    const g = w.produced().filter((r) => r.topic === 'g');
    expect(g).toHaveLength(PRODUCER_INFLIGHT_MAX);
    expect(g.every((r) => r.outcome.kind === 'indeterminate')).toBe(true);
    // Records are bounded by rate × duration × regions × 2.
    expect(w.produced().length).toBeLessThanOrEqual(100 * 1 * 1 * 2);
  });

  it('readers follow every partition from 0 without going back; kept polls are bounded and the rest counted', async () => {
    const gw = new FakeGateway();
    const w = new CheckedWorkload({ ...base(gw), rate: 50, partitions: 2, durationMs: 500 });
    await w.ensureTopics();
    w.start();
    const total = () => [...gw.topics.values()].reduce((n, t) => n + t.logs.reduce((m, l) => m + l.length, 0), 0);
    // The schedule's 50 slots (rate 50 × 0.5 s over two topics) end as records or as skips: on a
    // loaded machine (CI) late ticks bunch up and a slot whose partitions are all busy is skipped,
    // so the count written is whatever was not skipped, and every one of those must be read.
    const skipped = () => w.stats().regions['r1']!.skipped;
    await eventually(() => w.produced().length + skipped() === 50 && total() === w.produced().length, 10_000, 'every slot written or skipped');
    const written = w.produced().length;
    expect(written).toBeGreaterThan(0);
    const seen = () => new Set(w.polls().flatMap((p) => p.offsets.map((o) => `${p.topic}/${p.partition}/${o}`)));
    await eventually(() => seen().size === written, 10_000, 'every record polled');
    await w.stop();
    const readers = new Map<string, PollObservation[]>();
    for (const p of w.polls()) {
      const k = `${p.topic}/${p.partition}`;
      readers.set(k, [...(readers.get(k) ?? []), p]);
    }
    expect(readers.size).toBe(4);
    for (const polls of readers.values()) {
      expect(polls[0]!.fromOffset).toBe(0);
      for (let i = 1; i < polls.length; i++) expect(polls[i]!.fromOffset).toBe(polls[i - 1]!.fromOffset + polls[i - 1]!.offsets.length);
    }

    const gw2 = new FakeGateway();
    const small = new CheckedWorkload({ ...base(gw2), rate: 20, partitions: 1, durationMs: 500, pollsKeptMax: 5 });
    await small.ensureTopics();
    small.start();
    await eventually(() => small.stats().pollsDropped > 0, 10_000, 'polls dropped');
    await small.stop();
    expect(small.polls()).toHaveLength(5);
    expect(small.stats().polls).toBe(5);
  });
});

describe('CheckedWorkload topics and options', () => {
  it('creates the global topic through one region and waits for it everywhere; the local one in each region', async () => {
    const g1 = new FakeGateway('r1');
    const g2 = new FakeGateway('r2');
    const posts: string[] = [];
    const fetch = async (url: string, init: RequestInit) => {
      const gw = url.startsWith('http://r1.test') ? g1 : g2;
      if (init.method === 'POST' && url.endsWith('/v1/topics')) posts.push(`${gw.region}:${JSON.parse(String(init.body)).scope}`);
      const res = await gw.app.request(url, init);
      // The mesh, in short: a global topic created in r1 reaches r2 a little later.
      if (gw === g1 && res.status === 201 && JSON.parse(String(init.body)).scope === 'global') setTimeout(() => g2.topics.set('g', { scope: 'global', logs: [[], [], []] }), 300);
      return res;
    };
    const w = new CheckedWorkload({ regions: [{ region: 'r1', gateway: 'http://r1.test' }, { region: 'r2', gateway: 'http://r2.test/' }], globalTopic: 'g', localTopic: 'l', partitions: 3, rate: 1, seed: 1, fetch });
    const topics = await w.ensureTopics();
    expect(topics).toEqual([{ name: 'g', scope: 'global', partitions: 3 }, { name: 'l', scope: 'local', partitions: 3 }]);
    expect(posts).toEqual(['r1:global', 'r1:local', 'r2:local']);
    expect(g2.topics.get('g')?.scope).toBe('global');
    // Again: existing topics of the right scope are kept.
    await expect(w.ensureTopics()).resolves.toHaveLength(2);

    const g3 = new FakeGateway('r1');
    g3.topics.set('g', { scope: 'local', logs: [[]] });
    const clash = new CheckedWorkload({ ...base(g3), rate: 1 });
    await expect(clash.ensureTopics()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { field: 'globalTopic' } });
  });

  it('deletes the global topic through one region and the local one in each; gone already is fine, a refusal is reported', async () => {
    const g1 = new FakeGateway('r1');
    const g2 = new FakeGateway('r2');
    const deletes: string[] = [];
    const fetch = async (url: string, init: RequestInit) => {
      const gw = url.startsWith('http://r1.test') ? g1 : g2;
      if (init.method === 'DELETE') deletes.push(`${gw.region}:${url.split('/').pop()}`);
      return gw.app.request(url, init);
    };
    const w = new CheckedWorkload({ regions: [{ region: 'r1', gateway: 'http://r1.test' }, { region: 'r2', gateway: 'http://r2.test' }], globalTopic: 'g', localTopic: 'l', partitions: 2, rate: 1, seed: 1, fetch });
    for (const gw of [g1, g2]) {
      gw.topics.set('g', { scope: 'global', logs: [[], []] });
      gw.topics.set('l', { scope: 'local', logs: [[], []] });
    }
    await w.ensureTopics();
    // r2's global topic is the mesh's to delete; here it is gone already, as after the mesh did.
    g2.topics.delete('g');
    expect(await w.deleteTopics()).toEqual([]);
    expect(deletes.sort()).toEqual(['r1:g', 'r1:l', 'r2:l']);
    expect([...g1.topics.keys(), ...g2.topics.keys()]).toEqual([]);
    // Gone already (404) counts as deleted; a refusal is reported, not thrown.
    g2.deleteAnswer = 503;
    expect(await w.deleteTopics()).toEqual(['l in r2: HTTP 503 UNAVAILABLE']);
  });

  it('refuses bad options with INVALID_ARGUMENT naming the field', () => {
    const gw = new FakeGateway();
    const cases: [Partial<CheckedWorkloadOptions>, string][] = [
      [{ regions: [] }, 'regions'],
      [{ regions: [{ region: 'r1', gateway: GW }, { region: 'r1', gateway: GW }] }, 'regions.region'],
      [{ regions: [{ region: 'R 1', gateway: GW }] }, 'regions.region'],
      [{ regions: [{ region: 'r1', gateway: 'ftp://x' }] }, 'regions.gateway'],
      [{ globalTopic: '' }, 'globalTopic'],
      [{ localTopic: 'g' }, 'localTopic'],
      [{ rate: 0 }, 'rate'],
      [{ rate: Number.NaN }, 'rate'],
      [{ seed: 1.5 }, 'seed'],
      [{ partitions: 0 }, 'partitions'],
      [{ durationMs: -1 }, 'durationMs'],
      [{ rate: 5_000, durationMs: 3_600_000 }, 'durationMs'],
      [{ requestTimeoutMs: 0 }, 'requestTimeoutMs'],
      [{ pollsKeptMax: -1 }, 'pollsKeptMax'],
    ];
    for (const [bad, field] of cases) {
      let err: unknown = null;
      try {
        new CheckedWorkload({ ...base(gw), ...bad });
      } catch (e) {
        err = e;
      }
      expect(err, field).toBeInstanceOf(EdgeqError);
      expect((err as EdgeqError).code).toBe('INVALID_ARGUMENT');
      expect((err as EdgeqError).details['field'], JSON.stringify(bad)).toBe(field);
    }
    const w = new CheckedWorkload({ ...base(gw), consume: false });
    w.start();
    expect(() => w.start()).toThrow(EdgeqError);
    return w.stop();
  });
});
