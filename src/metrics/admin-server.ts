/**
 * The broker's admin HTTP endpoint: `GET /metrics` (Prometheus text) on plain node:http. It binds
 * loopback only: the series name every topic, and there is no auth on this port, so a scraper on
 * another host goes through a proxy or an agent on the broker's machine.
 */
import { createServer, type Server } from 'node:http';
import type { BrokerMetrics } from './broker-metrics.ts';

/** Where the admin endpoint listens. */
export const ADMIN_HOST = '127.0.0.1';

/** A running admin endpoint. */
export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `metrics` on `ADMIN_HOST:port` (0 picks a free port). */
export async function startAdminServer(metrics: BrokerMetrics, options: { port: number }): Promise<AdminServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
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
    server.listen(options.port, ADMIN_HOST, () => {
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
