/**
 * `GET /v1/limiter`: the admission limiter's state (needs the admin grant): the controller, the
 * capacity and concurrency limit it set, demand and acknowledged rates, the ceiling, every load
 * signal with its target and pressure and which one binds, and per tenant its demand, admitted and
 * refused rates and its fair share. A gateway built without a limiter answers 404.
 */
import type { Hono } from 'hono';
import { EdgeqError } from '../core/index.ts';
import type { AdmissionLimiter } from '../../ratelimit/index.ts';
import { authorize, type AuthVariables } from './auth.ts';

/** Adds the limiter route to `app`. */
export function registerLimiterRoute(app: Hono<{ Variables: AuthVariables }>, deps: { limiter: AdmissionLimiter | null | undefined }): void {
  app.get('/v1/limiter', (c) => {
    authorize(c, 'admin', '*');
    if (!deps.limiter) throw new EdgeqError('NOT_FOUND', 'this gateway runs without an admission limiter');
    return c.json(deps.limiter.view());
  });
}
