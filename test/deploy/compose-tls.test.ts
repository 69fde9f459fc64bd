// Proves the compose deployment's security as written, with real processes and no Docker: the
// `certs` service's script (deploy/compose/certs/gen-certs.sh, run here with the machine's openssl)
// writes every file compose.yaml names, chained to the right CA with the usages each link needs and
// the CNs the broker keys files map; and one region started from compose.yaml's own commands (etcd
// over mutual TLS, 3 brokers with --auth-keys and TLS, a gateway over HTTPS reaching them over mTLS
// with its mesh on TLS) works: acks=all records through HTTPS (followers prove they are brokers by
// the generated certificates), a binary client without credentials is refused, and the preStop's
// `edgeq handoff` reaches etcd with the brokers' EDGEQ_ETCD_* and not without them.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createClient } from '../../src/client/index.ts';
import { FileTlsMaterial } from '../../src/tls/index.ts';
import { etcdAvailable, startEtcd, type EtcdCluster } from '../helpers/etcd.ts';
import { freePort } from '../helpers/ports.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const composeDir = join(repo, 'deploy/compose');
const BIN = join(repo, 'bin/edgeq.js');
const REGIONS = ['us-east', 'eu-west', 'ap-south'];
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
/** The demo key of deploy/compose/keys.json (docs/deploy.md). */
const DEMO_KEY = 'edgeq-compose-demo-key';
/** Starting a broker: tsx compiles the sources when dist is stale (seconds on 2 loaded cores), then etcd and the cell. */
const START_MS = 60_000;

const hasOpenssl = await run('openssl', ['version']).then(
  () => true,
  () => false,
);

const procs: EdgeqProcess[] = [];
let etcd: EtcdCluster | undefined;
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await etcd?.stop();
  await cleanupTempDirs();
});

async function genCerts(extraSans?: string): Promise<string> {
  const dir = await tempDir('edgeq-compose-certs-');
  await run('sh', [join(composeDir, 'certs/gen-certs.sh'), dir], { env: { ...process.env, ...(extraSans ? { EDGEQ_CERT_EXTRA_SANS: extraSans } : {}) }, timeout: 60_000 });
  return dir;
}

const cert = async (dir: string, name: string) => new X509Certificate(await readFile(join(dir, `${name}.crt`)));
const cn = (c: X509Certificate) => /^CN=(.*)$/m.exec(c.subject)![1]!;

/** compose.yaml, merged (the anchors resolved). */
async function compose(): Promise<{ services: Record<string, any> }> {
  return parseYaml(await readFile(join(composeDir, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, any> };
}

describe.skipIf(!hasOpenssl)('the compose certs service', () => {
  it('writes every certificate compose.yaml names, under the right CA, with the usages and identities the links need', async () => {
    const dir = await genCerts();
    const text = await readFile(join(composeDir, 'compose.yaml'), 'utf8');
    const named = [...new Set([...text.matchAll(/\/certs\/([\w.-]+\.(?:crt|key))/g)].map((m) => m[1]!))];
    // 9 etcd + 9 brokers + 3 gateways + 3 mesh certificates and keys, and the two CAs.
    expect(named.length).toBe(2 * 24 + 2);
    const files = new Set(await readdir(dir));
    expect(named.filter((f) => !files.has(f))).toEqual([]);
    // The CAs' keys are gone once the set is made: nothing more is issued from them.
    expect(files.has('ca.key') || files.has('mesh-ca.key')).toBe(false);
    const ca = await cert(dir, 'ca');
    const meshCa = await cert(dir, 'mesh-ca');
    expect(ca.ca && meshCa.ca).toBe(true);
    for (const r of REGIONS) {
      const keys = JSON.parse(await readFile(join(composeDir, `keys/broker-${r}.json`), 'utf8')) as { certificates: { identity: string; role: string }[] };
      const role = (id: string) => keys.certificates.find((c) => c.identity === id)?.role ?? keys.certificates.find((c) => c.identity.endsWith('*') && id.startsWith(c.identity.slice(0, -1)))?.role;
      for (const n of [1, 2, 3]) {
        const b = await cert(dir, `${r}-broker-${n}`);
        expect(b.verify(ca.publicKey) && b.checkIssued(ca)).toBe(true);
        expect(b.keyUsage).toEqual(expect.arrayContaining([SERVER_AUTH, CLIENT_AUTH]));
        expect(b.subjectAltName).toContain(`DNS:${r}-broker-${n}`);
        // The region's keys file makes its own brokers brokers (replica fetches)...
        expect(role(cn(b))).toBe('broker');
        // ...and no other region's.
        for (const other of REGIONS.filter((x) => x !== r)) {
          const otherKeys = JSON.parse(await readFile(join(composeDir, `keys/broker-${other}.json`), 'utf8')) as { certificates: { identity: string; role: string }[] };
          expect(otherKeys.certificates.some((c) => c.role === 'broker' && cn(b).startsWith(c.identity.replace(/\*$/, '')))).toBe(false);
        }
        const e = await cert(dir, `${r}-etcd-${n}`);
        expect(e.checkIssued(ca) && e.verify(ca.publicKey)).toBe(true);
        expect(e.subjectAltName).toContain(`DNS:${r}-etcd-${n}`);
        expect(e.keyUsage).toEqual(expect.arrayContaining([SERVER_AUTH, CLIENT_AUTH]));
      }
      const g = await cert(dir, `${r}-gateway`);
      expect(g.verify(ca.publicKey)).toBe(true);
      expect(g.subjectAltName).toContain(`DNS:${r}-gateway`);
      // Every region's brokers take every gateway as internal (the exchange fetches across regions).
      for (const other of REGIONS) {
        const otherKeys = JSON.parse(await readFile(join(composeDir, `keys/broker-${other}.json`), 'utf8')) as { certificates: { identity: string; role: string }[] };
        expect(otherKeys.certificates.find((c) => c.identity === cn(g))?.role).toBe('internal');
      }
      const m = await cert(dir, `${r}-gateway-mesh`);
      expect(m.verify(meshCa.publicKey)).toBe(true);
      expect(m.verify(ca.publicKey)).toBe(false);
      expect(m.keyUsage).toEqual(expect.arrayContaining([SERVER_AUTH, CLIENT_AUTH]));
    }
    // Run again on the same folder: the set is kept (a restart must not change the CA).
    const before = await readFile(join(dir, 'ca.crt'), 'utf8');
    const again = await run('sh', [join(composeDir, 'certs/gen-certs.sh'), dir], { timeout: 60_000 });
    expect(again.stdout).toMatch(/keeping them/);
    expect(await readFile(join(dir, 'ca.crt'), 'utf8')).toBe(before);
  });
});

/** `cmd` with compose's container paths, names and ports replaced by this machine's. */
function localize(cmd: string[], map: Record<string, string>, drop: string[] = []): string[] {
  const out: string[] = [];
  for (let i = 0; i < cmd.length; i++) {
    if (drop.includes(cmd[i]!)) {
      i++;
      continue;
    }
    const flag = cmd[i - 1];
    const v = flag !== undefined && map[flag] !== undefined && !cmd[i]!.startsWith('--') ? map[flag]! : cmd[i]!;
    out.push(v.replace(/^\/certs\//, `${map['/certs/']}/`));
  }
  return out;
}

/** GET/POST over HTTPS trusting `ca`. */
function https(url: string, ca: Buffer, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const req = request(url, { method: init.method ?? 'GET', ca, headers: { 'x-api-key': DEMO_KEY, ...(body ? { 'content-type': 'application/json' } : {}) }, timeout: 30_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    });
    req.once('timeout', () => req.destroy(new Error(`${url}: no answer in 30 s`)));
    req.once('error', reject);
    req.end(body);
  });
}

describe.skipIf(!hasOpenssl || !etcdAvailable())('a compose region, started from compose.yaml\'s commands on this machine', () => {
  it('etcd, brokers and the gateway run with auth and TLS on the generated certificates; acks=all through HTTPS; no credentials refused; handoff reaches etcd', async () => {
    const dir = await genCerts('IP:127.0.0.1');
    const svc = (await compose()).services;
    const r = 'us-east';
    etcd = await startEtcd({ tls: { certFile: join(dir, `${r}-etcd-1.crt`), keyFile: join(dir, `${r}-etcd-1.key`), caFile: join(dir, 'ca.crt') } });
    const endpoint = etcd.endpoints[0]!.replace(/^https?:\/\//, '');

    const brokerPorts = [await freePort(), await freePort(), await freePort()];
    const brokers = await Promise.all(
      [1, 2, 3].map(async (n) => {
        const s = svc[`${r}-broker-${n}`];
        const args = localize(s.command, {
          '--host': '127.0.0.1',
          '--port': String(brokerPorts[n - 1]),
          '--admin-port': String(await freePort()),
          '--admin-host': '127.0.0.1',
          '--data-dir': await tempDir(`edgeq-compose-b${n}-`),
          '--arbiter-endpoints': endpoint,
          '--auth-keys': join(composeDir, `keys/broker-${r}.json`),
          '/certs/': dir,
        });
        expect(args).toContain('--auth-keys');
        const env = Object.fromEntries(Object.entries(s.environment as Record<string, string>).map(([k, v]) => [k, v.replace(/^\/certs\//, `${dir}/`)]));
        const p = await spawnListening('broker', args, { env, startTimeoutMs: START_MS });
        procs.push(p);
        return p;
      }),
    );
    expect(brokers).toHaveLength(3);

    const g = svc[`${r}-gateway`];
    const gwArgs = localize(
      g.command,
      {
        '--brokers': brokerPorts.map((p) => `127.0.0.1:${p}`).join(','),
        '--host': '127.0.0.1',
        '--port': '0',
        '--keys': join(composeDir, 'keys.json'),
        '--mesh-port': String(await freePort()),
        '/certs/': dir,
      },
      // No other region here: the mesh runs alone, advertising its own address.
      ['--mesh-seeds', '--mesh-advertise'],
    );
    const gateway = await spawnListening('gateway', gwArgs, { env: { EDGEQ_MESH_KEY: Buffer.alloc(32, 7).toString('base64') }, startTimeoutMs: START_MS });
    procs.push(gateway);

    const ca = await readFile(join(dir, 'ca.crt'));
    const base = `https://127.0.0.1:${gateway.port}`;
    // Plain HTTP on the gateway's port is not served.
    await expect(fetch(`http://127.0.0.1:${gateway.port}/healthz`, { signal: AbortSignal.timeout(10_000) })).rejects.toThrow();
    const created = await https(`${base}/v1/topics`, ca, { method: 'POST', body: { name: 'secured', partitions: 2, replicationFactor: 3 } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // acks=all: the followers fetched over TLS with their generated certificates, mapped to role broker.
    const produced = await https(`${base}/v1/topics/secured/records?acks=all`, ca, { method: 'POST', body: { records: [{ value: 'a', partition: 0 }, { value: 'b', partition: 1 }] } });
    expect(produced.status, JSON.stringify(produced.body)).toBe(200);
    const read = await https(`${base}/v1/topics/secured/partitions/0/records?offset=0&waitMs=0`, ca);
    expect(read.body.records.map((x: { value: string }) => x.value)).toEqual(['a']);

    // A binary client over TLS without a key or a certificate is refused; with the demo key it is served.
    const tls = await FileTlsMaterial.load({ caFile: join(dir, 'ca.crt') }, { watch: false });
    const anon = createClient({ brokers: [`127.0.0.1:${brokerPorts[0]}`], tls });
    await expect(anon.admin().listTopics()).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await anon.close();
    const ops = createClient({ brokers: [`127.0.0.1:${brokerPorts[0]}`], tls, apiKey: DEMO_KEY });
    expect(await ops.admin().listTopics()).toContain('secured');
    await ops.close();
    tls.close();

    // The preStop's handoff: the broker container's environment (EDGEQ_ETCD_*) is what reaches etcd.
    const brokerEnv = Object.fromEntries(Object.entries(svc[`${r}-broker-1`].environment as Record<string, string>).map(([k, v]) => [k, v.replace(/^\/certs\//, `${dir}/`)]));
    const arbiterEnv = { EDGEQ_ARBITER: 'etcd', EDGEQ_ARBITER_ENDPOINTS: endpoint, EDGEQ_CELL__ID: r };
    const handoff = await run(process.execPath, [BIN, 'handoff', '--broker-id', '1', '--wait-ms', '20000'], { env: { ...process.env, ...brokerEnv, ...arbiterEnv }, timeout: START_MS });
    expect(JSON.parse(handoff.stdout.trim().split('\n').at(-1)!)).toMatchObject({ complete: true });
    const { EDGEQ_ETCD_CA: _ca, EDGEQ_ETCD_CERT: _c, EDGEQ_ETCD_KEY: _k, ...noTls } = brokerEnv;
    const plain = await run(process.execPath, [BIN, 'handoff', '--broker-id', '1', '--wait-ms', '2000'], { env: { ...process.env, ...noTls, ...arbiterEnv }, timeout: START_MS }).then(
      () => null,
      (e: { code: number }) => e,
    );
    expect(plain?.code).toBeGreaterThan(0);
  });
});
