/**
 * `GET /v1/tracing` and `PUT /v1/tracing` (admin grant): this gateway's tracing as it runs, and
 * its sampling ratio changed without a restart — what an operator turns up during an incident and
 * back down after. The ratio decides the new traces this gateway starts (the produces it takes);
 * brokers and other regions follow whatever a record's producer sampled, so they need no change.
 * The OTLP endpoint stays a start-up setting: with tracing off, PUT is NOT_FOUND and says how to
 * turn it on. A restart returns to the flag's ratio. A refused body changes nothing.
 */
import type { Context, Hono } from 'hono';
import { EdgeqError } from '../core/index.ts';
import { activeTracer, setSampleRatio, type ActiveTracer } from '../tracing/index.ts';
import { authorize, type AuthVariables } from './auth.ts';
import { readBody } from './body.ts';
import { parseJsonObject } from './json-body.ts';

type Ctx = Context<{ Variables: AuthVariables }>;

/** The fields PUT takes. */
const SETTABLE = new Set(['sampleRatio']);

/** What GET and PUT answer. */
export interface TracingView {
  enabled: boolean;
  /** Share of new traces recorded, 0..1 (absent when off). */
  sampleRatio?: number;
  /** Where spans are sent (OTLP/HTTP); null for an exporter injected in-process. */
  endpoint?: string | null;
  exportDelayMs?: number;
}

function view(t: ActiveTracer | null): TracingView {
  if (t === null) return { enabled: false };
  return { enabled: true, sampleRatio: t.sampleRatio, endpoint: t.url, exportDelayMs: t.exportDelayMs };
}

/** Adds the tracing routes to `app`. */
export function registerTracingRoutes(app: Hono<{ Variables: AuthVariables }>, deps: { bodyBytesMax: number; requireJson: (c: Ctx) => void }): void {
  app.get('/v1/tracing', (c) => {
    authorize(c, 'admin', '*');
    return c.json(view(activeTracer()));
  });

  app.put('/v1/tracing', async (c) => {
    authorize(c, 'admin', '*');
    deps.requireJson(c);
    const body = parseJsonObject(await readBody(c, deps.bodyBytesMax));
    for (const key of Object.keys(body)) {
      if (!SETTABLE.has(key)) throw new EdgeqError('INVALID_ARGUMENT', `unknown field "${key}" (settable: ${[...SETTABLE].join(', ')})`, { details: { field: key } });
    }
    if (!('sampleRatio' in body)) throw new EdgeqError('INVALID_ARGUMENT', 'sampleRatio is required (a number within 0..1)', { details: { field: 'sampleRatio' } });
    return c.json(view(setSampleRatio(body.sampleRatio)));
  });
}
