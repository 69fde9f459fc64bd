/**
 * The control API of the dev supervisor (`edgeq dev`): the emulated WAN links and the processes
 * of the local deployment, on 127.0.0.1 only (it has no auth: anyone who reaches it can cut the
 * deployment's links). Tests and drills drive faults through it.
 *
 *   GET /v1/dev/links               → {"links": [link, …]}   (settings, counters, routes)
 *   GET /v1/dev/links/{from}/{to}   → link, or 404
 *   PUT /v1/dev/links/{from}/{to}   → link as it is now; body: any subset of
 *       {"latencyMs","jitterMs","lossRate","bandwidthBytesPerSec","blackhole","reset"}
 *   GET /v1/dev/processes           → {"processes": [{region, role, name, pid, held}, …]}
 *   POST /v1/dev/processes/{region}/{name}/hold     → the process, down and kept down (no
 *       restart); body optional: {"signal": "SIGKILL" (default) | "SIGTERM"}
 *   POST /v1/dev/processes/{region}/{name}/release  → the process, started again and ready
 *   GET /v1/dev/deployment          → where everything is: every region's gateway URL, its
 *       arbiter and brokers (address, admin URL, data folder), the data folder and fault storage
 *
 * Errors are problem+json through the gateway's one mapping (status from the core error table),
 * with the offending field named in `detail` and, for bad link settings, in a `field` member.
 * A PUT body is validated whole before anything changes (the emulator's validator).
 */
import { createAdaptorServer } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { EdgeqError, type Logger, silentLogger } from '../../core/index.ts';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../../gateway/index.ts';
import type { LinkEmulator } from '../../wan/index.ts';

/** The control API's default port (`--control-port`, `EDGEQ_CONTROL_PORT`). */
export const CONTROL_PORT_DEFAULT = 8090;

/** Largest PUT body: a link change is under 200 bytes; 16 KiB leaves room and refuses floods. */
export const CONTROL_BODY_BYTES_MAX = 16 * 1024;

/** What a process of the deployment is. */
export type DevRole = 'arbiter' | 'broker' | 'gateway';

/** One process of the deployment, as listed. */
export interface DevProcess {
  region: string;
  role: DevRole;
  /** The supervisor's name for it, e.g. `us-east/broker-2`. */
  name: string;
  /** null while it is not running (between a crash and its restart, or held down). */
  pid: number | null;
  /** Held down by the control API (not restarted until released). */
  held: boolean;
}

/** One broker of the deployment, where a drill finds it. */
export interface DevBroker {
  name: string;
  id: number;
  address: string;
  admin: string;
  dataDir: string;
}

/** Where every part of the deployment is (`GET /v1/dev/deployment`). */
export interface DevDeployment {
  dataDir: string;
  /** The storage the brokers write through: `power-loss` only for the fault campaign and tests. */
  faultStorage: 'none' | 'power-loss';
  regions: {
    region: string;
    gateway: string;
    gatewayName: string;
    arbiter: { name: string; address: string; dataDir: string };
    brokers: DevBroker[];
  }[];
}

/** What the control API is built from. */
export interface ControlApiDeps {
  emulator: Pick<LinkEmulator, 'links' | 'get' | 'set'>;
  /** Every process of the deployment, now. */
  processes: () => DevProcess[] | Promise<DevProcess[]>;
  /** Takes a process down and keeps it down; NOT_FOUND for an unknown name. */
  hold?: (name: string, signal: 'SIGKILL' | 'SIGTERM') => Promise<void>;
  /** Starts a held process again, resolving once it is ready. */
  release?: (name: string) => Promise<void>;
  /** Where everything is. */
  deployment?: () => DevDeployment;
}

function problem(err: unknown): Response {
  const body: Record<string, unknown> = { ...toProblem(err) };
  // RFC 9457 extension member: which field of the body was wrong, for clients that act on it.
  if (err instanceof EdgeqError && typeof err.details['field'] === 'string') body['field'] = err.details['field'];
  return new Response(JSON.stringify(body), { status: body['status'] as number, headers: { 'content-type': PROBLEM_CONTENT_TYPE } });
}

function linkOrNotFound(deps: ControlApiDeps, c: Context): ReturnType<LinkEmulator['links']>[number] {
  const from = c.req.param('from') ?? '';
  const to = c.req.param('to') ?? '';
  const link = deps.emulator.get(from, to);
  if (link === undefined) throw new EdgeqError('NOT_FOUND', `no link from ${from} to ${to}`, { details: { from, to } });
  return link;
}

/** The control API as a Hono app (served by `startControlApi`, tested with `app.request()`). */
export function createControlApp(deps: ControlApiDeps): Hono {
  const app = new Hono();
  app.onError((err) => problem(err));
  app.notFound((c) => problem(new EdgeqError('NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`)));

  app.get('/v1/dev/links', (c) => c.json({ links: deps.emulator.links() }));
  app.get('/v1/dev/links/:from/:to', (c) => c.json(linkOrNotFound(deps, c)));
  app.put(
    '/v1/dev/links/:from/:to',
    bodyLimit({
      maxSize: CONTROL_BODY_BYTES_MAX,
      onError: () => {
        throw new EdgeqError('MESSAGE_TOO_LARGE', `request body is over ${CONTROL_BODY_BYTES_MAX} bytes`, { details: { bodyBytesMax: CONTROL_BODY_BYTES_MAX } });
      },
    }),
    async (c) => {
      const link = linkOrNotFound(deps, c);
      // The media type is not checked: `curl -d` sends form-urlencoded by default, and the body
      // must be a JSON object whatever the header says.
      const text = await c.req.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new EdgeqError('INVALID_ARGUMENT', `body is not valid JSON: ${(err as Error).message}`, { cause: err, details: { field: null } });
      }
      return c.json(deps.emulator.set(link.from, link.to, body as never));
    },
  );
  app.get('/v1/dev/processes', async (c) => c.json({ processes: await deps.processes() }));
  const processNamed = async (c: Context): Promise<DevProcess> => {
    const name = `${c.req.param('region') ?? ''}/${c.req.param('name') ?? ''}`;
    const p = (await deps.processes()).find((x) => x.name === name);
    if (!p) throw new EdgeqError('NOT_FOUND', `no process named ${name}`, { details: { process: name } });
    return p;
  };
  const unsupported = (what: string) => new EdgeqError('NOT_FOUND', `this deployment's control API cannot ${what}`);
  app.post('/v1/dev/processes/:region/:name/hold', bodyLimit({ maxSize: CONTROL_BODY_BYTES_MAX }), async (c) => {
    if (!deps.hold) throw unsupported('hold processes');
    const p = await processNamed(c);
    const text = await c.req.text();
    let signal: unknown = 'SIGKILL';
    if (text.trim() !== '') {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new EdgeqError('INVALID_ARGUMENT', `body is not valid JSON: ${(err as Error).message}`, { cause: err, details: { field: null } });
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EdgeqError('INVALID_ARGUMENT', 'body must be a JSON object', { details: { field: null } });
      const unknown = Object.keys(body).filter((k) => k !== 'signal');
      if (unknown.length > 0) throw new EdgeqError('INVALID_ARGUMENT', `unknown field ${unknown[0]} (allowed: signal)`, { details: { field: unknown[0] } });
      signal = (body as { signal?: unknown }).signal ?? 'SIGKILL';
    }
    if (signal !== 'SIGKILL' && signal !== 'SIGTERM') throw new EdgeqError('INVALID_ARGUMENT', `signal must be "SIGKILL" or "SIGTERM", got ${JSON.stringify(signal)}`, { details: { field: 'signal' } });
    await deps.hold(p.name, signal);
    return c.json(await processNamed(c));
  });
  app.post('/v1/dev/processes/:region/:name/release', async (c) => {
    if (!deps.release) throw unsupported('release processes');
    const p = await processNamed(c);
    await deps.release(p.name);
    return c.json(await processNamed(c));
  });
  app.get('/v1/dev/deployment', (c) => {
    if (!deps.deployment) throw unsupported('describe the deployment');
    return c.json(deps.deployment());
  });
  return app;
}

/** Where the control API listens. */
export interface ControlApiOptions extends ControlApiDeps {
  /** Loopback only; default 127.0.0.1. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  logger?: Logger;
}

/** A running control API. */
export interface ControlApi {
  host: string;
  port: number;
  /** `http://host:port`, for the start-up banner. */
  url: string;
  /** Stops accepting and closes open connections. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Serves the control API; a taken port (or a non-loopback host) is INVALID_CONFIG naming `controlPort` (or `controlHost`). */
export async function startControlApi(options: ControlApiOptions): Promise<ControlApi> {
  const host = options.host ?? '127.0.0.1';
  const logger = options.logger ?? silentLogger;
  if (!LOOPBACK.has(host)) throw new EdgeqError('INVALID_CONFIG', `the control API has no auth and listens on loopback only, got host ${host}`, { details: { key: 'controlHost' } });
  checkPort(options.port, 'controlPort', true);
  const app = createControlApp(options);
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const why = err.code === 'EADDRINUSE' ? 'the port is in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(new EdgeqError('INVALID_CONFIG', `the control API cannot listen on ${host}:${options.port}: ${why} (change it with --control-port or EDGEQ_CONTROL_PORT)`, { cause: err, details: { key: 'controlPort', port: options.port } }));
    };
    server.once('error', onError);
    server.listen(options.port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'control API server error'));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port,
    url: `http://${urlHost}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections would hold close() open until they idle out.
        if ('closeAllConnections' in server) server.closeAllConnections();
      }),
  };
}

function checkPort(port: unknown, key: string, allowZero: boolean): number {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < (allowZero ? 0 : 1) || port > 65535) {
    throw new EdgeqError('INVALID_CONFIG', `${key} must be a port in [${allowZero ? 0 : 1}, 65535], got ${String(port)}`, { details: { key } });
  }
  return port;
}

/**
 * The control port of `edgeq dev`: `--control-port`, else `EDGEQ_CONTROL_PORT`, else 8090.
 * A value that is not a port is INVALID_CONFIG naming where it came from.
 */
export function controlPortFrom(flag: string | undefined, env: Record<string, string | undefined> = process.env): number {
  const [raw, key] = flag !== undefined ? [flag, '--control-port'] : env['EDGEQ_CONTROL_PORT'] !== undefined ? [env['EDGEQ_CONTROL_PORT'], 'EDGEQ_CONTROL_PORT'] : [String(CONTROL_PORT_DEFAULT), 'controlPort'];
  const n = Number(raw);
  if (!/^\d{1,5}$/.test(raw) || n < 1 || n > 65535) throw new EdgeqError('INVALID_CONFIG', `${key} must be a port in [1, 65535], got ${JSON.stringify(raw)}`, { details: { key } });
  return n;
}
