/**
 * Starts real broker processes (`edgeq broker`) for crash and restart tests, and stops them by
 * signal. The broker prints one JSON "listening" line on stdout; that line, not a sleep, says it
 * is ready.
 */
import { spawnListening, type EdgeqProcess } from './spawn-listening.ts';

/** A running broker process. */
export type BrokerProcess = EdgeqProcess;

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
  const extra = options.args ?? [];
  // Auth is on by default outside the local deployment; tests that do not test it say --auth none.
  const saysAuth = extra.includes('--auth') || extra.includes('--auth-keys') || options.env?.['EDGEQ_AUTH'] !== undefined || options.env?.['EDGEQ_AUTH_KEYS'] !== undefined;
  const auth = saysAuth ? [] : ['--auth', 'none'];
  const args = ['broker', '--data-dir', options.dataDir, '--port', String(options.port ?? 0), '--id', String(options.id ?? 1), ...auth, ...extra];
  return spawnListening('broker', args, { ...(options.env ? { env: options.env } : {}), startTimeoutMs: options.startTimeoutMs ?? 20_000 });
}
