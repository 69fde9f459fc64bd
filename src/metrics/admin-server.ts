/**
 * The broker's admin HTTP endpoint: `GET /metrics` (Prometheus text) on plain node:http, and the
 * JSON routes the broker adds (`/healthz`, `/readyz`). It binds loopback by default: the series
 * name every topic and there is no auth on this port. A container gives it another address
 * (`--admin-host`) so its orchestrator's probes and the region's Prometheus reach it; the network
 * around the container must then keep it private (docs/deploy.md).
 */
import { createServer, type Server } from 'node:http';
import type { BrokerMetrics } from './broker-metrics.ts';

/** Where the admin endpoint listens. */
export const ADMIN_HOST = '127.0.0.1';

/** A JSON route of the admin endpoint: GET only, answered with `status` and `body` as JSON. */
export type AdminRoute = () => { status: number; body: unknown };

/** A running admin endpoint. */
export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `metrics` on `host:port` (ADMIN_HOST by default; port 0 picks a free one), with `routes` beside it. */
export async function startAdminServer(metrics: BrokerMetrics, options: { port: number; host?: string; routes?: Readonly<Record<string, AdminRoute>> }): Promise<AdminServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = options.routes && Object.hasOwn(options.routes, path) ? options.routes[path] : undefined;
    if (route && (req.method === 'GET' || req.method === 'HEAD')) {
      const { status, body } = route();
      res.writeHead(status, { 'content-type': 'application/json' }).end(req.method === 'HEAD' ? undefined : `${JSON.stringify(body)}\n`);
      return;
    }
    if (path !== '/metrics' && !route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics collection failed: ${(err as Error).message}\n`);
      },
    );
  });
  // A scrape is one short request; idle keep-alive sockets must not hold close() open.
  server.keepAliveTimeout = 5_000;
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? ADMIN_HOST, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : 0);
    });
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
