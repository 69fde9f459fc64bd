// Proves failover awareness with real processes (issue 15): two regions of `edgeq dev` (one broker
// each, the link emulator between them), a 1 s ingress step. Region A takes a steady load and
// publishes its forecast in the mesh's forecast slot; region B, idle, sees it in /v1/mesh and plans
// one gateway. When the link between them is cut and B's mesh marks A dead, B adds A's forecast to
// its own plan (more gateways, a higher limiter level); when the link heals and A is alive again,
// B's plan is its own again.
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** Records/s region A takes, and what one gateway serves in the plan: A alone needs 4 gateways. */
const A_PER_SEC = 200;
const PER_GATEWAY = 50;
/** Bound on the mesh carrying a forecast, marking a region dead or alive again (a loaded 2-core machine). */
const MESH_MS = 60_000;
/** Bound on the whole load loop. */
const LOAD_MS_MAX = 240_000;

interface Capacity {
  plan: { t: number; instances: { broker: number; gateway: number }; ceilingPerSec: number | null }[];
}

const gatewaysPlanned = (c: Capacity) => Math.max(...c.plan.map((p) => p.instances.gateway));

describe('failover awareness (2 regions, 1 s step)', () => {
  it('a region that sees another die adds its forecast to its own plan, and drops it when it is back', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const env = { EDGEQ_INGRESS_STEP_MS: '1000', EDGEQ_PLANNER_SEASON_STEPS: '20', EDGEQ_PLANNER_LEAD_MS: '2000', EDGEQ_PLANNER_PER_GATEWAY: String(PER_GATEWAY) };
    const dev = startDevRegions(await tempDir('edgeq-prescale-failover-'), base, { regions: '2', brokersPerRegion: 1, env });
    const geo = new Geo(await dev.ready);
    const [A, B] = geo.regions as [string, string];
    expect((await geo.call(A, 'POST', '/v1/topics', { name: 'load', partitions: 1, replicationFactor: 1 })).status).toBe(201);

    // A steady load on A, 10 requests a second, until the test is done (bounded in time too).
    let stop = false;
    const deadline = Date.now() + LOAD_MS_MAX;
    const loading = (async () => {
      let n = 0;
      while (!stop && Date.now() < deadline) {
        const records = Array.from({ length: A_PER_SEC / 10 }, (_, k) => ({ value: `a${n}-${k}` }));
        n++;
        void geo.call(A, 'POST', '/v1/topics/load/records', { records }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      // B sees A's forecast in the mesh, and plans for itself alone: one gateway.
      await waitFor('A\'s forecast in B\'s mesh view', MESH_MS, async () => {
        const m = await geo.call(B, 'GET', '/v1/mesh');
        const a = (m.json?.regions as { region: string; forecast: { kind: string; p50?: number[] } }[] | undefined)?.find((r) => r.region === A);
        return a?.forecast.kind === 'forecast' && Math.max(...(a.forecast.p50 ?? [0])) >= A_PER_SEC * 0.5 ? true : undefined;
      }, 250);
      const own = (await geo.call(B, 'GET', '/v1/capacity')).json as Capacity;
      expect(own.plan.length).toBeGreaterThan(0);
      expect(gatewaysPlanned(own)).toBe(1);

      // Cut the link: B's mesh marks A dead and B plans for A's traffic too.
      await geo.blackhole(A, B, true);
      const taken = await waitFor('B to plan for A\'s traffic', MESH_MS, async () => {
        const c = (await geo.call(B, 'GET', '/v1/capacity')).json as Capacity;
        return gatewaysPlanned(c) >= Math.ceil((A_PER_SEC * 0.5) / PER_GATEWAY) ? c : undefined;
      }, 250);
      // The limiter level rose with the gateways: both come from the same P90 (own + A's share), so
      // g ≥ 2 gateways of PER_GATEWAY means a ceiling over (g − 1) × PER_GATEWAY, above B's idle level
      // before the cut. (How far over A_PER_SEC / 2 depends on the rate A's loaded gateway reached.)
      const ceiling = (c: Capacity) => Math.max(...c.plan.map((p) => p.ceilingPerSec ?? 0));
      expect(ceiling(taken)).toBeGreaterThan((gatewaysPlanned(taken) - 1) * PER_GATEWAY);
      expect(ceiling(taken)).toBeGreaterThan(ceiling(own));
      const members = (await geo.call(B, 'GET', '/v1/mesh')).json.members as { region: string; state: string }[];
      expect(members.filter((m) => m.region === A).every((m) => m.state === 'dead' || m.state === 'left')).toBe(true);
      const metrics = await (await fetch(`${geo.gateway(B)}/metrics`)).text();
      expect(Number(/^edgeq_planner_desired_instances\{component="gateway"\} (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(2);

      // Heal it: A is alive again in B's view, and B's plan is its own again.
      await geo.blackhole(A, B, false);
      await waitFor('B to plan for itself alone again', MESH_MS, async () => {
        const c = (await geo.call(B, 'GET', '/v1/capacity')).json as Capacity;
        return gatewaysPlanned(c) === 1 ? true : undefined;
      }, 250);
    } finally {
      stop = true;
      await loading;
    }
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  }, 300_000);
});
