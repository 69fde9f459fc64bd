// Proves the TLS material: mTLS refuses clients without a certificate, from another CA, with an expired one; TLS 1.2 only when asked; a changed file switches the certificate for new handshakes without dropping open connections; bad new files keep the old material and are counted.
import { copyFile, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCa, type Issued } from '../../test/helpers/test-ca.ts';
import { certificateIdentity, FileTlsMaterial, followReloads, peerIdentity, tlsFilesFromFlags, tlsServerOptions } from './index.ts';

let ca: TestCa;
let other: TestCa;
let serverCert: Issued;
let alice: Issued;

beforeAll(async () => {
  ca = await TestCa.create('edgeq test CA');
  other = await TestCa.create('another CA');
  serverCert = await ca.server('broker-1');
  alice = await ca.client('alice');
});

/** An echo server that answers each line with the client's verified identity. */
async function echoServer(material: FileTlsMaterial, clientAuth: 'required' | 'optional'): Promise<{ server: Server; port: number }> {
  const server = createServer(tlsServerOptions(material, clientAuth), (s) => {
    s.on('data', () => s.write(`${peerIdentity(s) ?? '-'}\n`));
    s.on('error', () => undefined);
  });
  followReloads(server, material);
  const port = await new Promise<number>((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
  return { server, port };
}

/** Connects, sends a line and resolves with the answer; rejects with the error a refused handshake gives. */
function ask(port: number, opts: Record<string, unknown>, socketOut?: { s?: TLSSocket }): Promise<{ answer: string; serverCn: string }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca: ca.cert, ...opts });
    if (socketOut) socketOut.s = s;
    s.once('error', reject);
    s.once('close', () => reject(new Error('closed before an answer')));
    s.once('secureConnect', () => s.write('who\n'));
    s.once('data', (d) => resolve({ answer: d.toString().trim(), serverCn: String(s.getPeerCertificate().subject.CN) }));
  });
}

describe('FileTlsMaterial with mTLS', () => {
  let material: FileTlsMaterial;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    material = await FileTlsMaterial.load({ certFile: serverCert.certFile, keyFile: serverCert.keyFile, caFile: ca.caFile }, { pollIntervalMs: 0 });
    ({ server, port } = await echoServer(material, 'required'));
  });
  afterAll(() => {
    server.close();
    material.close();
  });

  it('lets a client with a certificate of the CA in, with its identity', async () => {
    const r = await ask(port, { cert: alice.cert, key: alice.key });
    expect(r).toEqual({ answer: 'alice', serverCn: 'broker-1' });
  });

  it('refuses a client without a certificate, one from another CA, an expired one, and plaintext', async () => {
    await expect(ask(port, {})).rejects.toThrow(/certificate required|closed before|ECONNRESET|socket hang up/i);
    const foreign = await other.client('mallory');
    await expect(ask(port, { cert: foreign.cert, key: foreign.key })).rejects.toThrow(/unknown ca|closed before|ECONNRESET|alert/i);
    const expired = await ca.client('old', { expired: true });
    await expect(ask(port, { cert: expired.cert, key: expired.key })).rejects.toThrow(/expired|closed before|ECONNRESET|alert/i);
    // Plaintext on the TLS port: the server answers no line, only a TLS alert and a close.
    const { createConnection } = await import('node:net');
    const plain = await new Promise<string>((resolve) => {
      // More than a TLS record header (5 bytes), so the server has a record to refuse; a bound
      // of 5 s on a server that would wait for more (it answers within milliseconds).
      const s = createConnection({ host: '127.0.0.1', port }, () => s.write('who are you?\n'));
      s.setTimeout(5_000, () => s.destroy());
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(got));
    });
    expect(plain).not.toContain('who');
    expect(plain).not.toContain('-\n');
  });

  it('refuses TLS 1.2 by default', async () => {
    await expect(ask(port, { cert: alice.cert, key: alice.key, maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol|version|alert/i);
  });
});

describe('reload', () => {
  it('switches the certificate for new handshakes, keeps open connections, and keeps the old material when the new files are bad', async () => {
    const first = await ca.server('before');
    const next = await ca.server('after');
    // The live files the server reads; the issued ones are copied over them.
    const certFile = `${ca.dir}/live.crt.pem`;
    const keyFile = `${ca.dir}/live.key.pem`;
    await copyFile(first.certFile, certFile);
    await copyFile(first.keyFile, keyFile);
    const outcomes: string[] = [];
    // Poll at 100 ms beside fs.watch; a 50 ms debounce.
    const material = await FileTlsMaterial.load({ certFile, keyFile, caFile: ca.caFile }, { pollIntervalMs: 100, debounceMs: 50, onReload: (o) => outcomes.push(o) });
    const { server, port } = await echoServer(material, 'optional');
    try {
      const held: { s?: TLSSocket } = {};
      expect((await ask(port, {}, held)).serverCn).toBe('before');
      const changed = new Promise<void>((r) => material.onChange(() => r()));
      await writeFile(keyFile, next.key);
      await writeFile(certFile, next.cert);
      await changed;
      expect(material.stats.reloads).toBe(1);
      expect((await ask(port, {})).serverCn).toBe('after');
      // The connection opened before the reload still answers.
      const again = await new Promise<string>((resolve) => {
        held.s!.once('data', (d) => resolve(d.toString().trim()));
        held.s!.write('again\n');
      });
      expect(again).toBe('-');
      expect(held.s!.destroyed).toBe(false);
      held.s!.destroy();

      // A key that does not match the certificate: refused, counted, the old certificate stays.
      await writeFile(keyFile, first.key);
      await material.reload();
      expect(material.stats.failures).toBeGreaterThanOrEqual(1);
      expect(material.stats.lastError).toMatch(/does not belong/);
      expect((await ask(port, {})).serverCn).toBe('after');
      expect(outcomes).toContain('reloaded');
      expect(outcomes).toContain('failed');
    } finally {
      server.close();
      material.close();
    }
  });

  it('refuses to start with an expired certificate or a missing file (INVALID_CONFIG naming the file)', async () => {
    const expired = await ca.client('gone', { expired: true });
    await expect(FileTlsMaterial.load({ certFile: expired.certFile, keyFile: expired.keyFile }, { watch: false })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('expired') });
    await expect(FileTlsMaterial.load({ certFile: '/nope.pem', keyFile: serverCert.keyFile }, { watch: false })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('/nope.pem') });
  });
});

describe('tlsFilesFromFlags', () => {
  it('is null without flags, needs cert and key together, and a server needs a certificate', () => {
    expect(tlsFilesFromFlags({}, { role: 'server' })).toBeNull();
    expect(() => tlsFilesFromFlags({ tlsCert: 'a' }, { role: 'server' })).toThrow(/--tls-key is needed/);
    expect(() => tlsFilesFromFlags({ tlsCa: 'a' }, { role: 'server' })).toThrow(/--tls-cert/);
    expect(tlsFilesFromFlags({ tlsCa: 'a' }, { role: 'client' })).toEqual({ caFile: 'a', minVersion: 'TLSv1.3' });
    expect(tlsFilesFromFlags({ tlsCert: 'c', tlsKey: 'k', tlsMinVersion: '1.2' }, { role: 'server' })).toEqual({ certFile: 'c', keyFile: 'k', minVersion: 'TLSv1.2' });
    expect(() => tlsFilesFromFlags({ tlsCert: 'c', tlsKey: 'k', tlsMinVersion: '1.1' }, { role: 'server' })).toThrow(/not 1.2 or 1.3/);
  });
});

describe('certificateIdentity', () => {
  it('takes the first URI SAN, else the CN; DNS and IP SANs are where a server is, not who', () => {
    expect(certificateIdentity({ subject: { CN: 'broker-1' } as never, subjectaltname: 'DNS:localhost, IP Address:127.0.0.1' })).toBe('broker-1');
    expect(certificateIdentity({ subject: { CN: 'x' } as never, subjectaltname: 'DNS:a, URI:spiffe://edgeq/us-east/broker-2' })).toBe('spiffe://edgeq/us-east/broker-2');
    expect(certificateIdentity({ subject: {} as never, subjectaltname: 'DNS:a' })).toBeNull();
    expect(peerIdentity({ authorized: false, getPeerCertificate: () => ({ subject: { CN: 'forged' } }) as never })).toBeNull();
  });
});
