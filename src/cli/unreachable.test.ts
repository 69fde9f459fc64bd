// Proves that a CLI command against a broker that does not answer exits 2 with the typed error,
// as a real process: the client's retry timers do not hold the process open, and before the CLI
// kept itself alive the process ended with Node's exit code 13 and no word.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('the CLI against a broker that does not answer', () => {
  for (const args of [['produce', 'demo', '--value', 'x'], ['topics', 'list']]) {
    it(`edgeq ${args.join(' ')} exits 2 with BROKER_NOT_AVAILABLE`, async () => {
      const port = await closedPort();
      const { code, stderr } = await run([...args, '--brokers', `127.0.0.1:${port}`]);
      expect(stderr).toContain('BROKER_NOT_AVAILABLE');
      expect(code).toBe(2);
    }, 30_000);
  }
});
