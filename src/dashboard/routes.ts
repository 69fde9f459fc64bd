/**
 * The dashboard's routes on the gateway:
 * - `GET /dashboard`: the page (no key needed to load it; it asks for one when the API answers 401);
 * - `GET /dashboard/assets/{name}`: its script and style, content-hashed, cached for a year;
 * - `GET /v1/dashboard/history?range=5m|1h|24h`: every region's points over the range (admin);
 * - `GET /v1/dashboard/stream`: one snapshot a second as Server-Sent Events (admin).
 * The data routes need the admin grant, as `/v1/cell`, `/v1/mesh` and `/v1/limiter` do: the page
 * shows what they show.
 */
import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { EdgeqError } from '../core/index.ts';
import { authorize, type AuthVariables } from '../gateway/auth.ts';
import { StreamSlots } from '../gateway/stream.ts';
import type { DashboardAssets } from './assets.ts';
import type { DashboardFeed, DashboardSnapshot } from './feed.ts';
import { DASHBOARD_RANGES, DASHBOARD_STREAMS_MAX } from './limits.ts';
import type { DashboardSampler } from './sampler.ts';

export interface DashboardDeps {
  readonly sampler: DashboardSampler;
  readonly feed: DashboardFeed;
  readonly assets: () => Promise<DashboardAssets>;
}

/** The range parameter, or INVALID_ARGUMENT naming the allowed values. */
export function parseRange(raw: string | undefined): { range: string; ms: number } {
  const range = raw === undefined || raw === '' ? '5m' : raw;
  const ms = DASHBOARD_RANGES[range];
  if (ms === undefined || !Object.hasOwn(DASHBOARD_RANGES, range)) {
    throw new EdgeqError('INVALID_ARGUMENT', `range must be one of ${Object.keys(DASHBOARD_RANGES).join(', ')}, got ${JSON.stringify(range.slice(0, 40))}`, { details: { parameter: 'range', field: 'range' } });
  }
  return { range, ms };
}

export function registerDashboardRoutes(app: Hono<{ Variables: AuthVariables }>, deps: DashboardDeps | null | undefined): { endStreams(): void } {
  const slots = new StreamSlots(DASHBOARD_STREAMS_MAX, 'dashboard streams', 'the most one gateway serves (DASHBOARD_STREAMS_MAX)');
  const off = (): never => {
    throw new EdgeqError('NOT_FOUND', 'this gateway runs without the dashboard');
  };

  app.get('/dashboard', async (c) => {
    if (!deps) off();
    const a = await deps!.assets();
    return c.body(a.html, 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
  });

  app.get('/dashboard/assets/:name', async (c) => {
    if (!deps) off();
    const a = await deps!.assets();
    const file = a.files.get(c.req.param('name'));
    if (!file) throw new EdgeqError('NOT_FOUND', `no dashboard asset ${JSON.stringify(c.req.param('name').slice(0, 80))}`);
    return c.body(new Uint8Array(file.body), 200, { 'content-type': file.type, 'cache-control': 'public, max-age=31536000, immutable' });
  });

  app.get('/v1/dashboard/history', (c) => {
    authorize(c, 'admin', '*');
    if (!deps) off();
    const { range, ms } = parseRange(c.req.query('range'));
    const h = deps!.sampler.history(ms);
    return c.json({ range, stepMs: h.stepMs, regions: h.regions });
  });

  app.get('/v1/dashboard/stream', (c) => {
    authorize(c, 'admin', '*');
    if (!deps) off();
    slots.acquire();
    return streamSSE(c, async (stream) => {
      let wake: (() => void) | null = null;
      const queue: DashboardSnapshot[] = [];
      const end = () => {
        if (!stream.aborted) stream.abort();
        wake?.();
      };
      const untrack = slots.track(end);
      stream.onAbort(() => wake?.());
      c.req.raw.signal.addEventListener('abort', end);
      // Only the newest snapshot waits: a slow reader skips seconds, it does not queue them.
      const unsubscribe = deps!.feed.subscribe((s) => {
        queue.splice(0, queue.length, s);
        wake?.();
      });
      try {
        while (!stream.aborted && !stream.closed) {
          const next = queue.shift();
          if (!next) {
            await new Promise<void>((r) => (wake = r));
            wake = null;
            continue;
          }
          await stream.writeSSE({ event: 'snapshot', id: String(next.t), data: JSON.stringify(next) });
        }
      } finally {
        unsubscribe();
        untrack();
        slots.release();
      }
    });
  });

  return {
    endStreams(): void {
      slots.endAll();
    },
  };
}
