/**
 * Starts real embedded arbiter processes (`edgeq arbiter`) for contract, crash and restart tests,
 * and stops them by signal. The arbiter prints one JSON "listening" line on stdout; that line, not
 * a sleep, says it is ready.
 */
import { spawnListening, type EdgeqProcess } from './spawn-listening.ts';

/** Start-up deadline: tsx compiles the sources on first run, which takes a few seconds on 2 cores. */
const START_TIMEOUT_MS_DEFAULT = 20_000;

/** A running arbiter process. */
export type ArbiterProcess = EdgeqProcess;

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
  const args = ['arbiter', '--port', String(options.port ?? 0), ...(options.dataDir ? ['--data-dir', options.dataDir] : [])];
  return spawnListening('arbiter', args, { ...(options.env ? { env: options.env } : {}), startTimeoutMs: options.startTimeoutMs ?? START_TIMEOUT_MS_DEFAULT });
}
