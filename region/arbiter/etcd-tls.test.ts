/** Proves EtcdArbiter over TLS against a real etcd run with `--client-cert-auth`: a client with a certificate of etcd's CA runs a lease and election round; a client without a certificate, with one from another CA, trusting another CA, or speaking plaintext is refused (ARBITER_UNAVAILABLE) and writes nothing; bad TLS options are INVALID_CONFIG. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type EtcdCluster } from '../../test/helpers/etcd.ts';
import { TestCa, type Issued } from '../../test/helpers/test-ca.ts';
import { cleanupTempDirs } from '../../test/helpers/tmp.ts';
import { EtcdArbiter, type EtcdTlsOptions } from './etcd-arbiter.ts';

/** A refused call fails within this deadline (the handshake never completes): 2 s keeps the file quick on a loaded machine. */
const REFUSED_TIMEOUT_MS = 2_000;

let etcd: EtcdCluster;
let ca: TestCa;
let otherCa: TestCa;
let client: Issued;
let foreign: Issued;
beforeAll(async () => {
  ca = await TestCa.create('etcd CA');
  otherCa = await TestCa.create('another CA');
  const server = await ca.server('etcd');
  client = await ca.client('edgeq-broker-1');
  foreign = await otherCa.client('edgeq-broker-1');
  etcd = await startEtcd({ tls: { certFile: server.certFile, keyFile: server.keyFile, caFile: ca.caFile } });
});
afterAll(async () => {
  await etcd?.stop();
  await cleanupTempDirs();
});

const tlsOf = (trust: TestCa, issued?: Issued): EtcdTlsOptions => ({ ca: Buffer.from(trust.cert), ...(issued ? { cert: Buffer.from(issued.cert), key: Buffer.from(issued.key) } : {}) });

describe('EtcdArbiter over TLS', () => {
  it('a client with a certificate of etcd\'s CA runs a lease and an election round over https', async () => {
    expect(etcd.endpoints[0]).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const a = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'tls-ok/', tls: tlsOf(ca, client) });
    try {
      const lease = await a.grantLease(2_000);
      // Campaign: the leader key is written only if absent (mod revision 0), under the lease.
      const won = await a.compareAndSet('leader', Buffer.from('broker-1'), { expectedModRevision: 0, leaseId: lease.id });
      expect(won.ok).toBe(true);
      const lost = await a.compareAndSet('leader', Buffer.from('broker-2'), { expectedModRevision: 0 });
      expect(lost.ok).toBe(false);
      expect(lost.current?.value.toString()).toBe('broker-1');
      expect(await lease.keepAliveOnce()).toBe(2_000);
      // Resigning: the key goes with its lease.
      await lease.revoke();
      expect(await a.get('leader')).toBeNull();
    } finally {
      await a.close();
    }
  });

  const refused: [string, () => EtcdTlsOptions | undefined, string, RegExp][] = [
    ['without a client certificate', () => tlsOf(ca), 'https', /alert bad certificate/],
    ['with a certificate from another CA', () => tlsOf(ca, foreign), 'https', /alert bad certificate/],
    ['trusting another CA (etcd\'s certificate does not verify)', () => tlsOf(otherCa, client), 'https', /unable to verify/],
    ['speaking plaintext to the TLS port', () => undefined, 'http', /No connection established/],
  ];
  it.each(refused)('a client %s is refused and writes nothing', async (_name, tls, scheme, reason) => {
    const options = tls();
    const hosts = etcd.endpoints.map((e) => e.replace(/^https/, scheme));
    const bad = new EtcdArbiter({ hosts, namespace: 'tls-refused/', requestTimeoutMs: REFUSED_TIMEOUT_MS, ...(options ? { tls: options } : {}) });
    const good = new EtcdArbiter({ hosts: etcd.endpoints, namespace: 'tls-refused/', tls: tlsOf(ca, client) });
    try {
      const err = await bad.put('intruder', Buffer.from('x')).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
      // The reason is the handshake's: etcd's alert, or this client's own check of etcd's certificate.
      expect((err as Error).message).toMatch(reason);
      await expect(bad.grantLease(2_000)).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
      await expect(bad.get('intruder')).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
      expect(await good.get('intruder')).toBeNull();
    } finally {
      await bad.close();
      await good.close();
    }
  });

  it('refuses TLS options that do not fit the endpoints with INVALID_CONFIG', () => {
    const http = etcd.endpoints.map((e) => e.replace(/^https/, 'http'));
    expect(() => new EtcdArbiter({ hosts: http, tls: tlsOf(ca, client) })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
    expect(() => new EtcdArbiter({ hosts: etcd.endpoints })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
    expect(() => new EtcdArbiter({ hosts: etcd.endpoints, tls: { ca: Buffer.from(ca.cert), cert: Buffer.from(client.cert) } })).toThrow(/needs its key/);
    expect(() => new EtcdArbiter({ hosts: [...etcd.endpoints, ...http], tls: tlsOf(ca, client) })).toThrow(/every endpoint/);
  });
});
