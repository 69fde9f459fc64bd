/**
 * Spawns an `edgeq` subcommand as a real child process and waits for the one JSON "listening"
 * line it prints on stdout when ready (the line, not a sleep, says it is ready).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { serviceNodeFlags } from '../../src/cli/supervisor.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
/** tsx compiles the sources on first run, which takes a few seconds on 2 cores. */
const START_TIMEOUT_MS_DEFAULT = 20_000;

/** A running edgeq process. */
export interface EdgeqProcess {
  pid: number;
  port: number;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string>;
  /** Sends `signal` (SIGTERM by default) unless already gone, and resolves when it has exited. */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Runs `edgeq <args>` and resolves once it printed `{"event":"listening","port":…}`. */
export function spawnListening(name: string, args: string[], options: { env?: Record<string, string>; startTimeoutMs?: number } = {}): Promise<EdgeqProcess> {
  // The V8 flags `edgeq dev` gives its services, so tests and benchmarks run brokers as deployed.
  const child = spawn(process.execPath, [...serviceNodeFlags, BIN, ...args], {
    env: { ...process.env, EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS_DEFAULT;
  return new Promise<EdgeqProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${startTimeoutMs} ms`));
    }, startTimeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
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
      reject(new Error(`${name} exited with ${code} before listening`));
    });
  });
}
