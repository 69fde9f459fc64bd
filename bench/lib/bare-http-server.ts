/**
 * The ceilings for Node HTTP on this machine: a server in its own process (as the gateway is), on
 * 127.0.0.1, that reads each request's whole body and answers a JSON body of a size fixed per
 * request URL (the size of the gateway's answer to the same request), with
 * `Content-Type: application/json` and `Content-Length`. Two modes, same requests, same answers:
 *
 * - `node`: a bare `node:http` server. Nothing else: no routing, no parsing.
 * - `hono`: the same built as a Hono app served by `@hono/node-server` `serve` (the gateway's
 *   stack), routing `POST /v1/topics/:name/records`, reading the body with
 *   `await c.req.arrayBuffer()` and answering with `c.body(buf, 200, {'content-type': …})`. Any
 *   other route gets Hono's 404. Its gap to `node` is what the framework costs; the gateway's gap
 *   to `hono` is what the produce path costs.
 *
 * `startBareServer(answers, { mode })` spawns this file as a child process (`answers` maps a
 * request URL — path and query — to the answer's size in bytes; any other URL gets 404) and
 * resolves with its base URL, the child (its pid, for CPU readings) and a `stop()` that ends it.
 * Run directly, the file is that child: it reads the map from the BARE_ANSWERS environment
 * variable and the mode from BARE_MODE (default `node`), and prints `{"port":N}` on stdout once
 * listening.
 */
import type { HttpBindings } from '@hono/node-server';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);

export type BareMode = 'node' | 'hono';
export const BARE_MODES: readonly BareMode[] = ['node', 'hono'];

/** A JSON object of exactly `bytes` bytes (at least 10): `{"pad":"aaa…"}`. */
export function jsonOfSize(bytes: number): Buffer {
  const pad = Math.max(0, bytes - '{"pad":""}'.length);
  return Buffer.from(`{"pad":"${'a'.repeat(pad)}"}`);
}

function nodeServer(bodies: Map<string, Buffer>): Server {
  return createServer((req, res) => {
    // Read the whole body, as the gateway must, then answer.
    req.on('data', () => undefined);
    req.on('end', () => {
      const body = bodies.get(req.url ?? '');
      if (!body) {
        res.writeHead(404, { 'content-length': '0' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.end(body);
    });
  });
}

/** The Hono app on @hono/node-server; resolves once listening. Loaded only in this mode. */
async function honoServer(bodies: Map<string, Buffer>, onListening: (port: number) => void): Promise<Server> {
  const { Hono } = await import('hono');
  const { serve } = await import('@hono/node-server');
  // c.body() takes a Uint8Array over an ArrayBuffer: copied once here, not per request.
  const answers = new Map([...bodies].map(([url, b]) => [url, new Uint8Array(b)]));
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.post('/v1/topics/:name/records', async (c) => {
    // Read the whole body, as the gateway must, then answer.
    await c.req.arrayBuffer();
    // The answer is keyed by the raw request URL (path and query), as in the node mode; the raw
    // Node request gives it without building a URL object.
    const body = answers.get(c.env.incoming.url ?? '');
    if (!body) return c.body(null, 404);
    return c.body(body, 200, { 'content-type': 'application/json' });
  });
  return serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => onListening(info.port)) as Server;
}

async function runChild(answers: Record<string, number>, mode: BareMode): Promise<void> {
  const bodies = new Map(Object.entries(answers).map(([url, n]) => [url, jsonOfSize(n)]));
  const announce = (port: number) => process.stdout.write(`${JSON.stringify({ port })}\n`);
  let server: Server;
  if (mode === 'hono') {
    server = await honoServer(bodies, announce);
  } else {
    server = nodeServer(bodies);
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      announce(typeof a === 'object' && a ? a.port : 0);
    });
  }
  server.keepAliveTimeout = 65_000;
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1_000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The parent went away without stopping us: do not linger.
  process.once('disconnect', stop);
}

export interface BareServer {
  url: string;
  mode: BareMode;
  child: ChildProcess;
  stop(): Promise<void>;
}

export interface BareServerOptions {
  /** `node` (bare node:http, the default) or `hono` (Hono on @hono/node-server). */
  mode?: BareMode;
  /** Reject after this long without the child's port line. */
  timeoutMs?: number;
}

/** Starts the server process in the mode asked; rejects after `timeoutMs` without its port line. */
export function startBareServer(answers: Record<string, number>, opts: BareServerOptions = {}): Promise<BareServer> {
  const mode = opts.mode ?? 'node';
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const what = mode === 'hono' ? 'the Hono server' : 'the bare node:http server';
  const child = spawn(process.execPath, ['--import', 'tsx', SELF], {
    env: { ...process.env, BARE_ANSWERS: JSON.stringify(answers), BARE_MODE: mode },
    // An IPC channel only so the child sees 'disconnect' if this process dies.
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(t);
  };
  return new Promise<BareServer>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${what} did not start in ${timeoutMs} ms`));
    }, timeoutMs);
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      try {
        const { port } = JSON.parse(line) as { port: number };
        resolve({ url: `http://127.0.0.1:${port}`, mode, child, stop });
      } catch (err) {
        void stop();
        reject(err as Error);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${what} exited early (${child.exitCode ?? child.signalCode})`));
    });
  });
}

if (process.argv[1] === SELF) {
  const mode = (process.env.BARE_MODE ?? 'node') as BareMode;
  if (!BARE_MODES.includes(mode)) throw new Error(`BARE_MODE: expected ${BARE_MODES.join(' or ')}, got "${mode}"`);
  await runChild(JSON.parse(process.env.BARE_ANSWERS ?? '{}') as Record<string, number>, mode);
}
