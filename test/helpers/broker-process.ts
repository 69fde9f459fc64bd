/**
 * Starts real broker processes (`edgeq broker`) for crash and restart tests, and stops them by
 * signal. The broker prints one JSON "listening" line on stdout; that line, not a sleep, says it
 * is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

/** A running broker process. */
export interface BrokerProcess {
  pid: number;
  port: number;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Options of a spawned broker. */
export interface SpawnBrokerOptions {
  dataDir: string;
  port?: number;
  id?: number;
  env?: Record<string, string>;
  /** Extra CLI flags (e.g. the arbiter of a cell). */
  args?: string[];
  startTimeoutMs?: number;
}

/** Spawns `edgeq broker` and waits for its listening line. */
export function spawnBroker(options: SpawnBrokerOptions): Promise<BrokerProcess> {
  const args = [BIN, 'broker', '--data-dir', options.dataDir, '--port', String(options.port ?? 0), '--id', String(options.id ?? 1), ...(options.args ?? [])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise<BrokerProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`broker did not start within ${options.startTimeoutMs ?? 20_000} ms`));
    }, options.startTimeoutMs ?? 20_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.startsWith('{')) return;
      try {
        const ev = JSON.parse(line) as { event?: string; port?: number };
        if (ev.event !== 'listening' || typeof ev.port !== 'number') return;
        clearTimeout(timer);
        resolve({
          pid: child.pid!,
          port: ev.port,
          child,
          exited,
          kill: (signal: NodeJS.Signals = 'SIGTERM') => {
            child.kill(signal);
            return exited;
          },
        });
      } catch {
        // not our line
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code} before listening`));
    });
  });
}
