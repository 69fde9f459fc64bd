/**
 * `POST /v1/groups/{group}/failover` `{"from": "<old region>"}`: moves a consumer group's position
 * here from the region it consumed in (docs/geo.md). Needs the admin grant: it rewrites the group's
 * commits on every global topic it has. The mesh does the work and the refusals (400 this region,
 * 404 unknown region or group never published, 409 live members); nothing is written on a refusal.
 */
import type { Context, Hono } from 'hono';
import { EdgeqError } from '../core/index.ts';
import { authorize, type AuthVariables } from './auth.ts';
import { readBody } from './body.ts';
import { checkGroupId } from './groups.ts';
import { parseJsonObject } from './json-body.ts';
import type { GatewayMesh } from './mesh.ts';

/** Longest region name a body may give (the mesh's own names are far shorter). */
const REGION_NAME_BYTES_MAX = 255;

function parseFailover(body: Buffer): { from: string } {
  const { from } = parseJsonObject(body);
  if (typeof from !== 'string' || from === '' || Buffer.byteLength(from) > REGION_NAME_BYTES_MAX) {
    throw new EdgeqError('INVALID_ARGUMENT', `"from" must be the name of the region the group moves from (1..${REGION_NAME_BYTES_MAX} bytes)`, { details: { field: 'from' } });
  }
  return { from };
}

/** Adds the failover route to `app`. */
export function registerFailoverRoute(app: Hono<{ Variables: AuthVariables }>, deps: { mesh: GatewayMesh | null | undefined; bodyBytesMax: number; requireJson: (c: Context<{ Variables: AuthVariables }>) => void }): void {
  app.post('/v1/groups/:group/failover', async (c) => {
    const group = c.req.param('group');
    checkGroupId(group);
    authorize(c, 'admin', '*');
    deps.requireJson(c);
    const { from } = parseFailover(await readBody(c, deps.bodyBytesMax));
    if (!deps.mesh) throw new EdgeqError('NOT_FOUND', `region "${from}" is not known: this gateway runs without a mesh agent (start it with --mesh-port)`, { details: { region: from } });
    return c.json(await deps.mesh.failover(group, from), 200);
  });
}
