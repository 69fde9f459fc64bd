/**
 * The quotas API (docs/http-api.md, Quotas): `PUT /v1/quotas/{tenant}/{topic}` sets one,
 * `GET /v1/quotas[/{tenant}/{topic}]` lists them with this region's share of global ones,
 * `DELETE …` removes one. All need the admin grant on every topic: a quota limits a tenant, so a
 * tenant's own grants do not let it raise its own. Quotas are stored in the cell (QuotaAdmin);
 * a refused body changes nothing.
 */
import type { Context, Hono } from 'hono';
import { EdgeqError } from '../core/index.ts';
import { parseQuota, QUOTA_TOPIC_NAME, TENANT_NAME, type QuotaEnforcer } from '../../ratelimit/index.ts';
import { authorize, type AuthVariables } from './auth.ts';
import { readBody } from './body.ts';
import { parseJsonObject } from './json-body.ts';

type Ctx = Context<{ Variables: AuthVariables }>;

function names(c: Ctx): { tenant: string; topic: string } {
  const tenant = c.req.param('tenant') ?? '';
  const topic = c.req.param('topic') ?? '';
  if (!TENANT_NAME.test(tenant)) throw new EdgeqError('INVALID_ARGUMENT', `tenant "${tenant}" is not a valid name (${TENANT_NAME.source})`, { details: { field: 'tenant' } });
  if (!QUOTA_TOPIC_NAME.test(topic)) throw new EdgeqError('INVALID_ARGUMENT', `topic "${topic}" is not a valid topic name or *`, { details: { field: 'topic' } });
  return { tenant, topic };
}

function enforcerOf(q: QuotaEnforcer | null | undefined): QuotaEnforcer {
  if (!q) throw new EdgeqError('NOT_FOUND', 'this gateway runs without quotas');
  return q;
}

/** Adds the quota routes to `app`. */
export function registerQuotaRoutes(
  app: Hono<{ Variables: AuthVariables }>,
  deps: { quotas: QuotaEnforcer | null | undefined; bodyBytesMax: number; requireJson: (c: Ctx) => void },
): void {
  app.get('/v1/quotas', async (c) => {
    authorize(c, 'admin', '*');
    const q = enforcerOf(deps.quotas);
    // The cell is the truth (another gateway may have changed it since the last refresh).
    await q.refresh();
    return c.json({ quotas: q.list() });
  });

  app.get('/v1/quotas/:tenant/:topic', async (c) => {
    authorize(c, 'admin', '*');
    const { tenant, topic } = names(c);
    const q = enforcerOf(deps.quotas);
    await q.refresh();
    const found = q.get(tenant, topic);
    if (!found) throw new EdgeqError('NOT_FOUND', `no quota for tenant "${tenant}" on ${topic === '*' ? 'all its topics' : `topic "${topic}"`}`, { details: { tenant, topic } });
    return c.json(found);
  });

  app.put('/v1/quotas/:tenant/:topic', async (c) => {
    authorize(c, 'admin', '*');
    const { tenant, topic } = names(c);
    const q = enforcerOf(deps.quotas);
    deps.requireJson(c);
    const quota = parseQuota(tenant, topic, parseJsonObject(await readBody(c, deps.bodyBytesMax)));
    const existed = q.get(tenant, topic) !== undefined;
    await q.admin.putQuota(quota);
    q.stored(quota);
    return c.json(q.get(tenant, topic) ?? quota, existed ? 200 : 201);
  });

  app.delete('/v1/quotas/:tenant/:topic', async (c) => {
    authorize(c, 'admin', '*');
    const { tenant, topic } = names(c);
    const q = enforcerOf(deps.quotas);
    const gone = await q.admin.deleteQuota(tenant, topic);
    q.deleted(tenant, topic);
    if (!gone) throw new EdgeqError('NOT_FOUND', `no quota for tenant "${tenant}" on ${topic === '*' ? 'all its topics' : `topic "${topic}"`}`, { details: { tenant, topic } });
    return c.body(null, 204);
  });
}
