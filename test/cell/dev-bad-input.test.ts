// Proves that `edgeq dev` refuses a bad shape before it starts anything: unknown or invalid
// regions, duplicates, bad counts, colliding ports and a port already in use each exit with a
// clear INVALID_CONFIG message, and no port of the deployment is listening afterwards.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freeRange } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
const run = promisify(execFile);

afterAll(cleanupTempDirs);

async function dev(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, [BIN, 'dev', ...args], { env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn', ...env }, timeout: 30_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(true));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
  });
}

describe('edgeq dev bad input', () => {
  it('exits with INVALID_CONFIG, naming the problem, and starts nothing', async () => {
    const base = await freeRange(100);
    const dataDir = await tempDir('edgeq-dev-bad-');
    const ports = ['--port', String(base), '--arbiter-port', String(base + 20), '--control-port', String(base + 30), '--broker-port', String(base + 40)];
    const env = { EDGEQ_MESH_PORT: String(base + 10), EDGEQ_ADMIN_PORT: String(base + 70) };
    const cases: [string[], RegExp][] = [
      [['--regions', 'us-east,us-east'], /names "us-east" twice/],
      [['--regions', 'us-east,Tokyo'], /"Tokyo" is not a valid site name/],
      [['--regions', '11'], /count must be 1\.\.10/],
      [['--regions', '0'], /count must be 1\.\.10/],
      [['--brokers-per-region', '12'], /brokers-per-region/],
      [['--wan-latency-ms', 'soon'], /wan-latency-ms/],
      // Three regions' gateways on base..base+2 collide with a control API on base+2.
      [['--control-port', String(base + 2)], /both listen on port/],
    ];
    for (const [args, message] of cases) {
      const r = await dev(['--data-dir', dataDir, ...ports, ...args], env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/INVALID_CONFIG/);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    // A port someone else holds (the second region's gateway): refused before anything starts.
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(base + 1, '127.0.0.1', resolve));
    try {
      const r = await dev(['--data-dir', dataDir, ...ports], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`port ${base + 1} \\(eu-west's gateway\\) is in use`));
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
    for (const p of [base, base + 10, base + 20, base + 30, base + 40, base + 50, base + 70]) expect(await listening(p), `port ${p}`).toBe(false);
  }, 120_000);
});
