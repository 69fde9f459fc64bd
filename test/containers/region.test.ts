// Proves the container image (deploy/docker/Dockerfile) runs a region: built from the repository, one etcd and 3 brokers and a gateway from the same image, each healthy by the image's own HEALTHCHECK (which probes the role it finds), the gateway producing and reading back a replicated record, every broker ready on its admin /readyz, and `edgeq handoff` (the Kubernetes preStop) moving a broker's leaderships inside its container. Without a container engine it says so and skips, within seconds.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StartedNetwork, StartedTestContainer } from 'testcontainers';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const ETCD_IMAGE = 'quay.io/coreos/etcd:v3.5.17';
const IMAGE = 'edgeq:containers-test';
const BROKERS = [1, 2, 3];

/** Why the suite cannot run here (no engine), or null. */
let skipReason: string | null = null;
const started: StartedTestContainer[] = [];
let network: StartedNetwork | null = null;

beforeAll(async () => {
  const tc = await import('testcontainers');
  try {
    // Rejects within milliseconds when no Docker or Podman socket answers (docs: NOTES-deps).
    await tc.getContainerRuntimeClient();
  } catch (err) {
    skipReason = `no container engine: ${(err as Error).message}`;
    process.stdout.write(`test:containers skipped: ${skipReason}\n`);
  }
});

afterAll(async () => {
  for (const c of started.reverse()) await c.stop({ timeout: 30_000 }).catch(() => undefined);
  await network?.stop().catch(() => undefined);
});

describe('the edgeq image', () => {
  it('runs a region: etcd, 3 brokers and a gateway, healthy, producing and reading', async (ctx) => {
    if (skipReason !== null) ctx.skip();
    const { GenericContainer, Network, Wait } = await import('testcontainers');
    await GenericContainer.fromDockerfile(repo, 'deploy/docker/Dockerfile').build(IMAGE, { deleteOnExit: false });
    // A container definition's with…() calls change it in place: one fresh definition per container.
    const image = () => new GenericContainer(IMAGE);
    network = await new Network().start();
    const etcd = await new GenericContainer(ETCD_IMAGE)
      .withNetwork(network)
      .withNetworkAliases('etcd')
      .withCommand(['etcd', '--name=etcd', '--data-dir=/etcd-data', '--listen-client-urls=http://0.0.0.0:2379', '--advertise-client-urls=http://etcd:2379'])
      .withWaitStrategy(Wait.forHttp('/health', 2379))
      .start();
    started.push(etcd);
    const brokers = await Promise.all(
      BROKERS.map(async (id) => {
        const c = await image()
          .withNetwork(network!)
          .withNetworkAliases(`broker-${id}`)
          .withEnvironment({ EDGEQ_CELL__SIZE: String(BROKERS.length), EDGEQ_ARBITER: 'etcd', EDGEQ_ARBITER_ENDPOINTS: 'etcd:2379', EDGEQ_CELL__ID: 'box' })
          .withCommand(['broker', '--id', String(id), '--host', `broker-${id}`, '--port', '9092', '--admin-port', '9192', '--admin-host', '0.0.0.0', '--data-dir', '/data', '--auth', 'none'])
          .withExposedPorts(9192)
          // The image's HEALTHCHECK (deploy/docker/healthcheck.mjs) finds the broker and probes its admin /healthz.
          .withWaitStrategy(Wait.forHealthCheck())
          .start();
        started.push(c);
        return c;
      }),
    );
    const gateway = await image()
      .withNetwork(network)
      .withCommand(['gateway', '--brokers', BROKERS.map((id) => `broker-${id}:9092`).join(','), '--host', '0.0.0.0', '--port', '8080', '--no-auth', '--region', 'box'])
      .withExposedPorts(8080)
      .withWaitStrategy(Wait.forHealthCheck())
      .start();
    started.push(gateway);
    const gw = `http://${gateway.getHost()}:${gateway.getMappedPort(8080)}`;

    // The gateway is ready once every partition leader answers.
    const deadline = Date.now() + 120_000;
    while ((await fetch(`${gw}/readyz`).then((r) => r.status, () => 0)) !== 200) {
      if (Date.now() > deadline) throw new Error('the gateway was not ready within 120 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const json = { 'content-type': 'application/json' };
    const created = await fetch(`${gw}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'boxed', partitions: 3, replicationFactor: 3 }) });
    expect(created.status).toBe(201);
    const produced = await fetch(`${gw}/v1/topics/boxed/records?acks=all`, { method: 'POST', headers: json, body: JSON.stringify({ records: [{ key: 'k', value: 'in a box' }] }) });
    expect(produced.status).toBe(200);
    const { offsets } = (await produced.json()) as { offsets: { partition: number; offset: number }[] };
    const read = await fetch(`${gw}/v1/topics/boxed/partitions/${offsets[0]!.partition}/records?offset=${offsets[0]!.offset}`);
    expect(((await read.json()) as { records: { value: string }[] }).records[0]!.value).toBe('in a box');

    for (const b of brokers) {
      const r = await fetch(`http://${b.getHost()}:${b.getMappedPort(9192)}/readyz`);
      expect(r.status).toBe(200);
    }
    // The preStop's command, inside a broker's container.
    const handoff = await brokers[0]!.exec(['node', '/app/bin/edgeq.js', 'handoff', '--broker-id', '1', '--wait-ms', '30000'], { env: { EDGEQ_ARBITER: 'etcd', EDGEQ_ARBITER_ENDPOINTS: 'etcd:2379', EDGEQ_CELL__ID: 'box' } });
    expect(handoff.exitCode, handoff.output).toBe(0);
    expect(JSON.parse(handoff.stdout.trim())).toMatchObject({ brokerId: 1, complete: true });
  });
});
