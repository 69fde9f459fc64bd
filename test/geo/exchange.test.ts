// Proves the exchange of global topics with real processes: a 3-region `edgeq dev` (one broker
// per region, 25 ms one way on every emulated link: 50 ms RTT). All three regions produce to a
// 3-partition global topic at once and every region ends with every acknowledged record exactly
// once, each origin's records in the same order everywhere; a cut between two regions alone is
// bridged by the third (relay); a 30 s cut heals and converges; a region whose every process is
// killed catches up from its cursors and its own unexchanged writes still reach the others; the
// bad inputs of global topics are refused and change nothing.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, testSeed, waitFor } from '../../src/testing/index.ts';
import { seededRandom } from '../../src/core/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { exchangeViolations, Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** Convergence bound after the writes stop: fetch waits 0.5 s, relay failover ≤ 5 s fetch timeout, catalogue 2 s; room for 2 loaded cores. */
const CONVERGE_MS = 60_000;
/** How long a killed region stays down (the supervisor's restart delay). */
const RESTART_DELAY_MS = 8_000;

let geo: Geo;
let A: string, B: string, C: string;
const rand = seededRandom(testSeed('geo-exchange'));

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-geo-'), base, { regions: '3', brokersPerRegion: 1, wanLatencyMs: 25, env: { EDGEQ_DEV_RESTART_DELAY_MS: String(RESTART_DELAY_MS) } });
  geo = new Geo(await dev.ready);
  [A, B, C] = geo.regions as [string, string, string];
  // The mesh forms and each region's entry (with its broker addresses) reaches the others.
  await geo.waitForExchanges(60_000);
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
/** Runs the CLI; its exit code and output. */
async function cli(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { timeout: 90_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Produces `rounds` requests of `batch` unique values per region and partition, all regions at once; returns the acknowledged values per partition. */
async function produceEverywhere(topic: string, partitions: number, rounds: number, batch: number, tag: string, regions = geo.regions): Promise<Map<number, Set<string>>> {
  const acked = new Map<number, Set<string>>(Array.from({ length: partitions }, (_, p) => [p, new Set<string>()]));
  await Promise.all(
    regions.map(async (region) => {
      for (let i = 0; i < rounds; i++) {
        const p = Math.floor(rand() * partitions);
        const values = Array.from({ length: batch }, (_, j) => `${tag}-${region}-${i}-${j}`);
        const r = await geo.produce(region, topic, p, values);
        if (r.status === 200) for (const v of values) acked.get(p)!.add(v);
      }
    }),
  );
  return acked;
}

async function checkConverged(topic: string, acked: Map<number, Set<string>>, ms = CONVERGE_MS): Promise<void> {
  for (const [p, values] of acked) {
    const all = await geo.converged(topic, p, values.size, ms);
    expect(exchangeViolations(all, values)).toEqual([]);
    for (const recs of all.values()) expect(recs).toHaveLength(values.size);
  }
}

describe('global topics between three regions', () => {
  it('all regions produce at once: every acknowledged record everywhere exactly once, in origin order', async () => {
    await geo.createGlobal(A, 'geo-all', 3);
    const acked = await produceEverywhere('geo-all', 3, 30, 5, 'all');
    expect([...acked.values()].reduce((n, s) => n + s.size, 0)).toBe(3 * 30 * 5);
    await checkConverged('geo-all', acked);
    // Every region's view shows each other origin applied up to its head, nothing behind.
    for (const r of geo.regions) {
      const m = await waitFor(`${r} caught up`, 20_000, async () => {
        const v = await geo.mesh(r);
        return v && v.replication.filter((x) => x.topic === 'geo-all').length === 6 && v.replication.every((x) => x.topic !== 'geo-all' || x.lagRecords === 0) ? v : undefined;
      });
      expect(m.replication.filter((x) => x.topic === 'geo-all').map((x) => x.origin).sort()).toEqual(geo.regions.filter((x) => x !== r).flatMap((x) => [x, x, x]).sort());
    }
  }, 180_000);

  it('relay: with A<->C cut, C still receives A\'s records through B, exactly once', async () => {
    await geo.createGlobal(B, 'geo-relay', 1);
    await geo.blackhole(A, C, true);
    try {
      const acked = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const values = [`relay-${i}`];
        if ((await geo.produce(A, 'geo-relay', 0, values)).status === 200) acked.add(values[0]!);
      }
      const all = await geo.converged('geo-relay', 0, acked.size, CONVERGE_MS);
      expect(exchangeViolations(all, acked)).toEqual([]);
      const row = (await geo.mesh(C))!.replication.find((x) => x.topic === 'geo-relay' && x.origin === A)!;
      expect(row.source).toBe(B);
      expect(row.appliedOriginOffset).toBe(all.get(A)!.at(-1)!.originOffset);
    } finally {
      await geo.blackhole(A, C, false);
    }
  }, 180_000);

  it('a 30 s cut between A and B while all produce: converges after the heal', async () => {
    await geo.createGlobal(C, 'geo-cut', 3);
    await geo.blackhole(A, B, true);
    const cutAt = Date.now();
    let acked: Map<number, Set<string>>;
    try {
      acked = await produceEverywhere('geo-cut', 3, 20, 5, 'cut');
      await sleep(Math.max(0, 30_000 - (Date.now() - cutAt)));
    } finally {
      await geo.blackhole(A, B, false);
    }
    const healedAt = Date.now();
    await checkConverged('geo-cut', acked);
    const total = [...acked.values()].reduce((n, s) => n + s.size, 0);
    console.log(`[geo-exchange] after a 30 s A<->B cut: ${total} records converged in every region ${Date.now() - healedAt} ms after the heal`);
  }, 240_000);

  it('every process of C killed: C catches up from its cursors, and its unexchanged writes reach the others', async () => {
    await geo.createGlobal(A, 'geo-down', 1);
    const acked = new Set<string>();
    // C's own writes that cannot leave it: both its links cut, then C killed.
    await geo.blackhole(C, A, true);
    await geo.blackhole(C, B, true);
    for (let i = 0; i < 10; i++) if ((await geo.produce(C, 'geo-down', 0, [`down-c-${i}`])).status === 200) acked.add(`down-c-${i}`);
    expect(acked.size).toBe(10);
    const victims = (await geo.processes()).filter((p) => p.region === C && p.pid);
    expect(victims.length).toBeGreaterThanOrEqual(3);
    for (const p of victims) process.kill(p.pid!, 'SIGKILL');
    await geo.blackhole(C, A, false);
    await geo.blackhole(C, B, false);
    // While C is down (the supervisor waits RESTART_DELAY_MS), A and B go on.
    for (let i = 0; i < 20; i++) {
      const region = i % 2 === 0 ? A : B;
      const v = `down-${region}-${i}`;
      if ((await geo.produce(region, 'geo-down', 0, [v])).status === 200) acked.add(v);
    }
    expect(acked.size).toBe(30);
    const all = await geo.converged('geo-down', 0, acked.size, CONVERGE_MS + RESTART_DELAY_MS);
    expect(exchangeViolations(all, acked)).toEqual([]);
    const restarted = (await geo.processes()).filter((p) => p.region === C);
    for (const p of restarted) expect(victims.find((v) => v.name === p.name)?.pid).not.toBe(p.pid);
  }, 240_000);

  it('bad input: scope, scope changes, acks=geo on a local topic, regions out of range — refused, nothing written', async () => {
    const badScope = await geo.call(A, 'POST', '/v1/topics', { name: 'geo-bad', partitions: 1, scope: 'planet' });
    expect(badScope.status).toBe(400);
    expect(badScope.json.code).toBe('INVALID_ARGUMENT');
    expect((await geo.call(A, 'GET', '/v1/topics/geo-bad')).status).toBe(404);

    // The CLI: a bad scope is refused before anything is asked; a global topic goes through a gateway.
    const badCli = await cli(['topics', 'create', 'geo-bad', '--scope', 'planet', '--gateway', geo.gateway(A)]);
    expect(badCli.code).toBe(2);
    expect(badCli.out).toMatch(/INVALID_ARGUMENT.*--scope/);
    const made = await cli(['topics', 'create', 'geo-cli', '--partitions', '2', '--scope', 'global', '--gateway', geo.gateway(A)]);
    expect(made.code, made.out).toBe(0);
    await waitFor('geo-cli in every region', 30_000, async () => ((await Promise.all(geo.regions.map((r) => geo.call(r, 'GET', '/v1/topics/geo-cli')))).every((x) => x.status === 200 && x.json.config.scope === 'global') ? true : undefined), 250);

    await geo.call(A, 'POST', '/v1/topics', { name: 'geo-local', partitions: 1 });
    // The same name again as global: a scope cannot change.
    const change = await geo.call(A, 'POST', '/v1/topics', { name: 'geo-local', partitions: 1, scope: 'global' });
    expect(change.status).toBe(409);
    const local = await geo.produce(A, 'geo-local', 0, ['x'], '?acks=geo');
    expect(local.status).toBe(400);
    expect(local.json.detail).toMatch(/local/);
    await geo.createGlobal(A, 'geo-acks', 1);
    for (const q of ['?acks=geo&regions=0', '?acks=geo&regions=3', '?acks=geo&regions=x', '?acks=planet']) {
      const r = await geo.produce(A, 'geo-acks', 0, ['never'], q);
      expect(r.status, q).toBe(400);
      expect(r.json.code, q).toBe('INVALID_ARGUMENT');
    }
    for (const name of ['geo-local', 'geo-acks']) {
      const r = await geo.call(A, 'GET', `/v1/topics/${name}/partitions/0/records?offset=0`);
      expect(r.json.records, name).toEqual([]);
    }
    // A good acks=geo: answered once both other regions applied it.
    const ok = await geo.produce(A, 'geo-acks', 0, ['once'], '?acks=geo&regions=2');
    expect(ok.status).toBe(200);
    for (const r of [B, C]) expect((await geo.readAll(r, 'geo-acks', 0)).map((x) => x.value)).toEqual(['once']);
    // With C cut off, regions=2 cannot be met: GEO_TIMEOUT, and the record is still exchanged after the heal.
    await geo.blackhole(A, C, true);
    await geo.blackhole(B, C, true);
    try {
      const t = await geo.produce(A, 'geo-acks', 0, ['late'], '?acks=geo&regions=2&timeoutMs=2000');
      expect(t.status).toBe(504);
      expect(t.json.code).toBe('GEO_TIMEOUT');
      expect(t.json.detail).toMatch(/durable/);
    } finally {
      await geo.blackhole(A, C, false);
      await geo.blackhole(B, C, false);
    }
    await geo.converged('geo-acks', 0, 2, CONVERGE_MS);
  }, 180_000);
});
