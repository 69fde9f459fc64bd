// Proves the gateway's mesh TLS end to end with real processes: two gateways with certificates
// of the mesh CA (one with --mesh-tls-cert/--mesh-tls-key, one reusing its HTTPS --tls-cert and
// --tls-key) form a mesh over mutual TLS; a gateway with the mesh key but no mesh certificate
// cannot join (its push-pulls are refused and counted as edgeq_mesh_drops_total{reason="tls-refused"},
// it never appears in a view); and bad mesh security flags stop a gateway at start-up with
// INVALID_CONFIG naming the flag.
import { get as httpsGet } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitFor } from '../../src/testing/index.ts';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { runEdgeq } from '../helpers/cli.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { TestCa, type Issued } from '../helpers/test-ca.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const KEY = Buffer.alloc(32, 5).toString('base64');
/** Joining takes a push-pull (~10 ms) once both processes run; 30 s covers tsx start-up on a loaded 2-core machine. */
const JOIN_MS = 30_000;

const procs: (EdgeqProcess | BrokerProcess)[] = [];
let ca: TestCa;
let certA: Issued;
let certB: Issued;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  await cleanupTempDirs();
});
beforeAll(async () => {
  ca = await TestCa.create('mesh CA');
  certA = await ca.server('region-a');
  certB = await ca.server('region-b');
});

/** GET a JSON document over http or https (trusting the mesh CA). */
function getJson<T>(url: string): Promise<T> {
  if (url.startsWith('http:')) return fetch(url).then((r) => r.json() as Promise<T>);
  return new Promise((resolve, reject) => {
    httpsGet(url, { ca: ca.cert, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as T);
        } catch (err) {
          reject(err);
        }
      });
    }).on('error', reject);
  });
}

interface MeshView {
  members: { member: string; state: string }[];
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const m = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

describe('gateway mesh over mutual TLS', () => {
  it('two gateways with mesh certificates form a mesh; one without cannot join and is counted', async () => {
    const broker = await spawnBroker({ dataDir: await tempDir('edgeq-meshtls-') });
    procs.push(broker);
    const [meshA, meshB, meshC] = [await freePort(), await freePort(), await freePort()];
    const base = (member: string, meshPort: number, seeds: number[]) => ['gateway', '--brokers', `127.0.0.1:${broker.port}`, '--port', '0', '--no-auth', '--region', member, '--member', member, '--mesh-port', String(meshPort), '--mesh-seeds', seeds.map((p) => `127.0.0.1:${p}`).join(',')];
    const env = { EDGEQ_MESH_KEY: KEY };
    // a: its own mesh certificate. b: HTTPS on, and the mesh reuses that certificate (only the mesh CA is given).
    const a = await spawnListening('gateway', [...base('region-a', meshA, [meshB]), '--mesh-tls-ca', ca.caFile, '--mesh-tls-cert', certA.certFile, '--mesh-tls-key', certA.keyFile], { env, startTimeoutMs: JOIN_MS });
    procs.push(a);
    const b = await spawnListening('gateway', [...base('region-b', meshB, [meshA]), '--tls-cert', certB.certFile, '--tls-key', certB.keyFile, '--mesh-tls-ca', ca.caFile], { env, startTimeoutMs: JOIN_MS });
    procs.push(b);
    const urlA = `http://127.0.0.1:${a.port}`;
    const urlB = `https://127.0.0.1:${b.port}`;
    const alive = async (url: string, member: string) => (await getJson<MeshView>(`${url}/v1/mesh`)).members.find((m) => m.member === member)?.state === 'alive';
    await waitFor('a and b to see each other alive over the TLS mesh', JOIN_MS, async () => ((await alive(urlA, 'region-b')) && (await alive(urlB, 'region-a')) ? true : undefined), 200);
    expect(await metric(`${urlA}/metrics`, 'edgeq_mesh_drops_total{reason="tls-refused"}')).toBe(0);

    // c has the mesh key but no mesh certificate: its join (a push-pull to a) is refused by TLS.
    const c = await spawnListening('gateway', base('region-c', meshC, [meshA]), { env, startTimeoutMs: JOIN_MS });
    procs.push(c);
    // c retries its join with doubling waits (joinRetryMs 1 s up to 30 s): two refusals take ~1-2 s.
    await waitFor('a to count two refused handshakes', JOIN_MS, async () => ((await metric(`${urlA}/metrics`, 'edgeq_mesh_drops_total{reason="tls-refused"}')) >= 2 ? true : undefined), 200);
    for (const url of [urlA, urlB]) expect((await getJson<MeshView>(`${url}/v1/mesh`)).members.map((m) => m.member).sort()).toEqual(['region-a', 'region-b']);
    const viewC = await getJson<MeshView>(`http://127.0.0.1:${c.port}/v1/mesh`);
    expect(viewC.members.map((m) => m.member)).toEqual(['region-c']);
    expect(await metric(`http://127.0.0.1:${c.port}/metrics`, 'edgeq_mesh_push_pulls_failed_total')).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('refuses bad mesh security flags at start-up with INVALID_CONFIG naming the flag', async () => {
    const port = String(await freePort());
    const cases: [string[], RegExp][] = [
      [['--mesh-tls-cert', certA.certFile, '--mesh-tls-key', certA.keyFile], /--mesh-tls-cert\/--mesh-tls-key need --mesh-tls-ca/],
      [['--mesh-tls-ca', ca.caFile], /--mesh-tls-ca needs a certificate for this member/],
      [['--mesh-tls-ca', ca.caFile, '--mesh-tls-cert', certA.certFile], /--mesh-tls-key is needed with --mesh-tls-cert/],
      [['--mesh-tls-ca', ca.caFile, '--mesh-tls-cert', certA.certFile, '--mesh-tls-key', certB.keyFile], /does not belong to the certificate/],
      [['--mesh-mac-only', 'sometimes'], /--mesh-mac-only must be one of off, accept, send/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await runEdgeq(['gateway', '--brokers', '127.0.0.1:1', '--port', '0', '--no-auth', '--mesh-port', port, ...args], { env: { EDGEQ_LOG_LEVEL: 'warn', EDGEQ_MESH_KEY: KEY } });
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toMatch(/INVALID_CONFIG/);
      expect(stderr, args.join(' ')).toMatch(message);
    }
  }, 180_000);
});
