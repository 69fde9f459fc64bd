// Proves `edgeq dev --keys FILE` runs the gateways with that API keys file (the ready line says
// auth: true, a request without a key is 401, a tenant's key is let in) and passes the supervisor's
// environment (EDGEQ_LIMITER*, EDGEQ_TENANT_WEIGHTS) to its gateways; and that a keys file that is
// missing or malformed stops start-up with INVALID_CONFIG naming --keys, with nothing listening.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/gateway/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
const run = promisify(execFile);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(true));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
  });
}

/** Runs `edgeq dev` expecting it to refuse: its exit code and stderr. */
async function devRefused(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, [BIN, 'dev', ...args], { env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn', ...env }, timeout: 30_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('edgeq dev --keys', () => {
  it('refuses a missing or malformed keys file before anything starts', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dir = await tempDir('edgeq-dev-keys-bad-');
    const malformed = join(dir, 'malformed.json');
    await writeFile(malformed, JSON.stringify({ keys: [{ sha256: 'not-hex', tenant: 'a', grants: [] }] }));
    const notJson = join(dir, 'not-json.json');
    await writeFile(notJson, 'keys: yes');
    const ports = ['--regions', '1', '--brokers-per-region', '1', '--port', String(base), '--arbiter-port', String(base + 20), '--control-port', String(base + 30), '--broker-port', String(base + 40)];
    const env = { EDGEQ_MESH_PORT: String(base + 10), EDGEQ_ADMIN_PORT: String(base + 70) };
    const cases: [string, RegExp][] = [
      [join(dir, 'absent.json'), /--keys: keys file .*absent\.json could not be read as JSON: ENOENT/],
      [notJson, /--keys: keys file .*not-json\.json could not be read as JSON/],
      [malformed, /--keys: keys file: keys\.0\.sha256: sha256 must be 64 hex characters/],
    ];
    for (const [file, message] of cases) {
      const r = await devRefused(['--data-dir', join(dir, 'data'), ...ports, '--keys', file], env);
      expect(r.code, file).toBe(2);
      expect(r.stderr, file).toMatch(/INVALID_CONFIG/);
      expect(r.stderr, file).toMatch(message);
    }
    for (const p of [base, base + 10, base + 20, base + 30, base + 40, base + 70]) expect(await listening(p), `port ${p}`).toBe(false);
  }, 120_000);

  it('runs the gateways with the keys file and the supervisor environment', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dir = await tempDir('edgeq-dev-keys-');
    const keys = join(dir, 'keys.json');
    const grants = [{ topic: '*', actions: ['read', 'write', 'admin'] }];
    await writeFile(keys, JSON.stringify({ keys: ['a', 'b'].map((t) => ({ sha256: hashApiKey(`key-${t}`).toString('hex'), tenant: t, grants })) }));
    const dev = startDevRegions(join(dir, 'data'), base, {
      regions: '1',
      brokersPerRegion: 1,
      args: ['--keys', keys],
      env: { EDGEQ_LIMITER: 'seeds', EDGEQ_LIMITER_TARGET_P99_MS: '12', EDGEQ_TENANT_WEIGHTS: 'a=1,b=2' },
    });
    const ready = await dev.ready;
    expect(ready.auth).toBe(true);
    const gw = ready.processes.find((p) => p.role === 'gateway')!;
    // What the gateway process was started with: the limiter settings reach it unchanged.
    const environ = (await readFile(`/proc/${gw.pid}/environ`, 'utf8')).split('\0');
    expect(environ).toEqual(expect.arrayContaining(['EDGEQ_LIMITER=seeds', 'EDGEQ_LIMITER_TARGET_P99_MS=12', 'EDGEQ_TENANT_WEIGHTS=a=1,b=2']));
    const argv = (await readFile(`/proc/${gw.pid}/cmdline`, 'utf8')).split('\0');
    expect(argv).toContain('--keys');
    expect(argv).not.toContain('--no-auth');

    const noKey = await fetch(`${ready.gateway}/v1/topics`, { signal: AbortSignal.timeout(5_000) });
    expect(noKey.status).toBe(401);
    const wrongKey = await fetch(`${ready.gateway}/v1/topics`, { headers: { authorization: 'Bearer key-z' }, signal: AbortSignal.timeout(5_000) });
    expect(wrongKey.status).toBe(401);
    const withKey = await fetch(`${ready.gateway}/v1/topics`, { headers: { authorization: 'Bearer key-b' }, signal: AbortSignal.timeout(5_000) });
    expect(withKey.status).toBe(200);
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  }, 180_000);
});
