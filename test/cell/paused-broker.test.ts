// Proves with real processes (a cell of 3 brokers and a gateway) that a SIGSTOPped broker, which accepts connections and never answers, does not stall the gateway: a freshly started gateway whose first bootstrap broker is frozen answers reads and acks=1 produces within a bound set by the client's metadata deadlines, /readyz says not ready while a frozen broker still leads a partition and ready once it answers again, and a read with both followers of its partition frozen answers the records (or a retriable 503), never an empty 200 below the high watermark.
import { afterAll, describe, expect, it } from 'vitest';
import { CLUSTER_DEFAULTS, CONNECTION_DEFAULTS, createClient } from '../../src/client/index.ts';
import { READ_SERVE_MS_MAX, READYZ_TIMEOUT_MS } from '../../src/gateway/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { eventually } from '../helpers/cell.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

/**
 * Long enough that no lease runs out while a broker is frozen (a lease is renewed every TTL/4 and
 * lost at most TTL - TTL/4 = 45 s after the pause; the longest pause here is well under that): a
 * frozen leader stays the named leader, which is the case a client must cope with.
 */
const LEASE_TTL_MS = 60_000;
/**
 * Slack for a 2-core machine shared with other test runs (process scheduling, GC, first calls
 * through tsx-compiled code). Measured unloaded: the first read through a fresh gateway ~0.6 s.
 */
const LOADED_MACHINE_MS = 5_000;
/**
 * One request through a fresh gateway bootstraps at most two clients (the admin's, then the
 * reading consumer's or the producer's), and each reaches a live broker after at most one hedge
 * delay per frozen broker ahead of it in the bootstrap list. Without hedging, each frozen broker
 * cost a whole connect timeout (10 s) per bootstrap.
 */
function answerBoundMs(frozenAhead: number): number {
  return 2 * frozenAhead * CLUSTER_DEFAULTS.metadataHedgeDelayMs + LOADED_MACHINE_MS;
}
/** A read of a partition whose leader is frozen is refused once the read's time (waitMs 0 + READ_SERVE_MS_MAX) is spent. */
const UNSERVED_BOUND_MS = READ_SERVE_MS_MAX + LOADED_MACHINE_MS;
/** A /readyz check gives up on silent leaders after READYZ_TIMEOUT_MS. */
const READYZ_BOUND_MS = READYZ_TIMEOUT_MS + LOADED_MACHINE_MS;
/** A request the test waits for at most (so a stalled gateway fails the test rather than hanging it). */
const HTTP_TIMEOUT_MS = 90_000;

interface Answer {
  status: number;
  body: { records?: { offset: number; value: string }[]; highWatermark?: number; code?: string; retriable?: boolean };
  retryAfter: string | null;
  elapsedMs: number;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  const body = (await res.json()) as Answer['body'];
  return { status: res.status, body, retryAfter: res.headers.get('retry-after'), elapsedMs: performance.now() - started };
}

const produce = (gw: string, partition: number, value: string) =>
  call(`${gw}/v1/topics/frozen/records?acks=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value, partition }] }) });
const read = (gw: string, partition: number) => call(`${gw}/v1/topics/frozen/partitions/${partition}/records?offset=0&waitMs=0`);

/** Starts a gateway process with these bootstrap brokers, in this order. */
function startGateway(brokers: string[]): Promise<EdgeqProcess> {
  return spawnListening('gateway', ['gateway', '--brokers', brokers.join(','), '--host', '127.0.0.1', '--port', '0', '--no-auth']);
}

/** A read is served (200 with the records) or refused retriably (503, retriable, Retry-After); never an empty 200 below the high watermark. */
function expectServedOrRetriable(a: Answer, expected: string[]): void {
  if (a.status === 200) {
    expect({ records: a.body.records?.map((r) => r.value), highWatermark: a.body.highWatermark }).toEqual({ records: expected, highWatermark: expected.length });
  } else {
    expect({ status: a.status, retriable: a.body.retriable, retryAfter: a.retryAfter !== null }).toEqual({ status: 503, retriable: true, retryAfter: true });
  }
}

describe('a paused broker', () => {
  it('does not stall a fresh gateway, and /readyz follows whether the cell answers', async () => {
    // Each bound is below what one frozen broker cost before (the 10 s connect timeout).
    for (const bound of [answerBoundMs(2), UNSERVED_BOUND_MS, READYZ_BOUND_MS]) expect(bound).toBeLessThan(CONNECTION_DEFAULTS.connectTimeoutMs);
    const cell = await new ProcessCell({ leaseTtlMs: LEASE_TTL_MS }).start();
    const client = createClient({ brokers: cell.addresses() });
    const gateways: EdgeqProcess[] = [];
    const paused = new Set<number>();
    const pause = (id: number) => {
      paused.add(id);
      cell.pause(id);
    };
    const resumeAll = () => {
      for (const id of paused) cell.resume(id);
      paused.clear();
    };
    const address = (id: number) => `127.0.0.1:${cell.portOf(id)}`;
    try {
      // Three partitions over three brokers: the cell spreads the leaders, one each.
      await client.admin().createTopics([{ name: 'frozen', partitions: 3, replicationFactor: 3 }]);
      const producer = client.producer({ acks: 'all', lingerMs: 0 });
      for (let p = 0; p < 3; p++) await producer.send('frozen', [{ value: `p${p}-a` }, { value: `p${p}-b` }], { partition: p });
      await producer.close();
      const [described] = await client.admin().describeTopics(['frozen']);
      const leaders = described!.partitions.map((p) => p.leaderId);
      const served = 0;
      const live = leaders[served]!;
      const frozenLeads = described!.partitions.find((p) => p.leaderId !== live);
      expect(frozenLeads, `leaders ${leaders.join(',')} are not spread`).toBeDefined();
      const frozen = frozenLeads!.leaderId;
      const others = [1, 2, 3].filter((id) => id !== frozen);
      // The test's own client is done with the cell until the brokers are resumed.
      await client.close();

      // 1. The first bootstrap broker is frozen (and leads a partition); the gateway starts after.
      pause(frozen);
      const gw1 = await startGateway([address(frozen), ...others.map(address)]);
      gateways.push(gw1);
      const g1 = `http://127.0.0.1:${gw1.port}`;
      const bound1 = answerBoundMs(1);

      const readAnswer = await read(g1, served);
      expect(readAnswer.status).toBe(200);
      expect(readAnswer.body.records?.map((r) => r.value)).toEqual([`p${served}-a`, `p${served}-b`]);
      expect(readAnswer.elapsedMs).toBeLessThan(bound1);

      const produced = await produce(g1, served, 'while-frozen');
      expect(produced.status).toBe(200);
      expect(produced.elapsedMs).toBeLessThan(bound1);

      // A partition led by the frozen broker cannot be served: a retriable refusal, in bounded time.
      const unserved = await read(g1, frozenLeads!.partition);
      expectServedOrRetriable(unserved, [`p${frozenLeads!.partition}-a`, `p${frozenLeads!.partition}-b`]);
      expect(unserved.status).toBe(503);
      expect(unserved.elapsedMs).toBeLessThan(UNSERVED_BOUND_MS);

      // Not ready while a broker that leads a partition does not answer…
      const notReady = await call(`${g1}/readyz`);
      expect({ status: notReady.status, retriable: notReady.body.retriable }).toEqual({ status: 503, retriable: true });
      expect(notReady.elapsedMs).toBeLessThan(READYZ_BOUND_MS);
      // …and ready again once it answers.
      resumeAll();
      // A check already under way may still time out; the next one, begun after the resume, passes.
      await eventually(async () => (await call(`${g1}/readyz`)).status === 200, 2 * READYZ_BOUND_MS, 'the gateway ready again');

      // 2. Both followers of a partition frozen; a fresh gateway bootstraps through them first.
      const followers = [1, 2, 3].filter((id) => id !== live);
      for (const id of followers) pause(id);
      const gw2 = await startGateway([...followers.map(address), address(live)]);
      gateways.push(gw2);
      const g2 = `http://127.0.0.1:${gw2.port}`;
      const bound2 = answerBoundMs(2);
      const started = performance.now();
      let last: Answer;
      do {
        last = await read(g2, served);
        expectServedOrRetriable(last, [`p${served}-a`, `p${served}-b`, 'while-frozen']);
      } while (last.status !== 200 && performance.now() - started < bound2);
      expect(last.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(bound2);
    } finally {
      resumeAll();
      await Promise.all(gateways.map((g) => g.kill('SIGTERM')));
      await client.close();
      await cell.close();
    }
  }, 240_000);
});
