// Proves the dashboard's data side on a fake clock: one point per region per second, this region's
// from its planner and limiter and every other region's from its mesh entry; the forecast kept
// under the actual is the one that stood before the second (a forecast changed afterwards does
// not rewrite it); the fine ring holds an hour and the coarse one minute means; history answers
// each allowed range and refuses any other with a typed 400 naming the parameter; the stream sends
// a snapshot a second to every listener and stops asking the cell when no one listens; a cell that
// does not answer shows as an error in its panel while the snapshot still goes out; the page's
// bundle is within its weight budget.
import { gzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import type { CapacityReport } from '../../forecast/planner/types.ts';
import type { MeshView } from '../gateway/mesh.ts';
import { onGatewayError } from '../gateway/errors.ts';
import { auth, type AuthVariables } from '../gateway/auth.ts';
import { buildDashboardBundle } from './assets.ts';
import { DashboardFeed, type DashboardSnapshot } from './feed.ts';
import { DASHBOARD_FINE_POINTS_MAX } from './limits.ts';
import { registerDashboardRoutes } from './routes.ts';
import { DashboardSampler } from './sampler.ts';

const T0 = 1_700_000_000_000; // a whole second

function report(nowMs: number, ingress: number, p50: (t: number) => number): CapacityReport {
  const step = 1_000;
  const first = Math.floor(nowMs / step) * step;
  return {
    region: 'us-east',
    step,
    now: { ingressPerSec: ingress, capacityPerSec: 500 },
    forecast: Array.from({ length: 10 }, (_, i) => ({ t: first + i * step, p50: p50(first + i * step), p90: p50(first + i * step) * 1.5, p10: p50(first + i * step) * 0.6 })),
    plan: Array.from({ length: 10 }, (_, i) => ({ t: first + i * step, instances: { broker: 3, gateway: 1 }, ceilingPerSec: 900 })),
    model: { method: 'seasonal-naive', trainedAt: null, backtestMase: null, liveMase: null, mode: 'predictive' },
  } as unknown as CapacityReport;
}

function mesh(ingress: number): MeshView {
  return {
    self: { region: 'us-east', member: 'm1', incarnation: 1, pid: 1 },
    members: [],
    regions: [
      {
        region: 'eu-west',
        health: { cellReady: true, brokersAlive: 1, brokersTotal: 1, underReplicatedPartitions: 0 },
        load: { ingressRecordsPerSec: ingress, ingressBytesPerSec: 0, capacityRecordsPerSec: 300, headroomRecordsPerSec: null },
        forecast: { kind: 'forecast', generatedAtMs: T0, t0: T0, pointMs: 300_000, p50: [40, 50], p90: [60, 70], p10: [30, 45], plan: { broker: 2, gateway: 1, ceilingPerSec: 700 }, method: 'lstm', mode: 'reactive' },
        version: 1,
        updatedAt: T0,
      },
    ],
    catalogue: { topics: [], conflicts: [] },
    replication: [],
    exchange: { active: true, links: [], gaps: [] },
  };
}

describe('DashboardSampler', () => {
  it("keeps one point a second per region, with the forecast that stood before the second", () => {
    const clock = new FakeClock(T0);
    // A source that throws (a mesh not wired yet) does not stop a sample.
    const broken = new DashboardSampler({ region: 'x', mesh: () => { throw new Error('not yet'); } }, clock);
    broken.sample();
    expect(Object.keys(broken.history(300_000).regions)).toEqual(['x']);
    let rep = report(T0, 100, (t) => (t - T0) / 10);
    let ingress = 20;
    const s = new DashboardSampler({ region: 'us-east', capacity: () => rep, mesh: () => mesh(ingress), limiter: () => null }, clock);
    s.sample(); // T0: nothing forecast before it yet
    clock.advance(1_000);
    // A new forecast at T0+1 s says something else for this second: the kept one is the older.
    rep = report(clock.nowMs(), 120, () => 999);
    ingress = 30;
    s.sample();
    clock.advance(1_000);
    s.sample();
    const h = s.history(300_000);
    expect(h.stepMs).toBe(1_000);
    const us = h.regions['us-east']!;
    expect(us.t).toEqual([T0, T0 + 1_000, T0 + 2_000]);
    expect(us.ingress).toEqual([100, 120, 120]);
    expect(us.p50).toEqual([null, 100, 999]); // (T0+1 s − T0)/10 from the first forecast, then the second
    expect(us.p90).toEqual([null, 150, 1498.5]);
    expect(us.p10).toEqual([null, 60, 599.4]);
    expect(us.capacity).toEqual([500, 500, 500]);
    expect(us.ceiling).toEqual([900, 900, 900]);
    expect(us.brokers).toEqual([3, 3, 3]);
    const eu = h.regions['eu-west']!;
    expect(eu.ingress).toEqual([20, 30, 30]);
    expect(eu.p50).toEqual([null, 40, 40]);
    expect(eu.p10).toEqual([null, 30, 30]);
    expect(eu.capacity).toEqual([300, 300, 300]);
    expect(eu.ceiling).toEqual([700, 700, 700]);
    const now = s.now();
    expect(now.map((r) => r.region)).toEqual(['us-east', 'eu-west']);
    expect(now[1]).toMatchObject({ mode: 'reactive', method: 'lstm', health: { brokersAlive: 1 } });
    // Two samples in one second add one point.
    s.sample();
    expect(s.history(300_000).regions['us-east']!.t).toHaveLength(3);
  });

  it('holds an hour of seconds and a day of minute means, both bounded', () => {
    const clock = new FakeClock(T0 - (T0 % 60_000));
    let n = 0;
    const s = new DashboardSampler({ region: 'r', capacity: () => report(clock.nowMs(), n, () => 1) }, clock);
    for (let i = 0; i < DASHBOARD_FINE_POINTS_MAX + 120; i++) {
      n = i % 60; // each minute's mean is 29.5
      s.sample();
      clock.advance(1_000);
    }
    const fine = s.history(3_600_000).regions['r']!;
    expect(fine.t.length).toBeLessThanOrEqual(DASHBOARD_FINE_POINTS_MAX);
    expect(fine.t.length).toBeGreaterThan(DASHBOARD_FINE_POINTS_MAX - 2);
    const coarse = s.history(86_400_000);
    expect(coarse.stepMs).toBe(60_000);
    expect(coarse.regions['r']!.t.length).toBe(61);
    expect(new Set(coarse.regions['r']!.ingress)).toEqual(new Set([29.5]));
  });
});

describe('dashboard routes', () => {
  function rig(o: { cell?: () => Promise<never>; keys?: boolean } = {}) {
    const clock = new FakeClock(T0);
    const sampler = new DashboardSampler({ region: 'us-east', capacity: () => report(clock.nowMs(), 10, () => 5), mesh: () => mesh(1) }, clock);
    let cellCalls = 0;
    const feed = new DashboardFeed(
      {
        region: 'us-east',
        sampler,
        mesh: () => mesh(1),
        cell: o.cell ?? (async () => {
          cellCalls++;
          return { cellId: 'c', brokers: [], partitions: [], unreachable: [] };
        }),
      },
      clock,
    );
    const app = new Hono<{ Variables: AuthVariables }>();
    app.onError(onGatewayError);
    app.use('/v1/*', auth(null));
    const routes = registerDashboardRoutes(app, { sampler, feed, assets: async () => ({ html: '<html>', files: new Map([['app-1.js', { body: Buffer.from('x'), type: 'text/javascript' }]]), bytes: 7 }) });
    return { clock, sampler, feed, app, routes, cellCalls: () => cellCalls };
  }

  it('history: each allowed range; anything else is 400 INVALID_ARGUMENT naming range', async () => {
    const { app, sampler } = rig();
    sampler.sample();
    for (const range of ['5m', '1h', '24h']) {
      const res = await app.request(`/v1/dashboard/history?range=${range}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ range, stepMs: range === '24h' ? 60_000 : 1_000 });
    }
    expect((await (await app.request('/v1/dashboard/history')).json()) as { range: string }).toMatchObject({ range: '5m' });
    for (const bad of ['7m', '1H', '24h ', 'toString', '__proto__', '-1', '5m&range=1h'.slice(0, 3) + 'x']) {
      const res = await app.request(`/v1/dashboard/history?range=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect(await res.json()).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'range' });
    }
  });

  it('the page and its hashed assets with their cache headers; an unknown asset is 404', async () => {
    const { app } = rig();
    const page = await app.request('/dashboard');
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const js = await app.request('/dashboard/assets/app-1.js');
    expect(js.headers.get('cache-control')).toMatch(/immutable/);
    expect((await app.request('/dashboard/assets/nope.js')).status).toBe(404);
  });

  it('the stream: a snapshot a second to each listener; the cell is asked only while someone listens', async () => {
    const { app, clock, feed, cellCalls } = rig();
    const res = await app.request('/v1/dashboard/stream');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const events: DashboardSnapshot[] = [];
    const readOne = async () => {
      let buf = '';
      while (!buf.includes('\n\n')) buf += (await reader.read()).value ?? '';
      const data = buf.split('\n').find((l) => l.startsWith('data:'))!.slice(5).trim();
      events.push(JSON.parse(data) as DashboardSnapshot);
    };
    await readOne();
    clock.advance(1_000);
    await readOne();
    expect(events).toHaveLength(2);
    expect(events[1]!.t - events[0]!.t).toBe(1_000);
    expect(events[0]).toMatchObject({ region: 'us-east', cell: { ok: true } });
    expect(feed.listenerCount).toBe(1);
    await reader.cancel();
    await new Promise((r) => setImmediate(r));
    clock.advance(1_000);
    await new Promise((r) => setImmediate(r));
    const asked = cellCalls();
    clock.advance(5_000);
    await new Promise((r) => setImmediate(r));
    expect(cellCalls()).toBe(asked);
  });

  it('a cell that does not answer: its panel says so, the snapshot goes out all the same', async () => {
    const { feed, clock } = rig({ cell: () => new Promise<never>(() => undefined) });
    const got = feed.snapshot();
    await new Promise((r) => setImmediate(r));
    clock.advance(1_000);
    expect((await got).cell).toMatchObject({ ok: false, code: 'REQUEST_TIMED_OUT' });
  });
});

describe('the page bundle', () => {
  it('is within 150 KB compressed (uPlot and the page, script and style)', async () => {
    const { js, css } = await buildDashboardBundle();
    const bytes = gzipSync(js).length + gzipSync(css).length;
    console.log(`[dashboard] page ${js.length + css.length} bytes, ${bytes} gzipped`);
    expect(bytes).toBeLessThanOrEqual(150 * 1024);
    expect(css.toString()).toContain('.uplot');
  });
});
