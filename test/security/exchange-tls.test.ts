// Proves the exchange's access to brokers (gossip/exchange ClusterCells) passes TLS and credentials through: with the gateway's certificate it reaches another region's broker (through the link's address translation, the certificate still checked) and its own region's broker, both serving mTLS with auth on, as an internal identity; without them the other region's broker refuses it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterCells } from '../../gossip/exchange/index.ts';
import { Broker, type BinaryKeysFile } from '../../src/broker/index.ts';
import { silentLogger } from '../../src/core/index.ts';
import { cleanupTempDirs, tempDir } from '../../src/testing/index.ts';
import { FileTlsMaterial, type TlsMaterial } from '../../src/tls/index.ts';
import { TestCa } from '../helpers/test-ca.ts';

const KEYS: BinaryKeysFile = { keys: [], certificates: [{ identity: 'edgeq-gateway.*', role: 'internal' }] };

let ca: TestCa;
const materials: TlsMaterial[] = [];
const brokers: Broker[] = [];
const cells: ClusterCells[] = [];

async function tlsBroker(region: string): Promise<Broker> {
  const cert = await ca.server(`edgeq-broker.${region}`);
  const material = await FileTlsMaterial.load({ certFile: cert.certFile, keyFile: cert.keyFile, caFile: ca.caFile }, { watch: false });
  materials.push(material);
  const b = await Broker.start({ dataDir: await tempDir(), port: 0, region, tls: { material, clientAuth: 'required' }, auth: { keys: KEYS } });
  brokers.push(b);
  return b;
}

let usEast: Broker;
let euWest: Broker;
let gateway: TlsMaterial;

beforeAll(async () => {
  ca = await TestCa.create('edgeq regions CA');
  usEast = await tlsBroker('us-east');
  euWest = await tlsBroker('eu-west');
  await euWest.topics.create({ name: 'g', partitions: 1, config: { scope: 'global' } });
  const gw = await ca.client('edgeq-gateway.eu-west');
  gateway = await FileTlsMaterial.load({ caFile: ca.caFile, certFile: gw.certFile, keyFile: gw.keyFile }, { watch: false });
  materials.push(gateway);
});

afterAll(async () => {
  await Promise.all(cells.map((c) => c.close()));
  await Promise.all(brokers.map((b) => b.close()));
  for (const m of materials) m.close();
  await cleanupTempDirs();
});

function cellsFor(security?: { tls: TlsMaterial }): ClusterCells {
  const c = new ClusterCells({
    region: 'eu-west',
    localBrokers: [euWest.address],
    // Advertised by name; the link's end is the loopback address (what the dev deployment's proxies do).
    brokersOf: () => [`localhost:${usEast.port}`],
    translate: (advertised) => advertised.replace(/^localhost:/, '127.0.0.1:'),
    logger: silentLogger,
    requestTimeoutMs: 3_000,
    appendTimeoutMs: 3_000,
    ...(security ? { security } : {}),
  });
  cells.push(c);
  return c;
}

describe('exchange over mTLS', () => {
  it('reaches the other region and its own over TLS as the gateway identity', async () => {
    const c = cellsFor({ tls: gateway });
    await c.probe('us-east', AbortSignal.timeout(10_000));
    // Local: an origin fetch of the region's own broker (authenticated: Fetch needs a principal).
    expect(await c.localCursor('g', 0, 'us-east', AbortSignal.timeout(10_000))).toBe(-1);
  });

  it('is refused by the other region without the certificate', async () => {
    // TLS trusting the CA, but no certificate to present: the mTLS handshake is refused.
    const caOnly = await FileTlsMaterial.load({ caFile: ca.caFile }, { watch: false });
    materials.push(caOnly);
    const c = cellsFor({ tls: caOnly });
    // Bound: a refused handshake fails within milliseconds; the signal is the backstop.
    await expect(c.probe('us-east', AbortSignal.timeout(5_000))).rejects.toBeDefined();
  });
});
