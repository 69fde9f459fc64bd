/** Proves the broker's etcd TLS wiring with real processes: `edgeq broker --arbiter etcd` given EDGEQ_ETCD_CA/CERT/KEY (the --etcd-* flags' variables) joins its cell through an etcd that requires client certificates (its keys are there, read back over TLS), and refuses --etcd-* with another arbiter kind, or a certificate without its key, at start-up with INVALID_CONFIG. */
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { EtcdArbiter } from '../../region/arbiter/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { runEdgeq } from '../helpers/cli.ts';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.ts';
import { TestCa } from '../helpers/test-ca.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

let etcd: EtcdCluster | undefined;
let cell: ProcessCell | undefined;
afterAll(async () => {
  await cell?.close();
  await etcd?.stop();
  await cleanupTempDirs();
});

describe('edgeq broker with etcd over TLS', () => {
  it('joins its cell through an etcd that requires client certificates', async () => {
    const ca = await TestCa.create('etcd CA');
    const server = await ca.server('etcd');
    const client = await ca.client('edgeq-broker');
    etcd = await startEtcd({ tls: { certFile: server.certFile, keyFile: server.keyFile, caFile: ca.caFile } });
    const endpoint = etcd.endpoints[0]!.replace(/^https:\/\//, '');
    cell = await new ProcessCell({ size: 1, etcdEndpoints: [endpoint], env: { EDGEQ_ETCD_CA: ca.caFile, EDGEQ_ETCD_CERT: client.certFile, EDGEQ_ETCD_KEY: client.keyFile } }).start();
    const reader = new EtcdArbiter({ hosts: etcd.endpoints, tls: { ca: Buffer.from(ca.cert), cert: Buffer.from(client.cert), key: Buffer.from(client.key) } });
    try {
      // The broker registers in its cell through etcd: keys appear (written over TLS with its certificate).
      const keys = await waitFor('the broker\'s cell keys in etcd', 30_000, async () => {
        const kvs = await reader.getPrefix('');
        return kvs.length > 0 ? kvs.map((kv) => kv.key) : undefined;
      }, 200);
      expect(keys.some((k) => k.startsWith('/edgeq/test/'))).toBe(true);
    } finally {
      await reader.close();
    }
  }, 90_000);

  it('refuses --etcd-* with another arbiter, and a certificate without its key, with INVALID_CONFIG', async () => {
    const ca = await TestCa.create('etcd CA');
    const client = await ca.client('edgeq-broker');
    const cases: [string[], RegExp][] = [
      [['--arbiter', 'embedded', '--arbiter-endpoints', '127.0.0.1:1', '--etcd-ca', ca.caFile], /--etcd-ca\/--etcd-cert\/--etcd-key are for --arbiter etcd/],
      [['--arbiter', 'etcd', '--arbiter-endpoints', '127.0.0.1:1', '--etcd-ca', ca.caFile, '--etcd-cert', client.certFile], /--etcd-key is needed with --etcd-cert/],
      [['--arbiter', 'etcd', '--arbiter-endpoints', '127.0.0.1:1', '--etcd-cert', client.certFile, '--etcd-key', client.keyFile], /need --etcd-ca/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await runEdgeq(['broker', '--data-dir', await tempDir('edgeq-etcdtls-'), '--port', '0', '--auth', 'none', ...args], { env: { EDGEQ_LOG_LEVEL: 'warn' } });
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toMatch(/INVALID_CONFIG/);
      expect(stderr, args.join(' ')).toMatch(message);
    }
  }, 90_000);
});
