/**
 * The ceiling for Node HTTP on this machine: a bare `node:http` server in its own process (as the
 * gateway is), on 127.0.0.1, that reads each request's whole body and answers a JSON body of a
 * size fixed per request URL (the size of the gateway's answer to the same request), with
 * `Content-Type: application/json` and `Content-Length`. Nothing else: no routing, no parsing.
 *
 * `startBareServer(answers)` spawns this file as a child process (`answers` maps a request URL —
 * path and query — to the answer's size in bytes; any other URL gets 404) and resolves with its
 * base URL and a `stop()` that ends it. Run directly, the file is that child: it reads the map from
 * the BARE_ANSWERS environment variable and prints `{"port":N}` on stdout once listening.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);

/** A JSON object of exactly `bytes` bytes (at least 10): `{"pad":"aaa…"}`. */
export function jsonOfSize(bytes: number): Buffer {
  const pad = Math.max(0, bytes - '{"pad":""}'.length);
  return Buffer.from(`{"pad":"${'a'.repeat(pad)}"}`);
}

function serve(answers: Record<string, number>): void {
  const bodies = new Map(Object.entries(answers).map(([url, n]) => [url, jsonOfSize(n)]));
  const server = createServer((req, res) => {
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
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof a === 'object' && a ? a.port : 0 })}\n`);
  });
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
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the bare server process; rejects after `timeoutMs` without its port line. */
export function startBareServer(answers: Record<string, number>, timeoutMs = 20_000): Promise<BareServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF], {
    env: { ...process.env, BARE_ANSWERS: JSON.stringify(answers) },
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
      reject(new Error(`the bare node:http server did not start in ${timeoutMs} ms`));
    }, timeoutMs);
    createInterface({ input: child.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      try {
        const { port } = JSON.parse(line) as { port: number };
        resolve({ url: `http://127.0.0.1:${port}`, child, stop });
      } catch (err) {
        void stop();
        reject(err as Error);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the bare node:http server exited early (${child.exitCode ?? child.signalCode})`));
    });
  });
}

if (process.argv[1] === SELF) serve(JSON.parse(process.env.BARE_ANSWERS ?? '{}') as Record<string, number>);
