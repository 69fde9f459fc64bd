// Proves, with real processes (an arbiter and three `edgeq broker`s started with --tls-* and --auth-keys through their EDGEQ_* variables), that brokers of a cell replicate to each other over mTLS as broker identities (an acks=all produce with min.insync.replicas=3 is acknowledged and read back), that a client authenticates with an API key over TLS, and that a client without credentials, a plaintext client, and a replica fetch from a tenant are refused with typed errors while nothing is written.
import { writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { buildBatch } from '../../src/log/index.ts';
import { Acks, Connection } from '../../src/protocol/index.ts';
import { FileTlsMaterial, type TlsMaterial } from '../../src/tls/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { TestCa } from '../helpers/test-ca.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

const sha = (k: string) => createHash('sha256').update(k).digest('hex');

let ca: TestCa;
let cell: ProcessCell;
let caOnly: TlsMaterial;
let client: EdgeqClient;

beforeAll(async () => {
  ca = await TestCa.create('edgeq cell CA');
  // One certificate for the three brokers (identity broker-cell: role broker by the prefix rule).
  const cert = await ca.server('broker-cell');
  const keysFile = join(ca.dir, 'keys.json');
  await writeFile(
    keysFile,
    JSON.stringify({
      keys: [{ sha256: sha('k-app'), tenant: 'app', grants: [{ topic: '*', actions: ['read', 'write', 'admin'] }] }],
      certificates: [{ identity: 'broker-*', role: 'broker' }],
    }),
  );
  cell = await new ProcessCell({
    env: { EDGEQ_TLS_CERT: cert.certFile, EDGEQ_TLS_KEY: cert.keyFile, EDGEQ_TLS_CA: ca.caFile, EDGEQ_TLS_CLIENT_AUTH: 'optional', EDGEQ_AUTH_KEYS: keysFile },
  }).start();
  caOnly = await FileTlsMaterial.load({ caFile: ca.caFile }, { watch: false });
  client = createClient({ brokers: cell.addresses(), tls: caOnly, apiKey: 'k-app', metadataMaxAgeMs: 1000 });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await cell?.close();
  caOnly?.close();
  await cleanupTempDirs();
});

async function connectTo(port: number, options: { tls?: TlsMaterial; apiKey?: string }): Promise<Connection> {
  return Connection.connect({ host: '127.0.0.1', port }, { connectTimeoutMs: 5_000, requestTimeoutMs: 5_000, ...options });
}

describe('a cell with TLS and auth on', () => {
  it('replicates between brokers over mTLS and serves an authenticated client', async () => {
    await client.admin().createTopics([{ name: 'orders', partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '3' } }]);
    const producer = client.producer({ acks: 'all', deliveryTimeoutMs: 30_000 });
    // Acknowledged only once all three replicas hold it: the followers fetched over mTLS.
    const [m] = await producer.send('orders', { value: 'replicated' });
    expect(m!.offset).toBe(0);
    await producer.close();
    const [d] = await client.admin().describeTopics(['orders']);
    expect([...d!.partitions[0]!.isr].sort()).toEqual([1, 2, 3]);
  }, 60_000);

  it('refuses a client without credentials, a plaintext client and a tenant replica fetch; nothing is written', async () => {
    const [d] = await client.admin().describeTopics(['orders']);
    const leader = d!.partitions[0]!.leaderId;
    const port = cell.portOf(leader);
    const records = await buildBatch([{ value: Buffer.from('intruder') }]);
    const produce = { acks: Acks.ALL, timeoutMs: 5_000, topics: [{ name: 'orders', partitions: [{ partition: 0, records }] }] };

    const anonymous = await connectTo(port, { tls: caOnly });
    await expect(anonymous.request('Produce', produce)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    anonymous.close();
    await expect(connectTo(port, { tls: caOnly, apiKey: 'k-wrong' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(connectTo(port, {})).rejects.toMatchObject({ code: expect.stringMatching(/CONNECTION_CLOSED|REQUEST_TIMED_OUT/) });

    const tenant = await connectTo(port, { tls: caOnly, apiKey: 'k-app' });
    const fetch = { replicaId: 2, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, topics: [{ name: 'orders', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }] }] };
    await expect(tenant.request('Fetch', fetch)).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // Nothing was written: the log still ends after the one acknowledged record.
    const lo = await tenant.request('ListOffsets', { topics: [{ name: 'orders', partitions: [{ partition: 0, timestamp: -1 }] }] });
    expect(lo.topics[0]!.partitions[0]!.offset).toBe(1);
    tenant.close();
  }, 60_000);
});
