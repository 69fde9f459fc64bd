/**
 * The local deployment (`edgeq dev`, what `npm start` runs) as a real process tree for end-to-end
 * tests: free ports, start, wait for its "ready" line, and check processes are gone after a stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A base port with `n` free ports after it. */
export async function freeRange(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const ok = await Promise.all(Array.from({ length: n }, (_, i) => portFree(base + i)));
    if (ok.every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

export interface Ready {
  gateway: string;
  metrics: string[];
  brokers: string;
  processes: { name: string; pid: number }[];
}

/** Deployments started here and not yet exited: `stopAllDevs` ends them when a test fails half-way. */
const running = new Set<{ child: ChildProcess; exited: Promise<number | string> }>();
/** How long a deployment gets to stop on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 20_000;

/**
 * Stops every deployment still running (SIGTERM: the supervisor stops its children; SIGKILL after
 * STOP_TIMEOUT_MS), so a failed test leaves no process tree behind. For afterAll.
 */
export async function stopAllDevs(): Promise<void> {
  await Promise.all(
    [...running].map(async (dev) => {
      dev.child.kill('SIGTERM');
      const timer = setTimeout(() => dev.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await dev.exited;
      clearTimeout(timer);
    }),
  );
}

export function startDev(dataDir: string, brokerPort: number, arbiterPort: number, gatewayPort: number) {
  const child = spawn(process.execPath, [BIN, 'dev', '--data-dir', dataDir, '--broker-port', String(brokerPort), '--arbiter-port', String(arbiterPort), '--port', String(gatewayPort)], {
    env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn', EDGEQ_ADMIN_PORT: String(brokerPort + 5) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string>((r) => child.on('exit', (code, sig) => r(code ?? sig ?? -1)));
  const entry = { child, exited };
  running.add(entry);
  void exited.then(() => running.delete(entry));
  const ready = new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('edgeq dev did not get ready in 60 s')), 60_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const ev = JSON.parse(line) as { event?: string } & Ready;
        if (ev.event === 'ready') {
          clearTimeout(timer);
          resolve(ev);
        }
      } catch {
        // other output
      }
    });
    void exited.then((c) => reject(new Error(`edgeq dev exited early (${c})`)));
  });
  return { child, exited, ready };
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

