// Proves, with real processes (`edgeq broker` with TLS and auth, `edgeq gateway` with --tls-cert/--tls-key and --brokers-tls-*), that the gateway serves HTTPS only (a plaintext request gets no HTTP answer), reaches a TLS broker with auth on as an internal certificate identity (a produce through it is written), and that replacing its certificate files switches new handshakes to the new certificate while a keep-alive connection opened before keeps working; and with --tls-ca and --tls-client-auth required, a client without a certificate is refused.
import { createHash } from 'node:crypto';
import { copyFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { TestCa, type Issued } from '../helpers/test-ca.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const sha = (k: string) => createHash('sha256').update(k).digest('hex');

let ca: TestCa;
let broker: BrokerProcess;
let gateway: EdgeqProcess;
let after: Issued;
let certFile: string;
let keyFile: string;

beforeAll(async () => {
  ca = await TestCa.create('edgeq gateway CA');
  const brokerCert = await ca.server('broker-1');
  const gwClient = await ca.client('gateway-us');
  const before = await ca.server('gw-before');
  after = await ca.server('gw-after');
  certFile = join(ca.dir, 'gw-live.crt.pem');
  keyFile = join(ca.dir, 'gw-live.key.pem');
  await copyFile(before.certFile, certFile);
  await copyFile(before.keyFile, keyFile);
  const keys = join(ca.dir, 'keys.json');
  await writeFile(keys, JSON.stringify({ keys: [{ sha256: sha('k-x'), tenant: 'x', grants: [] }], certificates: [{ identity: 'gateway-*', role: 'internal' }] }));
  broker = await spawnBroker({
    dataDir: await tempDir(),
    args: ['--auth-keys', keys, '--tls-cert', brokerCert.certFile, '--tls-key', brokerCert.keyFile, '--tls-ca', ca.caFile, '--tls-client-auth', 'optional'],
  });
  gateway = await spawnListening('gateway', [
    'gateway', '--brokers', `127.0.0.1:${broker.port}`, '--port', '0', '--no-auth',
    '--tls-cert', certFile, '--tls-key', keyFile,
    '--brokers-tls-ca', ca.caFile, '--brokers-tls-cert', gwClient.certFile, '--brokers-tls-key', gwClient.keyFile,
  ]);
}, 60_000);

afterAll(async () => {
  await gateway?.kill();
  await broker?.kill();
  await cleanupTempDirs();
});

/** One HTTPS request; resolves with the status, body, whether the agent reused a socket, and the server certificate's CN. */
function call(agent: Agent, method: string, path: string, body?: unknown): Promise<{ status: number; body: string; reused: boolean; cn: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.port, method, path, agent, ca: ca.cert, headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      // Read now: a keep-alive socket goes back to the agent (res.socket null) once the body ended.
      const cert = (res.socket as unknown as { getPeerCertificate(): { subject: { CN: string } } }).getPeerCertificate();
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, reused: req.reusedSocket, cn: String(cert.subject.CN) }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(JSON.stringify(body));
    req.end();
  });
}

/** The CN a fresh TLS handshake with the gateway presents. */
function freshCn(): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: gateway.port, ca: ca.cert, servername: 'localhost' }, () => {
      const cn = String(s.getPeerCertificate().subject.CN);
      s.destroy();
      resolve(cn);
    });
    s.on('error', reject);
  });
}

describe('gateway HTTPS', () => {
  it('serves HTTPS and produces through a TLS broker with auth on', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const created = await call(agent, 'POST', '/v1/topics', { name: 'orders', partitions: 1 });
      expect(created.status).toBe(201);
      const produced = await call(agent, 'POST', '/v1/topics/orders/records', { records: [{ value: 'over tls' }] });
      expect(produced.status).toBe(200);
      expect(JSON.parse(produced.body)).toMatchObject({ offsets: [{ partition: 0, offset: 0 }] });
    } finally {
      agent.destroy();
    }
  }, 30_000);

  it('gives a plaintext HTTP request no answer', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: gateway.port, path: '/healthz', timeout: 5_000 }, (res) => resolve(`status ${res.statusCode}`));
      req.on('error', (e) => resolve(`error ${e.message}`));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
    expect(outcome).toMatch(/^error/);
  });

  it('switches to a new certificate for new handshakes without dropping an open connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await call(agent, 'GET', '/healthz');
      expect([first.status, first.cn]).toEqual([200, 'gw-before']);
      await writeFile(keyFile, after.key);
      await writeFile(certFile, after.cert);
      // The gateway watches the folder (200 ms debounce) with a 5 s poll beside it: a fresh
      // handshake every 100 ms sees the new certificate within ~0.3 s, 10 s at most on a loaded machine.
      let cn = await freshCn();
      for (let i = 0; i < 100 && cn !== 'gw-after'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        cn = await freshCn();
      }
      expect(cn).toBe('gw-after');
      // The connection opened before the reload still carries requests, with its old certificate.
      const again = await call(agent, 'GET', '/healthz');
      expect(again).toMatchObject({ status: 200, reused: true, cn: 'gw-before' });
    } finally {
      agent.destroy();
    }
  }, 30_000);
});

describe('gateway HTTPS with client certificates required', () => {
  it('refuses a client without a certificate and serves one with a certificate of the CA', async () => {
    const cert = await ca.server('gw-mtls');
    const client = await ca.client('someone');
    const gw = await spawnListening('gateway', ['gateway', '--brokers', `127.0.0.1:${broker.port}`, '--port', '0', '--no-auth', '--tls-cert', cert.certFile, '--tls-key', cert.keyFile, '--tls-ca', ca.caFile, '--tls-client-auth', 'required', '--brokers-tls-ca', ca.caFile]);
    try {
      const get = (opts: { cert?: string; key?: string }) =>
        new Promise<string>((resolve) => {
          const req = request({ host: '127.0.0.1', port: gw.port, path: '/healthz', ca: ca.cert, agent: false, timeout: 5_000, ...opts }, (res) => resolve(`status ${res.statusCode}`));
          req.on('error', (e) => resolve(`error ${e.message}`));
          req.on('timeout', () => req.destroy(new Error('timeout')));
          req.end();
        });
      expect(await get({})).toMatch(/^error/);
      expect(await get({ cert: client.cert, key: client.key })).toBe('status 200');
    } finally {
      await gw.kill();
    }
  }, 30_000);
});
