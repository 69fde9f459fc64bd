// Proves the exchange under broker crashes and retention, with real processes: a 2-region
// `edgeq dev` of two brokers per region (a partition has a follower to fail over to), 50 ms RTT.
// Two regions are all these need (an origin and an applying region; no third to relay through a
// cut, so the retention gap must be reported), and 8 processes start in CI where 12 did not.
// SIGKILL of a partition's leader in the applying region during the exchange, and separately in
// the origin region: nothing acknowledged is lost and nothing is applied twice. A tiny retention
// at the origin while a region is cut off: the gap is reported with the right origin offsets
// (in /v1/mesh and as edgeq_geo_gap_records_total), and the exchange goes on after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { exchangeViolations, Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const CONVERGE_MS = 90_000;
/** A killed broker comes back after this (its follower has taken over well before). */
const RESTART_DELAY_MS = 3_000;

let geo: Geo;
let A: string, B: string;

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-geo-faults-'), base, {
    regions: '2',
    brokersPerRegion: 2,
    wanLatencyMs: 25,
    // Retention runs every half second, so the gap test does not wait a minute for it.
    env: { EDGEQ_DEV_RESTART_DELAY_MS: String(RESTART_DELAY_MS), EDGEQ_BROKER__RETENTION_CHECK_INTERVAL_MS: '500' },
  });
  geo = new Geo(await dev.ready);
  [A, B] = geo.regions as [string, string];
  await geo.waitForExchanges(60_000);
}, 300_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** The pid of the leader of `topic`-0 in `region`. */
async function leaderPid(region: string, topic: string): Promise<{ name: string; pid: number }> {
  const t = await geo.call(region, 'GET', `/v1/topics/${topic}`);
  const leader = (t.json as { partitions: { leaderId: number }[] }).partitions[0]!.leaderId;
  const p = (await geo.processes()).find((x) => x.region === region && x.name === `${region}/broker-${leader}`);
  if (!p?.pid) throw new Error(`no process for ${region}'s broker ${leader}`);
  return { name: p.name, pid: p.pid };
}

/** Produces unique values at `region` for `ms`, retrying refusals; returns what was acknowledged. */
async function produceFor(region: string, topic: string, ms: number, tag: string, acked: Set<string>): Promise<void> {
  const until = Date.now() + ms;
  for (let i = 0; Date.now() < until && i < 10_000; i++) {
    const values = [`${tag}-${i}-a`, `${tag}-${i}-b`];
    const r = await geo.produce(region, topic, 0, values).catch(() => null);
    if (r?.status === 200) for (const v of values) acked.add(v);
    else await sleep(100);
  }
}

describe('the exchange under broker crashes and retention', () => {
  for (const where of ['applying', 'origin'] as const) {
    it(`SIGKILL of the partition leader in the ${where} region during the exchange: nothing lost, nothing doubled`, async () => {
      const topic = `geo-kill-${where}`;
      await geo.createGlobal(A, topic, 1, { 'min.insync.replicas': '1' });
      const acked = new Set<string>();
      const writing = produceFor(A, topic, 12_000, where, acked);
      // Once the exchange is moving, the victim: B's leader (it applies A's records) or A's (it serves them).
      await waitFor('records flowing to B', 30_000, async () => ((await geo.mesh(B))?.replication.find((x) => x.topic === topic && x.origin === A)?.appliedOriginOffset ?? -1) > 10 ? true : undefined, 100);
      const victim = await leaderPid(where === 'applying' ? B : A, topic);
      process.kill(victim.pid, 'SIGKILL');
      await writing;
      expect(acked.size).toBeGreaterThan(20);
      const all = await geo.converged(topic, 0, acked.size, CONVERGE_MS);
      expect(exchangeViolations(all, acked)).toEqual([]);
      for (const recs of all.values()) expect(recs).toHaveLength(acked.size);
      const after = (await geo.processes()).find((p) => p.name === victim.name);
      expect(after?.pid).not.toBe(victim.pid);
    }, 240_000);
  }

  it('a retention gap at the origin during a long cut is reported with its origin offsets, then the exchange goes on', async () => {
    const topic = 'geo-gap';
    // ~1 KiB segments, and at most ~1 KiB kept: old segments go within a retention check.
    await geo.createGlobal(A, topic, 1, { 'segment.bytes': '1024', 'retention.bytes': '1024', 'max.message.bytes': '1024' });
    await geo.blackhole(A, B, true);
    const acked: string[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const v = `gap-${i}`.padEnd(120, '.');
        if ((await geo.produce(A, topic, 0, [v])).status === 200) acked.push(v);
      }
      // Retention at A takes the oldest segments while B is cut off.
      await waitFor('A deletes old segments', 60_000, async () => ((await geo.call(A, 'GET', `/v1/topics/${topic}/partitions/0/records?offset=0&maxRecords=1`)).status === 416 ? true : undefined), 250);
    } finally {
      await geo.blackhole(A, B, false);
    }
    const gap = await waitFor('B reports the gap', 60_000, async () => (await geo.mesh(B))?.exchange.gaps.find((g) => g.topic === topic && g.origin === A), 250);
    expect(acked).toHaveLength(40);
    // Every one of A's 40 records was either applied at B or reported missing, never both and
    // never neither: the gap starts at 0 and ends right before the first record B applied.
    // (Retention goes on at A while B catches up, so A's log start is no fixed point to compare with.)
    const row = await waitFor('B caught up with what A still has', 30_000, async () => {
      const r = (await geo.mesh(B))?.replication.find((x) => x.topic === topic && x.origin === A);
      return r && r.appliedOriginOffset === 39 ? r : undefined;
    }, 250);
    const gaps = (await geo.mesh(B))!.exchange.gaps.filter((g) => g.topic === topic && g.origin === A);
    expect(gaps).toEqual([gap]);
    const applied = row.appliedRecords;
    expect(gap.firstMissingOriginOffset).toBe(0);
    expect(gap.records + applied).toBe(40);
    expect(gap.lastMissingOriginOffset).toBe(39 - applied);
    expect(gap.records).toBe(gap.lastMissingOriginOffset + 1);
    const metrics = await (await fetch(`${geo.gateway(B)}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`edgeq_geo_gap_records_total\\{origin="${A}",topic="${topic}",partition="0"\\} ${gap.records}`));
    // The exchange goes on past the gap: B gets what A still has, and new records.
    const after = await geo.produce(A, topic, 0, ['after-the-gap']);
    expect(after.status).toBe(200);
    const offset = after.json.offsets[0].offset as number;
    // (B's own tiny retention may already have trimmed its log: its cursor says what it applied.)
    await waitFor('B applies the record after the gap', 30_000, async () => (((await geo.mesh(B))?.replication.find((x) => x.topic === topic && x.origin === A)?.appliedOriginOffset ?? -1) >= offset ? true : undefined), 250);
    expect((await geo.mesh(B))!.exchange.gaps.filter((g) => g.topic === topic)).toHaveLength(1);
  }, 240_000);
});
