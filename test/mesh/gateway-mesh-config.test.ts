// Proves a gateway refuses a bad mesh configuration at start-up, before serving anything: no key,
// a key shorter than 32 bytes, a bad mesh port, region, seed or address map each exit with a
// clear INVALID_CONFIG naming it; and that a gateway with a mesh serves metrics promtool accepts.
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/testing/index.ts';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
const run = promisify(execFile);
const KEY = Buffer.alloc(32, 3).toString('base64');
const PROMTOOL = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;

const procs: (EdgeqProcess | BrokerProcess)[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  await cleanupTempDirs();
});

async function gateway(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, [BIN, 'gateway', '--brokers', '127.0.0.1:1', '--port', '0', '--no-auth', ...args], { env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn', ...env }, timeout: 30_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

describe('gateway mesh configuration', () => {
  it('refuses a missing or short key and bad mesh settings with INVALID_CONFIG', async () => {
    const port = String(await freePort());
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--mesh-port', port], { EDGEQ_MESH_KEY: '' }, /needs a key: set EDGEQ_MESH_KEY/],
      [['--mesh-port', port], { EDGEQ_MESH_KEY: Buffer.alloc(16, 1).toString('base64') }, /32/],
      [['--mesh-port', '70000'], { EDGEQ_MESH_KEY: KEY }, /--mesh-port must be a port/],
      [['--mesh-port', port, '--region', 'EU West'], { EDGEQ_MESH_KEY: KEY }, /not a valid site name/],
      [['--mesh-port', port, '--mesh-seeds', 'nowhere'], { EDGEQ_MESH_KEY: KEY }, /"nowhere" is not host:port/],
      [['--mesh-port', port], { EDGEQ_MESH_KEY: KEY, EDGEQ_MESH_ADDRESS_MAP: '{"udp":' }, /EDGEQ_MESH_ADDRESS_MAP is not JSON/],
      [['--mesh-port', port], { EDGEQ_MESH_KEY: KEY, EDGEQ_MESH_ADDRESS_MAP: '{"tcp":{"a:1":7}}' }, /EDGEQ_MESH_ADDRESS_MAP\.tcp/],
    ];
    for (const [args, env, message] of cases) {
      const r = await gateway(args, env);
      expect(r.code, `${args.join(' ')} ${JSON.stringify(env)}`).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/INVALID_CONFIG/);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  }, 120_000);

  it.skipIf(!PROMTOOL)('serves mesh metrics that promtool accepts', async () => {
    const broker = await spawnBroker({ dataDir: await tempDir('edgeq-meshcfg-') });
    procs.push(broker);
    const g = await spawnListening('gateway', ['gateway', '--brokers', `127.0.0.1:${broker.port}`, '--port', '0', '--no-auth', '--region', 'solo', '--mesh-port', String(await freePort())], { env: { EDGEQ_MESH_KEY: KEY } });
    procs.push(g);
    const text = await (await fetch(`http://127.0.0.1:${g.port}/metrics`)).text();
    for (const name of ['edgeq_mesh_members', 'edgeq_mesh_drops_total', 'edgeq_mesh_probe_rtt_seconds']) expect(text).toContain(name);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`.trim(), 'promtool findings').toBe('');
    expect(check.status).toBe(0);
  }, 60_000);
});
