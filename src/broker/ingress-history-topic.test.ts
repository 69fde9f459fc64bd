// Proves `__ingress_history` is the gateways' alone: user clients get INVALID_TOPIC creating, producing to and deleting it; the gateway's client id creates it (local, internal) and produces to it.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Broker } from './index.ts';
import { buildBatch } from '../log/index.ts';
import { Acks, errorOf, GATEWAY_CLIENT_ID, type WireError } from '../protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../testing/index.ts';
import { INGRESS_HISTORY_TOPIC } from './topic-name.ts';

afterAll(cleanupTempDirs);
const code = (w: WireError | null | undefined) => errorOf(w)?.code ?? null;
const brokers: Broker[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function as(b: Broker, clientId: string): Promise<RawClient> {
  const c = await RawClient.connect(b.port);
  clients.push(c);
  await c.call('ApiVersions', { clientId });
  return c;
}

const create = (c: RawClient, config: Record<string, string> = {}) =>
  c.call('CreateTopics', { topics: [{ name: INGRESS_HISTORY_TOPIC, partitions: 1, replicationFactor: 1, config }] }).then((r) => code(r.topics[0]!.error));
const produce = async (c: RawClient) =>
  c
    .call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: INGRESS_HISTORY_TOPIC, partitions: [{ partition: 0, records: await buildBatch([{ value: 'step' }]) }] }] })
    .then((r) => code(r.topics[0]!.partitions[0]!.error), (e: { code: string }) => e.code);

describe('__ingress_history', () => {
  it('only the gateway client id creates and writes it; no one deletes it', async () => {
    const b = await Broker.start({ dataDir: await tempDir(), port: 0 });
    brokers.push(b);
    const user = await as(b, 'tenant-a');
    const pretender = await as(b, '__other');
    const gateway = await as(b, GATEWAY_CLIENT_ID);
    expect(await create(user)).toBe('INVALID_TOPIC');
    expect(await create(pretender)).toBe('INVALID_TOPIC');
    // Local only: a global history would be exchanged into every region.
    expect(await create(gateway, { scope: 'global' })).toBe('INVALID_CONFIG');
    expect(b.topics.get(INGRESS_HISTORY_TOPIC)).toBeUndefined();
    expect(await create(gateway, { 'retention.ms': '600000' })).toBeNull();
    const d = await gateway.call('DescribeConfigs', { names: [INGRESS_HISTORY_TOPIC] });
    expect(d.topics[0]).toMatchObject({ internal: true, partitions: 1 });
    expect(d.topics[0]!.config).toMatchObject({ 'retention.ms': '600000', scope: 'local' });
    // Hidden from users' listings like the other internal topics.
    expect((await user.call('Metadata', { allTopics: true })).topics.map((t) => t.name)).not.toContain(INGRESS_HISTORY_TOPIC);

    expect(await produce(user)).toBe('INVALID_TOPIC');
    expect(await produce(pretender)).toBe('INVALID_TOPIC');
    expect(b.topics.partition(INGRESS_HISTORY_TOPIC, 0).logEndOffset).toBe(0);
    expect(await produce(gateway)).toBeNull();
    expect(b.topics.partition(INGRESS_HISTORY_TOPIC, 0).logEndOffset).toBe(1);

    for (const c of [user, gateway]) {
      const del = await c.call('DeleteTopics', { names: [INGRESS_HISTORY_TOPIC] });
      expect(code(del.topics[0]!.error)).toBe('INVALID_TOPIC');
    }
    expect(b.topics.get(INGRESS_HISTORY_TOPIC)).toBeDefined();
  });
});
