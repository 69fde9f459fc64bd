/**
 * Runs the real `edgeq` command (bin/edgeq.js, dist when fresh) to its end, for tests of what it
 * refuses at start-up: its exit code and output, whether it succeeded or not.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const EDGEQ_BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

/** Default bound on one run: a refusal takes ~1 s, tsx compiling included; 30 s covers a loaded 2-core machine. */
export const CLI_RUN_MS = 30_000;

export interface CliRun {
  /** The exit code; -1 when the process was killed (by the time bound) or never started. */
  code: number;
  stdout: string;
  stderr: string;
}

/** `edgeq <args>` with `env` over this process's environment; never rejects. */
export function runEdgeq(args: readonly string[], o: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [EDGEQ_BIN, ...args], { timeout: o.timeoutMs ?? CLI_RUN_MS, env: { ...process.env, ...o.env } }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
    });
  });
}
