// Proves quotas on a real 2-region `edgeq dev` (one broker per region, the link emulator between
// them): a global quota put in one region reaches the other's cell over the mesh; both regions
// pressing on it together are admitted no more than the stated bound (quota × (1 + (regions − 1) ×
// 0.1)) and each gets a share that follows its demand; a region cut off from the other keeps its
// last share (it does not grab the quota); and quotas survive a restart of the whole deployment
// (stored in each region's cell), enforced again after it.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { globalShareBound } from '../../ratelimit/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** The global quota (records/s for both regions together): low enough for 2 loaded cores to press on it. */
const Q = 100;
const TOPIC = 'q-orders';
/** Records per request, and concurrent requests per region, of the load. */
const BATCH = 5;
const WORKERS = 4;
/** A share moves at most 10% of the quota per second: room for it to move between phases. */
const PHASE_MS = 12_000;

let geo: Geo;
let A: string, B: string;
let dataDir: string;
let base: number;
let dev: ReturnType<typeof startDevRegions>;

async function start(): Promise<void> {
  dev = startDevRegions(dataDir, base, { regions: '2', brokersPerRegion: 1, wanLatencyMs: 10 });
  geo = new Geo(await dev.ready);
  [A, B] = geo.regions as [string, string];
  // The mesh forms and each region's entry reaches the other (what the shares are exchanged over).
  await geo.waitForExchanges(60_000, 'mesh');
}

beforeAll(async () => {
  base = await freeRange(DEV_REGIONS_PORT_SPAN);
  dataDir = await tempDir('edgeq-quotas-');
  await start();
  for (const r of geo.regions) expect((await geo.call(r, 'POST', '/v1/topics', { name: TOPIC, partitions: 2 })).status).toBe(201);
}, 200_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/**
 * Offers load at `region` for `ms`: `workers` requests of BATCH records in flight at once (closed
 * loop; bounded in time and in count). Returns the records acknowledged and the statuses seen.
 */
async function load(region: string, ms: number, workers = WORKERS): Promise<{ admitted: number; refused: number; other: number[] }> {
  const url = `${geo.gateway(region)}/v1/topics/${TOPIC}/records?acks=all`;
  const body = JSON.stringify({ records: Array.from({ length: BATCH }, (_, i) => ({ value: `v${i}` })) });
  const out = { admitted: 0, refused: 0, other: [] as number[] };
  const deadline = performance.now() + ms;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = 0; i < 100_000 && performance.now() < deadline; i++) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) }).catch(() => null);
        await res?.arrayBuffer();
        if (res?.status === 200) out.admitted += BATCH;
        else if (res?.status === 429) {
          out.refused += BATCH;
          // A client honouring Retry-After would wait; this one presses on (a little gap keeps the test process light).
          await new Promise((r) => setTimeout(r, 20));
        } else out.other.push(res?.status ?? -1);
      }
    }),
  );
  return out;
}

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
/** Runs the CLI; its exit code and output. */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { timeout: 60_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

async function regionShare(region: string): Promise<number> {
  const r = await geo.call(region, 'GET', `/v1/quotas/anonymous/${TOPIC}`);
  expect(r.status).toBe(200);
  return r.json.regionRecordsPerSec as number;
}

describe('quotas on a 2-region deployment', () => {
  it('a global quota reaches the other region, is shared within the bound by demand, and a cut-off region keeps its share', async () => {
    const put = await geo.call(A, 'PUT', `/v1/quotas/anonymous/${TOPIC}`, { recordsPerSec: Q, bytesPerSec: 1_000_000_000, scope: 'global' });
    expect(put.status).toBe(201);
    await waitFor(`the global quota in ${B}'s cell`, 30_000, async () => ((await geo.call(B, 'GET', `/v1/quotas/anonymous/${TOPIC}`)).status === 200 ? true : undefined), 200);

    // Both press on it together: what both admit together stays within the bound.
    const bound = globalShareBound(Q, 2);
    const [a1, b1] = await Promise.all([load(A, PHASE_MS), load(B, PHASE_MS)]);
    expect([...a1.other, ...b1.other]).toEqual([]);
    expect(a1.refused + b1.refused).toBeGreaterThan(0);
    // Each region's bucket starts full (a tenth of a second of its share) and requests in flight at
    // the edges of the phase add at most WORKERS × BATCH per region.
    const slack = 0.1 * Q + 2 * WORKERS * BATCH;
    expect(a1.admitted + b1.admitted).toBeLessThanOrEqual((bound * PHASE_MS) / 1000 + slack);
    // Both got a real part (the even split is Q/2 each; shares start from half).
    expect(a1.admitted).toBeGreaterThan((0.25 * Q * PHASE_MS) / 1000);
    expect(b1.admitted).toBeGreaterThan((0.25 * Q * PHASE_MS) / 1000);

    // Demand moves to A (B idle): A's share grows past half.
    await load(A, PHASE_MS);
    const shares = { a: await regionShare(A), b: await regionShare(B) };
    expect(shares.a).toBeGreaterThan(0.6 * Q);
    expect(shares.a + shares.b).toBeLessThanOrEqual(bound + 1);

    // Cut off: B now presses hard, but keeps (about) its small last share; A keeps its own.
    await geo.blackhole(A, B, true);
    try {
      const [a2, b2] = await Promise.all([load(A, PHASE_MS), load(B, PHASE_MS)]);
      const during = { a: await regionShare(A), b: await regionShare(B) };
      expect(Math.abs(during.b - shares.b)).toBeLessThanOrEqual(0.1 * Q + 1);
      expect(Math.abs(during.a - shares.a)).toBeLessThanOrEqual(0.1 * Q + 1);
      expect(a2.admitted + b2.admitted).toBeLessThanOrEqual((bound * PHASE_MS) / 1000 + slack);
      expect(b2.admitted).toBeLessThan(a2.admitted);
    } finally {
      await geo.blackhole(A, B, false);
    }
  }, 180_000);

  it('edgeq quotas sets, lists and deletes quotas in the cell (global ones through a gateway); bad values name the flag and change nothing', async () => {
    const brokers = ['--brokers', geo.ready.regions.find((r) => r.region === A)!.brokers];
    const set = await cli([...brokers, 'quotas', 'set', 'keeper', '*', '--records-per-sec', '7', '--bytes-per-sec', '7000']);
    expect(set.code, set.out).toBe(0);
    await waitFor('the CLI quota at the gateway', 10_000, async () => ((await geo.call(A, 'GET', '/v1/quotas/keeper/*')).status === 200 ? true : undefined), 200);
    const before = await cli([...brokers, 'quotas', 'list']);
    expect(before.code).toBe(0);
    for (const bad of [['--records-per-sec', '-1'], ['--records-per-sec', '1.5'], ['--records-per-sec', 'many'], ['--bytes-per-sec', '1e13']]) {
      const r = await cli([...brokers, 'quotas', 'set', 'keeper', '*', '--records-per-sec', '9', '--bytes-per-sec', '9', ...bad]);
      expect(r.code, r.out).not.toBe(0);
      expect(r.out).toContain('INVALID_ARGUMENT');
      expect(r.out).toContain(bad[0]);
    }
    const badName = await cli([...brokers, 'quotas', 'set', 'no spaces', '*', '--records-per-sec', '9', '--bytes-per-sec', '9']);
    expect(badName.out).toContain('tenant');
    expect((await cli([...brokers, 'quotas', 'list'])).out).toBe(before.out);
    // A global one goes through a gateway: the other region gets it; deleting it deletes it there too.
    const g = await cli([...brokers, 'quotas', 'set', 'glob', '*', '--records-per-sec', '50', '--bytes-per-sec', '5000', '--scope', 'global', '--gateway', geo.gateway(A)]);
    expect(g.code, g.out).toBe(0);
    await waitFor(`the global quota in ${B}`, 30_000, async () => ((await geo.call(B, 'GET', '/v1/quotas/glob/*')).status === 200 ? true : undefined), 200);
    const del = await cli([...brokers, 'quotas', 'delete', 'glob', '*', '--gateway', geo.gateway(A)]);
    expect(del.code, del.out).toBe(0);
    await waitFor(`the global quota gone from ${B}`, 30_000, async () => ((await geo.call(B, 'GET', '/v1/quotas/glob/*')).status === 404 ? true : undefined), 200);
    expect((await cli([...brokers, 'quotas', 'delete', 'glob', '*'])).code).not.toBe(0);
    expect((await cli([...brokers, 'quotas', 'delete', 'glob', '*', '--if-exists'])).code).toBe(0);
  }, 120_000);

  it('quotas survive a restart of the deployment, and are enforced after it', async () => {
    const before = { a: (await geo.call(A, 'GET', '/v1/quotas')).json.quotas, b: (await geo.call(B, 'GET', '/v1/quotas')).json.quotas };
    expect(before.a.map((q: { tenant: string; topic: string }) => `${q.tenant}/${q.topic}`).sort()).toEqual(['anonymous/q-orders', 'keeper/*']);
    dev.child.kill('SIGTERM');
    await dev.exited;
    await start();
    const strip = (qs: Record<string, unknown>[]) => qs.map(({ regionRecordsPerSec: _r, regionBytesPerSec: _b, ...q }) => q);
    expect(strip((await geo.call(A, 'GET', '/v1/quotas')).json.quotas)).toEqual(strip(before.a));
    expect(strip((await geo.call(B, 'GET', '/v1/quotas')).json.quotas)).toEqual(strip(before.b));
    // Enforced: the global quota's share is at most the quota, so 3 s of pressing admits at most its bound.
    const after = await load(A, 3_000, 2);
    expect(after.refused).toBeGreaterThan(0);
    expect(after.admitted).toBeLessThanOrEqual(globalShareBound(Q, 2) * 3 + 0.1 * Q + 2 * 2 * BATCH);
  }, 240_000);
});
