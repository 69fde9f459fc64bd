/**
 * For the CLI's tests: runs `edgeq …` in this process (runCli) with stdout and stderr captured, so
 * a test sees the exit code, the result and the typed error lines without a child process.
 */
import { vi } from 'vitest';
import { runCli } from './main.ts';

/** Runs the CLI, capturing what it writes to stdout and stderr. */
export async function runCliCaptured(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err.push(String(chunk));
    return true;
  });
  try {
    const code = await runCli(argv);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

/**
 * Starts `edgeq gateway` with `args` after the minimal flags (a broker nobody listens on, any
 * port, no auth) and returns its stderr, having checked that it stopped with exit code 2 (a
 * typed start-up error) before opening anything.
 */
export async function gatewayRefusal(args: string[]): Promise<string> {
  const run = await runCliCaptured(['gateway', '--brokers', '127.0.0.1:1', '--port', '0', '--no-auth', ...args]);
  if (run.code !== 2) throw new Error(`edgeq gateway ${args.join(' ')} exited with ${run.code}, not 2: ${run.stderr}`);
  return run.stderr;
}
