/**
 * Starts real embedded arbiter processes (`edgeq arbiter`) for contract, crash and restart tests,
 * and stops them by signal. The arbiter prints one JSON "listening" line on stdout; that line, not
 * a sleep, says it is ready.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
/** Start-up deadline: tsx compiles the sources on first run, which takes a few seconds on 2 cores. */
const START_TIMEOUT_MS_DEFAULT = 20_000;

/** A running arbiter process. */
export interface ArbiterProcess {
  pid: number;
  port: number;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string>;
  /** Sends `signal` (SIGTERM by default) and resolves when the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Options of a spawned arbiter. */
export interface SpawnArbiterOptions {
  /** State folder; omit for a memory-only arbiter. */
  dataDir?: string;
  /** Port on 127.0.0.1; 0 (default) picks a free one. Pass the old port to restart in place. */
  port?: number;
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

/** Spawns `edgeq arbiter` and waits for its listening line. */
export function spawnArbiter(options: SpawnArbiterOptions = {}): Promise<ArbiterProcess> {
  const args = [BIN, 'arbiter', '--port', String(options.port ?? 0), ...(options.dataDir ? ['--data-dir', options.dataDir] : [])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS_DEFAULT;
  return new Promise<ArbiterProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`arbiter did not start within ${startTimeoutMs} ms`));
    }, startTimeoutMs);
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
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
      } catch {
        // not our line
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`arbiter exited with ${code} before listening`));
    });
  });
}
