/**
 * Shedding before the framework. Under overload the gateway is bound by its own CPU, and a
 * refusal that costs as much as a produce (the body read, parsed and checked, the framework's
 * request and response objects) saves nothing: the refusals alone then fill the CPU, and the
 * queue grows in front of the admitted requests as well. So a produce the limiter would refuse
 * even one record is answered here, from the raw Node request, before Hono sees it: the same
 * 503 problem+json with the same headers (problemParts), the body left unread (drained by Node).
 *
 * Only what is certain is refused here: a produce route, a tenant known from its key (auth on)
 * or `anonymous` (auth off), and the limiter's precheck refusing. Anything else goes to the app,
 * which checks the same again (and everything else) the usual way. These answers are counted by
 * the limiter's throttled series, not the HTTP request metrics (which are Hono middleware).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdmissionLimiter } from '../../ratelimit/index.ts';
import type { Authenticator } from './auth.ts';
import { problemParts } from './errors.ts';

/** `POST /v1/topics/{name}/records`, with or without a query. */
const PRODUCE_PATH = /^\/v1\/topics\/[^/?]+\/records(\?|$)/;

type Listener = (req: IncomingMessage, res: ServerResponse) => unknown;

/** The tenant of a raw request, or null when only the app can say (no key, a bad one). */
function tenantOf(req: IncomingMessage, auth: Authenticator | null): string | null {
  if (!auth) return 'anonymous';
  const authz = req.headers.authorization;
  const key = authz !== undefined ? /^Bearer\s+(\S+)\s*$/i.exec(authz)?.[1] : req.headers['x-api-key'];
  if (typeof key !== 'string') return null;
  return auth.authenticate(key)?.tenant ?? null;
}

/** Wraps the app's Node listener with the limiter's early refusal of produces. */
export function shedding(next: Listener, deps: { limiter: AdmissionLimiter | null; auth: Authenticator | null }): Listener {
  const limiter = deps.limiter;
  if (!limiter) return next;
  return (req, res) => {
    if (req.method === 'POST' && req.url !== undefined && PRODUCE_PATH.test(req.url)) {
      const tenant = tenantOf(req, deps.auth);
      if (tenant !== null) {
        try {
          limiter.precheck(tenant);
        } catch (err) {
          const { status, headers, body } = problemParts(err);
          res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
          res.end(body);
          // The body is not needed: let it flow away so the connection stays usable.
          req.resume();
          return;
        }
      }
    }
    return next(req, res);
  };
}
