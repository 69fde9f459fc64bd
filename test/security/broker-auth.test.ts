// Proves binary-protocol security on a real broker over real TLS sockets: with mTLS required, a client without a certificate, with one from another CA, with an expired one, and a plaintext client are refused and nothing is written; with auth on, no credentials, a wrong key, a key without the grant, and a replica fetch from a non-broker identity are refused with typed errors, nothing is written and each refusal is counted; a granted key and a mapped certificate produce, a broker identity may fetch as a replica, a tenant lists only the topics its grants name, tenants' produces are charged to their tenant's quota whatever client id they give, and a reloaded certificate is served to new handshakes while an open connection keeps producing.
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker, type BinaryKeysFile } from '../../src/broker/index.ts';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, Connection, type ConnectionOptions } from '../../src/protocol/index.ts';
import { createHash } from 'node:crypto';
import { cleanupTempDirs, tempDir } from '../../src/testing/index.ts';
import { FileTlsMaterial, type TlsMaterial } from '../../src/tls/index.ts';
import { TestCa } from '../helpers/test-ca.ts';

const sha = (k: string) => createHash('sha256').update(k).digest('hex');

const KEYS: BinaryKeysFile = {
  keys: [
    { sha256: sha('k-acme'), tenant: 'acme', grants: [{ topic: 'orders', actions: ['read', 'write'] }] },
    { sha256: sha('k-reader'), tenant: 'reader', grants: [{ topic: 'orders', actions: ['read'] }] },
    { sha256: sha('k-admin'), tenant: 'ops', grants: [{ topic: '*', actions: ['admin', 'read', 'write'] }] },
  ],
  certificates: [
    { identity: 'broker-*', role: 'broker' },
    { identity: 'gateway-1', role: 'internal' },
    { identity: 'app-billing', tenant: 'billing', grants: [{ topic: 'orders', actions: ['write'] }] },
  ],
};

let ca: TestCa;
let other: TestCa;
const materials: TlsMaterial[] = [];
const brokers: Broker[] = [];
const conns: Connection[] = [];

/** A client material: the CA, and a certificate when given. */
async function clientMaterial(cert?: { certFile: string; keyFile: string }): Promise<TlsMaterial> {
  const m = await FileTlsMaterial.load({ caFile: ca.caFile, ...(cert ?? {}) }, { watch: false });
  materials.push(m);
  return m;
}

async function startBroker(clientAuth: 'required' | 'optional', auth: boolean): Promise<Broker> {
  const cert = await ca.server('broker-1');
  const material = await FileTlsMaterial.load({ certFile: cert.certFile, keyFile: cert.keyFile, caFile: ca.caFile }, { watch: false });
  materials.push(material);
  const b = await Broker.start({ dataDir: await tempDir(), port: 0, tls: { material, clientAuth }, ...(auth ? { auth: { keys: KEYS } } : {}) });
  brokers.push(b);
  return b;
}

async function connect(b: Broker, options: ConnectionOptions): Promise<Connection> {
  const c = await Connection.connect({ host: '127.0.0.1', port: b.port }, { connectTimeoutMs: 5_000, requestTimeoutMs: 5_000, ...options });
  conns.push(c);
  return c;
}

async function produce(c: Connection, topic = 'orders'): Promise<{ code: string | null; error: string | null }> {
  const records = await buildBatch([{ value: Buffer.from('hello') }]);
  try {
    const r = await c.request('Produce', { acks: Acks.ALL, timeoutMs: 5_000, topics: [{ name: topic, partitions: [{ partition: 0, records }] }] });
    const e = r.topics[0]!.partitions[0]!.error;
    return { code: e && e.code !== 0 ? String(e.code) : null, error: null };
  } catch (err) {
    return { code: (err as { code: string }).code, error: (err as Error).message };
  }
}

const logEnd = (b: Broker, topic = 'orders') => b.topics.partition(topic, 0).logEndOffset;

async function refusals(b: Broker, reason: string): Promise<number> {
  const text = await b.metrics.registry.metrics();
  const m = new RegExp(`^edgeq_auth_refusals_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

beforeAll(async () => {
  ca = await TestCa.create('edgeq test CA');
  other = await TestCa.create('another CA');
});

afterAll(async () => {
  for (const c of conns) c.close();
  await Promise.all(brokers.map((b) => b.close()));
  for (const m of materials) m.close();
  await cleanupTempDirs();
});

describe('mTLS required on the broker port', () => {
  let b: Broker;
  beforeAll(async () => {
    b = await startBroker('required', false);
    const admin = await connect(b, { tls: await clientMaterial(await ca.client('broker-2')) });
    const r = await admin.request('CreateTopics', { topics: [{ name: 'orders', partitions: 1, replicationFactor: 1 }] });
    expect(r.topics[0]!.error?.code ?? 0).toBe(0);
  });

  it('refuses a client without a certificate, from another CA, with an expired one, and plaintext; nothing is written', async () => {
    const before = logEnd(b);
    const noCert = await clientMaterial();
    // TLS 1.3: the server's refusal of the client certificate arrives after the client's handshake,
    // so the connect (ApiVersions) fails with the connection closed.
    await expect(connect(b, { tls: noCert })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    const foreign = await other.client('broker-9');
    await expect(connect(b, { tls: await clientMaterial(foreign) })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    // The material refuses to load an expired certificate, so it is handed to TLS as it is.
    const expired = await ca.client('broker-8', { expired: true });
    await expect(connect(b, { tls: { clientOptions: () => ({ ca: ca.cert, cert: expired.cert, key: expired.key }) } })).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    // Plaintext: the frame of an ApiVersions is not a TLS record; the broker answers no frame.
    await expect(connect(b, {})).rejects.toMatchObject({ code: expect.stringMatching(/CONNECTION_CLOSED|REQUEST_TIMED_OUT/) });
    // A raw plaintext Produce frame is never read as one either.
    const plain = await new Promise<string>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: b.port }, () => s.write(Buffer.alloc(64, 1)));
      let got = '';
      s.on('data', (d) => (got += d.toString('hex')));
      s.on('error', () => undefined);
      // Bound: the broker closes within milliseconds; 5 s on a loaded machine.
      s.setTimeout(5_000, () => s.destroy());
      s.on('close', () => resolve(got));
    });
    expect(plain.startsWith('ed')).toBe(false);
    expect(logEnd(b)).toBe(before);
    const text = await b.metrics.registry.metrics();
    expect(Number(/^edgeq_tls_handshake_failures_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0)).toBeGreaterThanOrEqual(4);
  });

  it('serves a client with a certificate of the CA', async () => {
    const c = await connect(b, { tls: await clientMaterial(await ca.client('someone')) });
    expect(await produce(c)).toEqual({ code: null, error: null });
  });
});

describe('authentication and authorization of binary clients', () => {
  let b: Broker;
  let caOnly: TlsMaterial;
  beforeAll(async () => {
    b = await startBroker('optional', true);
    caOnly = await clientMaterial();
    const admin = await connect(b, { tls: caOnly, apiKey: 'k-admin' });
    const r = await admin.request('CreateTopics', { topics: [{ name: 'orders', partitions: 1, replicationFactor: 1 }, { name: 'other', partitions: 1, replicationFactor: 1 }] });
    expect(r.topics.map((t) => t.error?.code ?? 0)).toEqual([0, 0]);
  });

  it('refuses a connection without credentials with UNAUTHENTICATED, writes nothing and counts it', async () => {
    const before = await refusals(b, 'unauthenticated');
    const c = await connect(b, { tls: caOnly });
    expect(await produce(c)).toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(c.request('Metadata', { topics: [], allTopics: true })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(logEnd(b)).toBe(0);
    expect(await refusals(b, 'unauthenticated')).toBe(before + 2);
  });

  it('refuses a wrong key at connect with UNAUTHENTICATED and counts it', async () => {
    const before = await refusals(b, 'bad_key');
    await expect(connect(b, { tls: caOnly, apiKey: 'k-wrong' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED', retriable: false });
    expect(await refusals(b, 'bad_key')).toBe(before + 1);
    expect(logEnd(b)).toBe(0);
  });

  it('refuses a key without the grant with FORBIDDEN, writes nothing and counts it', async () => {
    const before = await refusals(b, 'forbidden');
    const reader = await connect(b, { tls: caOnly, apiKey: 'k-reader' });
    expect(await produce(reader)).toMatchObject({ code: 'FORBIDDEN' });
    const acme = await connect(b, { tls: caOnly, apiKey: 'k-acme' });
    expect(await produce(acme, 'other')).toMatchObject({ code: 'FORBIDDEN' });
    await expect(acme.request('DeleteTopics', { names: ['orders'] })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(acme.request('AlterQuotas', { ops: [{ tenant: 'acme', topic: '*', remove: true }] })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(logEnd(b)).toBe(0);
    expect(logEnd(b, 'other')).toBe(0);
    expect(b.topics.get('orders')).toBeDefined();
    expect(await refusals(b, 'forbidden')).toBe(before + 4);
    // The reader may read what its grant names, and lists only the topics its grants name.
    const lo = await reader.request('ListOffsets', { topics: [{ name: 'orders', partitions: [{ partition: 0, timestamp: -1 }] }] });
    expect(lo.topics[0]!.partitions[0]!.error?.code ?? 0).toBe(0);
    const md = await reader.request('Metadata', { topics: [], allTopics: true });
    expect(md.topics.map((t) => t.name)).toEqual(['orders']);
  });

  it('shows a tenant only the committed offsets of topics it may read when it fetches a group\'s offsets without naming topics', async () => {
    const admin = await connect(b, { tls: caOnly, apiKey: 'k-admin' });
    const created = await admin.request('CreateTopics', { topics: [{ name: 'payroll', partitions: 1, replicationFactor: 1 }] });
    expect(created.topics[0]!.error?.code ?? 0).toBe(0);
    const committed = await admin.request('OffsetCommit', { groupId: 'shared', generationId: -1, memberId: '', topics: ['orders', 'payroll'].map((name) => ({ name, partitions: [{ partition: 0, offset: 0 }] })) });
    expect(committed.topics.flatMap((t) => t.partitions.map((x) => x.error?.code ?? 0))).toEqual([0, 0]);
    const all = await admin.request('OffsetFetch', { groupId: 'shared' });
    expect(all.topics.map((t) => t.name).sort()).toEqual(['orders', 'payroll']);
    // The reader's grant names orders alone: payroll's offset is not shown to it.
    const reader = await connect(b, { tls: caOnly, apiKey: 'k-reader' });
    const seen = await reader.request('OffsetFetch', { groupId: 'shared' });
    expect(seen.topics.map((t) => t.name)).toEqual(['orders']);
    // Naming the topic is refused before the coordinator is asked.
    await expect(reader.request('OffsetFetch', { groupId: 'shared', topics: [{ name: 'payroll', partitions: [0] }] })).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('refuses a replica fetch from a principal that is not a broker (a tenant key, an internal certificate); a broker certificate may', async () => {
    const before = await refusals(b, 'replica_fetch');
    const fetch = { replicaId: 2, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, topics: [{ name: 'orders', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] };
    const admin = await connect(b, { tls: caOnly, apiKey: 'k-admin' });
    await expect(admin.request('Fetch', fetch)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    const gateway = await connect(b, { tls: await clientMaterial(await ca.client('gateway-1')) });
    await expect(gateway.request('Fetch', fetch)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(gateway.request('OffsetForLeaderEpoch', { replicaId: 2, topics: [] })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await refusals(b, 'replica_fetch')).toBe(before + 3);
    // The follower's bookkeeping saw none of them: no replica 2 is known to the leader.
    const broker2 = await connect(b, { tls: await clientMaterial(await ca.client('broker-2')) });
    const ok = await broker2.request('Fetch', fetch);
    expect(ok.topics[0]!.partitions[0]!.error?.code ?? 0).not.toBe(41);
  });

  it('lets a granted key and a mapped certificate produce, and charges the tenant', async () => {
    const acme = await connect(b, { tls: caOnly, apiKey: 'k-acme' });
    expect(acme.tenant).toBe('acme');
    expect(await produce(acme)).toEqual({ code: null, error: null });
    const billing = await connect(b, { tls: await clientMaterial(await ca.client('app-billing')) });
    expect(await produce(billing)).toEqual({ code: null, error: null });
    expect(logEnd(b)).toBe(2);
    // The same quotas as the gateway's: a quota on tenant acme throttles acme's connection
    // whatever client id it gave, and not billing's.
    const admin = await connect(b, { tls: caOnly, apiKey: 'k-admin' });
    const q = await admin.request('AlterQuotas', { ops: [{ tenant: 'acme', topic: '*', recordsPerSec: 1, bytesPerSec: 1_000_000, burstRecords: 1, burstBytes: 1_000_000 }] });
    expect(q.results[0]!.error?.code ?? 0).toBe(0);
    const sneaky = await connect(b, { tls: caOnly, apiKey: 'k-acme', clientId: '__edgeq-gateway' });
    const first = await produce(sneaky);
    const second = await produce(sneaky);
    expect([first.code, second.code]).toContain(String(56));
    expect(await produce(billing)).toEqual({ code: null, error: null });
  });
});

describe('certificate reload on the broker port', () => {
  it('switches new handshakes to the new certificate while an open connection keeps serving', async () => {
    const { copyFile } = await import('node:fs/promises');
    const { connect: tlsConnect } = await import('node:tls');
    const first = await ca.server('broker-before');
    const next = await ca.server('broker-after');
    const certFile = join(ca.dir, 'broker-live.crt.pem');
    const keyFile = join(ca.dir, 'broker-live.key.pem');
    await copyFile(first.certFile, certFile);
    await copyFile(first.keyFile, keyFile);
    // No watching: the test applies the change itself (what a file event does after its debounce).
    const material = await FileTlsMaterial.load({ certFile, keyFile, caFile: ca.caFile }, { watch: false });
    materials.push(material);
    const b = await Broker.start({ dataDir: await tempDir(), port: 0, tls: { material, clientAuth: 'none' } });
    brokers.push(b);
    const serverCn = () =>
      new Promise<string>((resolve, reject) => {
        const s = tlsConnect({ host: '127.0.0.1', port: b.port, ca: ca.cert }, () => {
          resolve(String(s.getPeerCertificate().subject.CN));
          s.destroy();
        });
        s.on('error', reject);
      });
    const held = await connect(b, { tls: await clientMaterial() });
    await held.request('CreateTopics', { topics: [{ name: 'orders', partitions: 1, replicationFactor: 1 }] });
    expect(await serverCn()).toBe('broker-before');
    await copyFile(next.keyFile, keyFile);
    await copyFile(next.certFile, certFile);
    await material.reload();
    expect(material.stats.reloads).toBe(1);
    expect(await serverCn()).toBe('broker-after');
    // The connection opened before the reload was not dropped: it still produces.
    expect(held.closed).toBe(false);
    expect(await produce(held)).toEqual({ code: null, error: null });
    expect(logEnd(b)).toBe(1);
    const text = await b.metrics.registry.metrics();
    expect(text).toMatch(/edgeq_tls_reloads_total\{[^}]*outcome="reloaded"[^}]*\} 1/);
  });
});
