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

/**
 * Ports below Linux's ephemeral range (32768-60999 by default): a range chosen inside it can be
 * taken, between the check and the deployment's bind, by any outgoing connection on the machine
 * (seen in CI: a broker's metrics port went to another test's client socket, EADDRINUSE).
 */
const RANGE_PORT_MIN = 10_000;
const RANGE_PORT_END = 32_768;

/** A base port with `n` free ports after it. */
export async function freeRange(n: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = RANGE_PORT_MIN + Math.floor(Math.random() * (RANGE_PORT_END - n - RANGE_PORT_MIN));
    const ok = await Promise.all(Array.from({ length: n }, (_, i) => portFree(base + i)));
    if (ok.every(Boolean)) return base;
  }
  throw new Error('no free port range');
}

export interface Ready {
  gateway: string;
  metrics: string[];
  brokers: string;
  processes: { name: string; region: string; role: 'arbiter' | 'broker' | 'gateway'; pid: number }[];
  regions: { region: string; gateway: string; brokers: string; arbiter: string; mesh: string; metrics: string[] }[];
  control: string;
  wanLatencyMs: number;
  /** True when the gateways run with an API keys file (`--keys`). */
  auth: boolean;
}

/** Deployments started here and not yet exited: `stopAllDevs` ends them when a test fails half-way. */
const running = new Set<{ child: ChildProcess; exited: Promise<number | string> }>();
/** How long a deployment gets to stop on SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 20_000;

/**
 * Stops every deployment still running (SIGTERM: the supervisor stops its children; SIGKILL after
 * STOP_TIMEOUT_MS), so a failed test leaves no process tree behind. For afterAll. Each deployment
 * runs in its own process group, and the group is killed at the end: a supervisor killed before
 * it stopped its children (one that never got ready, say) leaves none of them running.
 */
export async function stopAllDevs(): Promise<void> {
  await Promise.all(
    [...running].map(async (dev) => {
      dev.child.kill('SIGTERM');
      const timer = setTimeout(() => killGroup(dev.child, 'SIGKILL'), STOP_TIMEOUT_MS);
      await dev.exited;
      clearTimeout(timer);
      killGroup(dev.child, 'SIGKILL');
    }),
  );
}

/** Signals the deployment's whole process group (nothing left in it is fine). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is empty already.
  }
}

/**
 * Starts a one-region `edgeq dev` (the single-region shape the older tests use) on the given
 * ports; its mesh agent and control API take `brokerPort + 8` and `+ 9` (ask freeRange for 10).
 */
export function startDev(dataDir: string, brokerPort: number, arbiterPort: number, gatewayPort: number) {
  return spawnDev(['--data-dir', dataDir, '--regions', '1', '--broker-port', String(brokerPort), '--arbiter-port', String(arbiterPort), '--port', String(gatewayPort), '--control-port', String(brokerPort + 9)], {
    EDGEQ_ADMIN_PORT: String(brokerPort + 5),
    EDGEQ_MESH_PORT: String(brokerPort + 8),
  });
}

/** Bound on `edgeq dev` printing its ready line. */
const DEV_READY_MS = 150_000;

/** Ports a multi-region deployment needs from its base: see `startDevRegions`. */
export const DEV_REGIONS_PORT_SPAN = 100;

/**
 * Starts `edgeq dev` with `regions` regions of `brokersPerRegion` brokers on a block of
 * DEV_REGIONS_PORT_SPAN ports from `base`: gateways base+i, mesh base+10+i, arbiters base+20+i,
 * control base+30, brokers base+40+10i+b, broker admin base+70+10i+b (at most 3 regions).
 * `args` are further `edgeq dev` flags (e.g. `--keys FILE`).
 */
export function startDevRegions(dataDir: string, base: number, o: { regions?: string; brokersPerRegion?: number; wanLatencyMs?: number; env?: Record<string, string>; args?: string[] } = {}) {
  return spawnDev(
    [
      '--data-dir', dataDir,
      '--regions', o.regions ?? '3',
      '--brokers-per-region', String(o.brokersPerRegion ?? 1),
      '--wan-latency-ms', String(o.wanLatencyMs ?? 25),
      '--port', String(base),
      '--arbiter-port', String(base + 20),
      '--control-port', String(base + 30),
      '--broker-port', String(base + 40),
      ...(o.args ?? []),
    ],
    { EDGEQ_MESH_PORT: String(base + 10), EDGEQ_ADMIN_PORT: String(base + 70), ...o.env },
  );
}

/** Starts `edgeq dev`; its processes log at EDGEQ_TEST_LOG_LEVEL (default warn) to <dataDir>/<region>/logs/. */
function spawnDev(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, 'dev', ...args], {
    env: { ...process.env, EDGEQ_LOG_LEVEL: process.env.EDGEQ_TEST_LOG_LEVEL ?? 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    // Its own process group, which stopAllDevs kills whole at the end.
    detached: true,
  });
  const exited = new Promise<number | string>((r) => child.on('exit', (code, sig) => r(code ?? sig ?? -1)));
  const entry = { child, exited };
  running.add(entry);
  void exited.then(() => running.delete(entry));
  const ready = new Promise<Ready>((resolve, reject) => {
    // A 3-region deployment is ~10 processes compiled by tsx at start on 2 cores, and CI runs
    // other test files beside it: 150 s is room for both (seen: > 90 s for 12 processes in CI).
    const timer = setTimeout(() => reject(new Error(`edgeq dev did not get ready in ${DEV_READY_MS / 1000} s`)), DEV_READY_MS);
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

